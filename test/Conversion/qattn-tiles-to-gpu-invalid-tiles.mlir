// RUN: qattn-opt %s -split-input-file -verify-diagnostics --qattn-tile=tile-keys=32 --qattn-convert-to-gpu
// A tile whose stage-1 blocks or stage-2 groups neither cover it nor split
// it into halves of key blocks (8 keys or more each: blocks of 4 would give
// a lane's keys different scales by lane) is a diagnostic naming the sizes.

func.func @block4(%q: tensor<?x8x1x64xf16>, %k: tensor<?x2x64x64xi8>, %ks: tensor<?x2x16xf32>, %lens: tensor<?xi32>) -> tensor<?x8x1x64xf16> {
  // expected-error@+1 {{has no GPU lowering yet for stage-1 blocks of 4 keys in tiles of 32}}
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) lengths(%lens)
      {k_stage1 = #qattn.stage1<block = 4>, v_stage1 = #qattn.stage1<block = 4>}
      : (tensor<?x8x1x64xf16>, tensor<?x2x64x64xi8>, tensor<?x2x16xf32>, tensor<?x2x64x64xi8>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<?x8x1x64xf16>
  return %o : tensor<?x8x1x64xf16>
}

// -----

func.func @block48(%q: tensor<?x8x1x64xf16>, %k: tensor<?x2x96x64xi8>, %ks: tensor<?x2x2xf32>, %lens: tensor<?xi32>) -> tensor<?x8x1x64xf16> {
  // expected-error@+1 {{has no GPU lowering yet for stage-1 blocks of 48 keys in tiles of 32}}
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) lengths(%lens)
      {k_stage1 = #qattn.stage1<block = 48>, v_stage1 = #qattn.stage1<block = 48>}
      : (tensor<?x8x1x64xf16>, tensor<?x2x96x64xi8>, tensor<?x2x2xf32>, tensor<?x2x96x64xi8>, tensor<?x2x2xf32>, tensor<?xi32>) -> tensor<?x8x1x64xf16>
  return %o : tensor<?x8x1x64xf16>
}
