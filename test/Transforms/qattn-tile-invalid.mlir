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

// -----

// Static decode has one GPU path, the tile layer: a format its GPU lowering
// lacks is an error naming it, not the warp kernel (which tile-layer=none
// still asks for: qattn-tile.mlir).
func.func @static_decode_group1(%q: tensor<1x8x1x64xf16>, %kp: tensor<1x256x64xi8>, %ks: tensor<1x2x4xf32>, %ks2: tensor<1x2x256x64xi8>, %kz2: tensor<1x2x256x64xi8>) -> tensor<1x8x1x64xf16> {
  // expected-error@+1 {{is decode (at most 16 queries a sequence), whose GPU kernels are the tile layer's, which has no GPU lowering yet for stage-2 groups of 1 key (2, 4, 8 and multiples of 16 only)}}
  %o = qattn.attention %q keys(%kp, %ks, %ks2, %kz2) values(%kp, %ks, %ks2, %kz2)
      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4], group = 1>, v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [4], group = 1>}
      : (tensor<1x8x1x64xf16>, tensor<1x256x64xi8>, tensor<1x2x4xf32>, tensor<1x2x256x64xi8>, tensor<1x2x256x64xi8>, tensor<1x256x64xi8>, tensor<1x2x4xf32>, tensor<1x2x256x64xi8>, tensor<1x2x256x64xi8>) -> tensor<1x8x1x64xf16>
  return %o : tensor<1x8x1x64xf16>
}

// -----

func.func @static_decode_d288(%q: tensor<1x8x2x288xf16>, %k: tensor<1x2x100x288xi8>, %ks: tensor<1x2x2xf32>) -> tensor<1x8x2x288xf16> {
  // expected-error@+1 {{is decode (at most 16 queries a sequence), whose GPU kernels are the tile layer's, which has no GPU lowering yet for head dim 288 (multiples of 32 from 32 to 256, and 80, only)}}
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) {k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>, causal}
      : (tensor<1x8x2x288xf16>, tensor<1x2x100x288xi8>, tensor<1x2x2xf32>, tensor<1x2x100x288xi8>, tensor<1x2x2xf32>) -> tensor<1x8x2x288xf16>
  return %o : tensor<1x8x2x288xf16>
}

// -----

func.func @static_decode_group24(%q: tensor<1x8x1x64xf16>, %kp: tensor<1x96x64xi8>, %ks: tensor<1x2x2xf32>, %ks2: tensor<1x2x4x64xi8>, %kz2: tensor<1x2x4x64xi8>) -> tensor<1x8x1x64xf16> {
  // expected-error@+1 {{is decode (at most 16 queries a sequence), whose GPU kernels are the tile layer's, which cannot express it yet: expected stage-2 groups that divide or are multiples of 16 keys}}
  %o = qattn.attention %q keys(%kp, %ks, %ks2, %kz2) values(%kp, %ks, %ks2, %kz2)
      {k_stage1 = #qattn.stage1<block = 48>, k_stage2 = #qattn.stage2<bits = [4], group = 24>, v_stage1 = #qattn.stage1<block = 48>, v_stage2 = #qattn.stage2<bits = [4], group = 24>}
      : (tensor<1x8x1x64xf16>, tensor<1x96x64xi8>, tensor<1x2x2xf32>, tensor<1x2x4x64xi8>, tensor<1x2x4x64xi8>, tensor<1x96x64xi8>, tensor<1x2x2xf32>, tensor<1x2x4x64xi8>, tensor<1x2x4x64xi8>) -> tensor<1x8x1x64xf16>
  return %o : tensor<1x8x1x64xf16>
}
