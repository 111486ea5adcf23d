// RUN: qattn-opt %s -split-input-file -verify-diagnostics --qattn-tile --qattn-convert-to-gpu
// What the tile layer's GPU lowering does not take yet is a diagnostic on the attention, naming it.

func.func @d112(%q: tensor<?x8x1x112xf16>, %k: tensor<?x2x64x112xi8>, %ks: tensor<?x2x1xf32>, %lens: tensor<?xi32>) -> tensor<?x8x1x112xf16> {
  // expected-error@+1 {{has no GPU lowering yet for head dim 112 (multiples of 32 from 32 to 256, and 80, only)}}
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) lengths(%lens)
      {k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>}
      : (tensor<?x8x1x112xf16>, tensor<?x2x64x112xi8>, tensor<?x2x1xf32>, tensor<?x2x64x112xi8>, tensor<?x2x1xf32>, tensor<?xi32>) -> tensor<?x8x1x112xf16>
  return %o : tensor<?x8x1x112xf16>
}

// -----

// Head dims 80 and 96's lowering has not run on the H200: refused unless
// qattn-tile asks for it (unverified-gpu-lowerings).
func.func @d96(%q: tensor<?x8x1x96xf16>, %k: tensor<?x2x64x96xi8>, %ks: tensor<?x2x1xf32>, %lens: tensor<?xi32>) -> tensor<?x8x1x96xf16> {
  // expected-error@+1 {{has no GPU lowering yet for head dim 96 (lowered, but not yet run on the H200 matrix: qattn-tile unverified-gpu-lowerings=true takes it)}}
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) lengths(%lens)
      {k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>}
      : (tensor<?x8x1x96xf16>, tensor<?x2x64x96xi8>, tensor<?x2x1xf32>, tensor<?x2x64x96xi8>, tensor<?x2x1xf32>, tensor<?xi32>) -> tensor<?x8x1x96xf16>
  return %o : tensor<?x8x1x96xf16>
}
