// RUN: qattn-opt %s -split-input-file -verify-diagnostics --qattn-tile --qattn-convert-to-gpu
// What the tile layer's GPU lowering does not take yet is a diagnostic on the attention, naming it.

func.func @f(%q: tensor<?x8x1x64xf16>, %kp: tensor<?x64x48xi8>, %ks: tensor<?x2x1xf32>, %ks2: tensor<?x2x4x64xi8>, %kz2: tensor<?x2x4x64xi8>, %lens: tensor<?xi32>, %table: tensor<?x?xi32>) -> tensor<?x8x1x64xf16> {
  // expected-error@+1 {{has no GPU lowering yet for 3-bit codes (2 and 4 only)}}
  %o = qattn.attention %q keys(%kp, %ks, %ks2, %kz2) values(%kp, %ks, %ks2, %kz2) lengths(%lens) pages(%table)
      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [3], group = 16>, v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [3], group = 16>}
      : (tensor<?x8x1x64xf16>, tensor<?x64x48xi8>, tensor<?x2x1xf32>, tensor<?x2x4x64xi8>, tensor<?x2x4x64xi8>, tensor<?x64x48xi8>, tensor<?x2x1xf32>, tensor<?x2x4x64xi8>, tensor<?x2x4x64xi8>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x8x1x64xf16>
  return %o : tensor<?x8x1x64xf16>
}
