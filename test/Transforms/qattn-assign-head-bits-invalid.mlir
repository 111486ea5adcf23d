// RUN: qattn-opt %s -split-input-file --qattn-assign-head-bits -verify-diagnostics

func.func @wrong_count(%k8: tensor<1x2x16x64xi8>) -> tensor<1x2x1x64xi8> {
  // expected-error@+1 {{expected 2 gaps and gap_stds (one per head), got 3 and 2}}
  %p, %s, %z = qattn.progressive_quantize %k8 {scheme = #qattn.stage2<bits = [4], group = 16>,
      qattn.head_stats = {gaps = array<f64: 1.0, 2.0, 3.0>, gap_stds = array<f64: 1.0, 2.0>}}
      : tensor<1x2x16x64xi8> -> tensor<1x16x64xi8>, tensor<1x2x1x64xi8>, tensor<1x2x1x64xi8>
  return %s : tensor<1x2x1x64xi8>
}

// -----

func.func @malformed(%k8: tensor<1x2x16x64xi8>) -> tensor<1x2x1x64xi8> {
  // expected-error@+1 {{expected qattn.head_stats = {gaps = array<f64: ...>, gap_stds = array<f64: ...>}}}
  %p, %s, %z = qattn.progressive_quantize %k8 {scheme = #qattn.stage2<bits = [4], group = 16>,
      qattn.head_stats = {gaps = array<f64: 1.0, 2.0>}}
      : tensor<1x2x16x64xi8> -> tensor<1x16x64xi8>, tensor<1x2x1x64xi8>, tensor<1x2x1x64xi8>
  return %s : tensor<1x2x1x64xi8>
}

// -----

func.func @escaping_codes(%k8: tensor<1x2x16x64xi8>) -> tensor<1x16x64xi8> {
  %p, %s, %z = qattn.progressive_quantize %k8 {scheme = #qattn.stage2<bits = [4], group = 16>,
      qattn.head_stats = {gaps = array<f64: 1.0, 2.0>, gap_stds = array<f64: 1.0, 2.0>}}
      : tensor<1x2x16x64xi8> -> tensor<1x16x64xi8>, tensor<1x2x1x64xi8>, tensor<1x2x1x64xi8>
  // expected-error@+1 {{uses codes whose layout qattn-assign-head-bits changes}}
  return %p : tensor<1x16x64xi8>
}
