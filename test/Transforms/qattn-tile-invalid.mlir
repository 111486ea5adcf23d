// RUN: qattn-opt %s -split-input-file -verify-diagnostics --qattn-tile

// A stage-2 group that neither divides nor is a multiple of the 16-key tile.
func.func @group24(%q: tensor<?x8x1x64xf16>, %kp: tensor<?x?x64xi8>, %ks: tensor<?x2x?xf32>, %ks2: tensor<?x2x?x64xi8>, %l: tensor<?xi32>) -> tensor<?x8x1x64xf16> {
  // expected-error@+1 {{with per-sequence lengths, a page table or dynamic sizes needs the tile layer, which cannot express it yet: expected stage-2 groups that divide or are multiples of 16 keys}}
  %o = qattn.attention %q keys(%kp, %ks, %ks2, %ks2) values(%kp, %ks, %ks2, %ks2) lengths(%l)
      {k_stage1 = #qattn.stage1<block = 48>, k_stage2 = #qattn.stage2<bits = [4], group = 24>, v_stage1 = #qattn.stage1<block = 48>, v_stage2 = #qattn.stage2<bits = [4], group = 24>}
      : (tensor<?x8x1x64xf16>, tensor<?x?x64xi8>, tensor<?x2x?xf32>, tensor<?x2x?x64xi8>, tensor<?x2x?x64xi8>, tensor<?x?x64xi8>, tensor<?x2x?xf32>, tensor<?x2x?x64xi8>, tensor<?x2x?x64xi8>, tensor<?xi32>) -> tensor<?x8x1x64xf16>
  return %o : tensor<?x8x1x64xf16>
}

// -----

// An empty batch (once a division by zero in the split heuristic).
func.func @empty_batch(%q: tensor<0x8x1x64xf16>, %k: tensor<0x2x128x64xi8>, %ks: tensor<0x2x2xf32>) -> tensor<0x8x1x64xf16> {
  // expected-error@+1 {{expected a batch of at least 1 for the GPU kernels, got 0}}
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) {k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>}
      : (tensor<0x8x1x64xf16>, tensor<0x2x128x64xi8>, tensor<0x2x2xf32>, tensor<0x2x128x64xi8>, tensor<0x2x2xf32>) -> tensor<0x8x1x64xf16>
  return %o : tensor<0x8x1x64xf16>
}
