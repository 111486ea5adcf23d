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

// Head dims past 256 (a row block's accumulators alone would take 144
// registers a lane at d = 288) and the multiples of 16 that are not of 32
// but 80; V's stage-1 scales per channel of odd blocks that do not fit a
// tile (its fragments pair keys 2t and 2t + 1 under one block's scales; K
// takes them); stage-2 groups of 1 key.
func.func @d288(%q: tensor<?x8x1x288xf16>, %k: tensor<?x2x64x288xi8>, %ks: tensor<?x2x1xf32>, %lens: tensor<?xi32>) -> tensor<?x8x1x288xf16> {
  // expected-error@+1 {{has no GPU lowering yet for head dim 288 (multiples of 32 from 32 to 256, and 80, only)}}
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) lengths(%lens)
      {k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>}
      : (tensor<?x8x1x288xf16>, tensor<?x2x64x288xi8>, tensor<?x2x1xf32>, tensor<?x2x64x288xi8>, tensor<?x2x1xf32>, tensor<?xi32>) -> tensor<?x8x1x288xf16>
  return %o : tensor<?x8x1x288xf16>
}

// -----

func.func @d48(%q: tensor<?x8x1x48xf16>, %kp: tensor<?x64x24xi8>, %ks: tensor<?x2x1xf32>, %ks2: tensor<?x2x4x48xi8>, %kz2: tensor<?x2x4x48xi8>, %lens: tensor<?xi32>, %table: tensor<?x?xi32>) -> tensor<?x8x1x48xf16> {
  // expected-error@+1 {{has no GPU lowering yet for head dim 48 (multiples of 32 from 32 to 256, and 80, only)}}
  %o = qattn.attention %q keys(%kp, %ks, %ks2, %kz2) values(%kp, %ks, %ks2, %kz2) lengths(%lens) pages(%table)
      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [2], group = 16>, v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [2], group = 16>}
      : (tensor<?x8x1x48xf16>, tensor<?x64x24xi8>, tensor<?x2x1xf32>, tensor<?x2x4x48xi8>, tensor<?x2x4x48xi8>, tensor<?x64x24xi8>, tensor<?x2x1xf32>, tensor<?x2x4x48xi8>, tensor<?x2x4x48xi8>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x8x1x48xf16>
  return %o : tensor<?x8x1x48xf16>
}

// -----

func.func @v_channel_block5(%q: tensor<?x8x1x64xf16>, %k: tensor<?x2x64x64xi8>, %ks: tensor<?x2x13x64xf32>, %lens: tensor<?xi32>) -> tensor<?x8x1x64xf16> {
  // expected-error@+1 {{has no GPU lowering yet for stage-1 blocks of 5 keys in tiles of 16}}
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) lengths(%lens)
      {k_stage1 = #qattn.stage1<block = 5, granularity = channel>, v_stage1 = #qattn.stage1<block = 5, granularity = channel>}
      : (tensor<?x8x1x64xf16>, tensor<?x2x64x64xi8>, tensor<?x2x13x64xf32>, tensor<?x2x64x64xi8>, tensor<?x2x13x64xf32>, tensor<?xi32>) -> tensor<?x8x1x64xf16>
  return %o : tensor<?x8x1x64xf16>
}

// -----

func.func @group1(%q: tensor<?x8x1x64xf16>, %kp: tensor<?x64x64xi8>, %ks: tensor<?x2x1xf32>, %ks2: tensor<?x2x64x64xi8>, %kz2: tensor<?x2x64x64xi8>, %lens: tensor<?xi32>, %table: tensor<?x?xi32>) -> tensor<?x8x1x64xf16> {
  // expected-error@+1 {{has no GPU lowering yet for stage-2 groups of 1 key in tiles of 16}}
  %o = qattn.attention %q keys(%kp, %ks, %ks2, %kz2) values(%kp, %ks, %ks2, %kz2) lengths(%lens) pages(%table)
      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4], group = 1>, v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [4], group = 1>}
      : (tensor<?x8x1x64xf16>, tensor<?x64x64xi8>, tensor<?x2x1xf32>, tensor<?x2x64x64xi8>, tensor<?x2x64x64xi8>, tensor<?x64x64xi8>, tensor<?x2x1xf32>, tensor<?x2x64x64xi8>, tensor<?x2x64x64xi8>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x8x1x64xf16>
  return %o : tensor<?x8x1x64xf16>
}
