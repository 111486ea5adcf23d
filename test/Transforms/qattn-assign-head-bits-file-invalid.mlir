// RUN: qattn-opt %s -split-input-file --qattn-assign-head-bits="stats-file=%S/Inputs/head-stats.json" -verify-diagnostics

func.func @no_entry(%k8: tensor<1x2x16x64xi8>) -> tensor<1x2x1x64xi8> {
  // expected-error@+1 {{has no entry "layer9.k" in}}
  %p, %s, %z = qattn.progressive_quantize %k8 {scheme = #qattn.stage2<bits = [4], group = 16>, qattn.head_stats = "layer9.k"}
      : tensor<1x2x16x64xi8> -> tensor<1x16x64xi8>, tensor<1x2x1x64xi8>, tensor<1x2x1x64xi8>
  return %s : tensor<1x2x1x64xi8>
}

// -----

func.func @short(%k8: tensor<1x2x16x64xi8>) -> tensor<1x2x1x64xi8> {
  // expected-error@+1 {{expected 2 gaps and gap_stds (one per head), got 1 and 1}}
  %p, %s, %z = qattn.progressive_quantize %k8 {scheme = #qattn.stage2<bits = [4], group = 16>, qattn.head_stats = "short"}
      : tensor<1x2x16x64xi8> -> tensor<1x16x64xi8>, tensor<1x2x1x64xi8>, tensor<1x2x1x64xi8>
  return %s : tensor<1x2x1x64xi8>
}

// -----

func.func @words(%k8: tensor<1x2x16x64xi8>) -> tensor<1x2x1x64xi8> {
  // expected-error@+1 {{expected numbers in "gaps" of}}
  %p, %s, %z = qattn.progressive_quantize %k8 {scheme = #qattn.stage2<bits = [4], group = 16>, qattn.head_stats = "words"}
      : tensor<1x2x16x64xi8> -> tensor<1x16x64xi8>, tensor<1x2x1x64xi8>, tensor<1x2x1x64xi8>
  return %s : tensor<1x2x1x64xi8>
}
