// RUN: qattn-opt %s -split-input-file -verify-diagnostics --qattn-tile=unverified-gpu-lowerings=true --qattn-convert-to-gpu
// At d = 80 the GPU lowering takes 4-bit codes and int8: a lane's 20 K
// channels of 3-bit codes are 60 bits, no whole group of 8 codes; of 2-bit
// codes 40 bits, no whole half words.

func.func @d80_int3(%q: tensor<?x8x1x80xf16>, %kp: tensor<?x64x60xi8>, %ks: tensor<?x2x1xf32>, %ks2: tensor<?x2x4x80xi8>, %kz2: tensor<?x2x4x80xi8>, %lens: tensor<?xi32>, %table: tensor<?x?xi32>) -> tensor<?x8x1x80xf16> {
  // expected-error@+1 {{has no GPU lowering yet for 3-bit codes at head dim 80}}
  %o = qattn.attention %q keys(%kp, %ks, %ks2, %kz2) values(%kp, %ks, %ks2, %kz2) lengths(%lens) pages(%table)
      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [3], group = 16>, v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [3], group = 16>}
      : (tensor<?x8x1x80xf16>, tensor<?x64x60xi8>, tensor<?x2x1xf32>, tensor<?x2x4x80xi8>, tensor<?x2x4x80xi8>, tensor<?x64x60xi8>, tensor<?x2x1xf32>, tensor<?x2x4x80xi8>, tensor<?x2x4x80xi8>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x8x1x80xf16>
  return %o : tensor<?x8x1x80xf16>
}

// -----

func.func @d80_int2(%q: tensor<?x8x1x80xf16>, %kp: tensor<?x64x40xi8>, %ks: tensor<?x2x1xf32>, %ks2: tensor<?x2x4x80xi8>, %kz2: tensor<?x2x4x80xi8>, %lens: tensor<?xi32>, %table: tensor<?x?xi32>) -> tensor<?x8x1x80xf16> {
  // expected-error@+1 {{has no GPU lowering yet for 2-bit codes at head dim 80}}
  %o = qattn.attention %q keys(%kp, %ks, %ks2, %kz2) values(%kp, %ks, %ks2, %kz2) lengths(%lens) pages(%table)
      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [2], group = 16>, v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [2], group = 16>}
      : (tensor<?x8x1x80xf16>, tensor<?x64x40xi8>, tensor<?x2x1xf32>, tensor<?x2x4x80xi8>, tensor<?x2x4x80xi8>, tensor<?x64x40xi8>, tensor<?x2x1xf32>, tensor<?x2x4x80xi8>, tensor<?x2x4x80xi8>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x8x1x80xf16>
  return %o : tensor<?x8x1x80xf16>
}
