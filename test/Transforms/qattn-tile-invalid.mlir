// RUN: qattn-opt %s -split-input-file -verify-diagnostics --qattn-tile

// A dynamic batch (once a division by zero in the split heuristic).
func.func @dynamic_batch(%q: tensor<?x8x1x64xf16>, %k: tensor<?x2x128x64xi8>, %ks: tensor<?x2x2xf32>) -> tensor<?x8x1x64xf16> {
  // expected-error@+1 {{with per-sequence lengths, a page table or dynamic sizes has no GPU kernel yet (the CPU reference lowers it)}}
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) {k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>}
      : (tensor<?x8x1x64xf16>, tensor<?x2x128x64xi8>, tensor<?x2x2xf32>, tensor<?x2x128x64xi8>, tensor<?x2x2xf32>) -> tensor<?x8x1x64xf16>
  return %o : tensor<?x8x1x64xf16>
}

// -----

func.func @lengths(%q: tensor<2x8x1x64xf16>, %k: tensor<2x2x128x64xi8>, %ks: tensor<2x2x2xf32>, %l: tensor<2xi32>) -> tensor<2x8x1x64xf16> {
  // expected-error@+1 {{has no GPU kernel yet}}
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) lengths(%l) {k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>}
      : (tensor<2x8x1x64xf16>, tensor<2x2x128x64xi8>, tensor<2x2x2xf32>, tensor<2x2x128x64xi8>, tensor<2x2x2xf32>, tensor<2xi32>) -> tensor<2x8x1x64xf16>
  return %o : tensor<2x8x1x64xf16>
}

// -----

// An empty batch (once a division by zero in the split heuristic).
func.func @empty_batch(%q: tensor<0x8x1x64xf16>, %k: tensor<0x2x128x64xi8>, %ks: tensor<0x2x2xf32>) -> tensor<0x8x1x64xf16> {
  // expected-error@+1 {{expected a batch of at least 1 for the GPU kernels, got 0}}
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) {k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>}
      : (tensor<0x8x1x64xf16>, tensor<0x2x128x64xi8>, tensor<0x2x2xf32>, tensor<0x2x128x64xi8>, tensor<0x2x2xf32>) -> tensor<0x8x1x64xf16>
  return %o : tensor<0x8x1x64xf16>
}
