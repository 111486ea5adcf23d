// RUN: qattn-opt %s -split-input-file -verify-diagnostics --qattn-tile=unverified-gpu-lowerings=true --qattn-convert-to-gpu
// At d = 80 the GPU lowering takes 2-, 3- and 4-bit codes and int8, but not
// 2-bit codes packed msb_first: a lane's 10 V channels are 2.5 bytes, and the
// channel order (valueChannels) reads a byte's codes in the packing's order.

func.func @d80_int2_msb(%q: tensor<?x8x1x80xf16>, %kp: tensor<?x64x40xi8>, %ks: tensor<?x2x1xf32>, %ks2: tensor<?x2x4x80xi8>, %kz2: tensor<?x2x4x80xi8>, %lens: tensor<?xi32>, %table: tensor<?x?xi32>) -> tensor<?x8x1x80xf16> {
  // expected-error@+1 {{has no GPU lowering yet for msb_first 2-bit codes at head dim 80}}
  %o = qattn.attention %q keys(%kp, %ks, %ks2, %kz2) values(%kp, %ks, %ks2, %kz2) lengths(%lens) pages(%table)
      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [2], group = 16>, v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [2], group = 16, order = msb_first>}
      : (tensor<?x8x1x80xf16>, tensor<?x64x40xi8>, tensor<?x2x1xf32>, tensor<?x2x4x80xi8>, tensor<?x2x4x80xi8>, tensor<?x64x40xi8>, tensor<?x2x1xf32>, tensor<?x2x4x80xi8>, tensor<?x2x4x80xi8>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x8x1x80xf16>
  return %o : tensor<?x8x1x80xf16>
}
