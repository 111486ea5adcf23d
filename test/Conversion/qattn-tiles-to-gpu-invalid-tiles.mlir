// RUN: qattn-opt %s -split-input-file -verify-diagnostics --qattn-tile=tile-keys=32 --qattn-convert-to-gpu
// Stage-1 blocks that neither cover a tile nor split it into halves of key
// blocks (8 keys or more each) are lowered (a lane reads the scale, or its
// channels' scales, of each of its keys), as are stage-2 groups of 2 and 4
// keys (a lane loads its keys' groups' constants), but not yet run on the
// H200: without qattn-tile's unverified-gpu-lowerings, a diagnostic naming
// the sizes and the option.

func.func @block4(%q: tensor<?x8x1x64xf16>, %k: tensor<?x2x64x64xi8>, %ks: tensor<?x2x16xf32>, %lens: tensor<?xi32>) -> tensor<?x8x1x64xf16> {
  // expected-error@+1 {{has no GPU lowering yet for stage-1 blocks of 4 keys in tiles of 32 (lowered with a scale per lane key, but not yet run on the H200 matrix: qattn-tile unverified-gpu-lowerings=true takes them)}}
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) lengths(%lens)
      {k_stage1 = #qattn.stage1<block = 4>, v_stage1 = #qattn.stage1<block = 4>}
      : (tensor<?x8x1x64xf16>, tensor<?x2x64x64xi8>, tensor<?x2x16xf32>, tensor<?x2x64x64xi8>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<?x8x1x64xf16>
  return %o : tensor<?x8x1x64xf16>
}

// -----

func.func @block48(%q: tensor<?x8x1x64xf16>, %k: tensor<?x2x96x64xi8>, %ks: tensor<?x2x2xf32>, %lens: tensor<?xi32>) -> tensor<?x8x1x64xf16> {
  // expected-error@+1 {{has no GPU lowering yet for stage-1 blocks of 48 keys in tiles of 32 (lowered with a scale per lane key, but not yet run on the H200 matrix: qattn-tile unverified-gpu-lowerings=true takes them)}}
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) lengths(%lens)
      {k_stage1 = #qattn.stage1<block = 48>, v_stage1 = #qattn.stage1<block = 48>}
      : (tensor<?x8x1x64xf16>, tensor<?x2x96x64xi8>, tensor<?x2x2xf32>, tensor<?x2x96x64xi8>, tensor<?x2x2xf32>, tensor<?xi32>) -> tensor<?x8x1x64xf16>
  return %o : tensor<?x8x1x64xf16>
}

// -----

func.func @block4_per_channel(%q: tensor<?x8x1x64xf16>, %k: tensor<?x2x64x64xi8>, %ks: tensor<?x2x16x64xf32>, %lens: tensor<?xi32>) -> tensor<?x8x1x64xf16> {
  // expected-error@+1 {{has no GPU lowering yet for stage-1 blocks of 4 keys in tiles of 32 (lowered with a scale per lane key, but not yet run on the H200 matrix: qattn-tile unverified-gpu-lowerings=true takes them)}}
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) lengths(%lens)
      {k_stage1 = #qattn.stage1<block = 4, granularity = channel>, v_stage1 = #qattn.stage1<block = 4, granularity = channel>}
      : (tensor<?x8x1x64xf16>, tensor<?x2x64x64xi8>, tensor<?x2x16x64xf32>, tensor<?x2x64x64xi8>, tensor<?x2x16x64xf32>, tensor<?xi32>) -> tensor<?x8x1x64xf16>
  return %o : tensor<?x8x1x64xf16>
}

// -----

func.func @group4(%q: tensor<?x8x1x64xf16>, %kp: tensor<?x64x64xi8>, %ks: tensor<?x2x1xf32>, %ks2: tensor<?x2x16x64xi8>, %kz2: tensor<?x2x16x64xi8>, %lens: tensor<?xi32>, %table: tensor<?x?xi32>) -> tensor<?x8x1x64xf16> {
  // expected-error@+1 {{has no GPU lowering yet for stage-2 groups of 4 keys in tiles of 32 (lowered with the constants of the lane's keys' groups, but not yet run on the H200 matrix: qattn-tile unverified-gpu-lowerings=true takes them)}}
  %o = qattn.attention %q keys(%kp, %ks, %ks2, %kz2) values(%kp, %ks, %ks2, %kz2) lengths(%lens) pages(%table)
      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4], group = 4>, v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [4], group = 4>}
      : (tensor<?x8x1x64xf16>, tensor<?x64x64xi8>, tensor<?x2x1xf32>, tensor<?x2x16x64xi8>, tensor<?x2x16x64xi8>, tensor<?x64x64xi8>, tensor<?x2x1xf32>, tensor<?x2x16x64xi8>, tensor<?x2x16x64xi8>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x8x1x64xf16>
  return %o : tensor<?x8x1x64xf16>
}
