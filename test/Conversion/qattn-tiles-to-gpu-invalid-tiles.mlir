// RUN: qattn-opt %s -verify-diagnostics --qattn-tile=tile-keys=32 --qattn-convert-to-gpu
// A tile that spans two stage-1 blocks (one scale per tile) is a diagnostic naming the sizes.

func.func @f(%q: tensor<?x8x1x64xf16>, %k: tensor<?x2x64x64xi8>, %ks: tensor<?x2x4xf32>, %lens: tensor<?xi32>) -> tensor<?x8x1x64xf16> {
  // expected-error@+1 {{has no GPU lowering yet for stage-1 blocks of 16 keys in tiles of 32}}
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) lengths(%lens)
      {k_stage1 = #qattn.stage1<block = 16>, v_stage1 = #qattn.stage1<block = 16>}
      : (tensor<?x8x1x64xf16>, tensor<?x2x64x64xi8>, tensor<?x2x4xf32>, tensor<?x2x64x64xi8>, tensor<?x2x4xf32>, tensor<?xi32>) -> tensor<?x8x1x64xf16>
  return %o : tensor<?x8x1x64xf16>
}
