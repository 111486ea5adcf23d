// RUN: qattn-opt %s -split-input-file -verify-diagnostics --qattn-tile --qattn-convert-to-gpu
// What the tile layer's GPU lowering does not take yet is a diagnostic on the attention, naming it.

func.func @f(%q: tensor<?x8x1x96xf16>, %k: tensor<?x2x64x96xi8>, %ks: tensor<?x2x1xf32>, %lens: tensor<?xi32>) -> tensor<?x8x1x96xf16> {
  // expected-error@+1 {{has no GPU lowering yet for head dim 96 (64 and 128 only)}}
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) lengths(%lens)
      {k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>}
      : (tensor<?x8x1x96xf16>, tensor<?x2x64x96xi8>, tensor<?x2x1xf32>, tensor<?x2x64x96xi8>, tensor<?x2x1xf32>, tensor<?xi32>) -> tensor<?x8x1x96xf16>
  return %o : tensor<?x8x1x96xf16>
}
