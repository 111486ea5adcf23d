// RUN: qattn-opt %s -split-input-file -verify-diagnostics --qattn-tile=tile-keys=32 --qattn-convert-to-gpu
// A tile whose stage-1 blocks or stage-2 groups neither cover it nor split
// it into halves of key blocks (8 keys or more each) is a diagnostic naming
// the sizes. Stage-1 blocks of 1, 2 or 4 keys, whose scale a lane reads for
// each of its keys, are lowered, but not yet run on the H200 (qattn-tile's
// unverified-gpu-lowerings takes them); not where a scale is per channel.

func.func @block4(%q: tensor<?x8x1x64xf16>, %k: tensor<?x2x64x64xi8>, %ks: tensor<?x2x16xf32>, %lens: tensor<?xi32>) -> tensor<?x8x1x64xf16> {
  // expected-error@+1 {{has no GPU lowering yet for stage-1 blocks of 4 keys (lowered, but not yet run on the H200 matrix: qattn-tile unverified-gpu-lowerings=true takes them)}}
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

// -----

func.func @block4_per_channel(%q: tensor<?x8x1x64xf16>, %k: tensor<?x2x64x64xi8>, %ks: tensor<?x2x16x64xf32>, %lens: tensor<?xi32>) -> tensor<?x8x1x64xf16> {
  // expected-error@+1 {{has no GPU lowering yet for stage-1 blocks of 4 keys (8 and multiples of 16 only)}}
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) lengths(%lens)
      {k_stage1 = #qattn.stage1<block = 4, granularity = channel>, v_stage1 = #qattn.stage1<block = 4, granularity = channel>}
      : (tensor<?x8x1x64xf16>, tensor<?x2x64x64xi8>, tensor<?x2x16x64xf32>, tensor<?x2x64x64xi8>, tensor<?x2x16x64xf32>, tensor<?xi32>) -> tensor<?x8x1x64xf16>
  return %o : tensor<?x8x1x64xf16>
}
