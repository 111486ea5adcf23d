// RUN: qattn-opt %s --qattn-tile --qattn-pipeline --qattn-convert-to-gpu --canonicalize | FileCheck %s
// RUN: qattn-opt %s --qattn-tile --qattn-pipeline=num-stages=1 --qattn-convert-to-gpu --canonicalize | FileCheck %s --check-prefix=DIRECT
// Scales per channel on the tile layer's GPU lowering. An int8 query's
// channel scales apply before its rounding to f16; a cache's stage-1 scales
// per channel multiply each dequantized pair in f32 before its rounding, and
// the tile's one scale (which the scores and P^T apply) is 1. Through the
// ring the warp copies a tile's row of scales once (d f32: 16 bytes a lane,
// 16 copies at d = 64); without it each lane loads its own channels' (K: d/4,
// V: d/8).

func.func @channel_queries(%q: tensor<?x8x1x64xi8>, %qs: tensor<?x8x1x64xf16>, %k: tensor<?x2x64x64xi8>, %ks: tensor<?x2x1xf32>, %lens: tensor<?xi32>) -> tensor<?x8x1x64xf16> {
  %o = qattn.attention %q [%qs] keys(%k, %ks) values(%k, %ks) lengths(%lens)
      {q_stage1 = #qattn.stage1<block = 1, scale = f16, granularity = channel>, k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>}
      : (tensor<?x8x1x64xi8>, tensor<?x8x1x64xf16>, tensor<?x2x64x64xi8>, tensor<?x2x1xf32>, tensor<?x2x64x64xi8>, tensor<?x2x1xf32>, tensor<?xi32>) -> tensor<?x8x1x64xf16>
  return %o : tensor<?x8x1x64xf16>
}

// CHECK-LABEL: gpu.func @channel_queries_decode_tiles
// CHECK: %[[Q:.*]] = vector.load %{{.*}} {alignment = 16 : i64} : memref<1099511627776xi8>, vector<16xi8>
// CHECK: %[[S:.*]] = vector.load %{{.*}} {alignment = 16 : i64} : memref<1099511627776xf16>, vector<16xf16>
// CHECK: %[[S32:.*]] = arith.extf %[[S]] : vector<16xf16> to vector<16xf32>
// CHECK: %[[Q32:.*]] = arith.sitofp %[[Q]] : vector<16xi8> to vector<16xf32>
// CHECK: %[[QS:.*]] = arith.mulf %[[Q32]], %[[S32]] : vector<16xf32>
// CHECK: %[[QH:.*]] = arith.truncf %[[QS]] : vector<16xf32> to vector<16xf16>
// CHECK: vector.shuffle %[[QH]], %[[QH]] [0, 2]
// CHECK-LABEL: gpu.func @channel_queries_combine_tiles

func.func @channel_cache(%q: tensor<?x8x1x64xf16>, %kp: tensor<?x64x64xi8>, %ks: tensor<?x2x1x64xf32>, %ks2: tensor<?x2x4x64xi8>, %kz2: tensor<?x2x4x64xi8>, %lens: tensor<?xi32>, %table: tensor<?x?xi32>) -> tensor<?x8x1x64xf16> {
  %o = qattn.attention %q keys(%kp, %ks, %ks2, %kz2) values(%kp, %ks, %ks2, %kz2) lengths(%lens) pages(%table)
      {k_stage1 = #qattn.stage1<block = 64, granularity = channel>, k_stage2 = #qattn.stage2<bits = [4], group = 16>, v_stage1 = #qattn.stage1<block = 64, granularity = channel>, v_stage2 = #qattn.stage2<bits = [4], group = 16>}
      : (tensor<?x8x1x64xf16>, tensor<?x64x64xi8>, tensor<?x2x1x64xf32>, tensor<?x2x4x64xi8>, tensor<?x2x4x64xi8>, tensor<?x64x64xi8>, tensor<?x2x1x64xf32>, tensor<?x2x4x64xi8>, tensor<?x2x4x64xi8>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x8x1x64xf16>
  return %o : tensor<?x8x1x64xf16>
}

// The K tile's copies: its codes, the two rows of group constants (4 copies
// each), then its row of 64 f32 scales (16 copies), 16 bytes a lane.
// CHECK-LABEL: gpu.func @channel_cache_decode_tiles
// CHECK: nvvm.bar.warp.sync
// CHECK-COUNT-8: cp.async.cg.shared.global [$0], [g], 16;
// CHECK: %[[ROWLANE:.*]] = arith.cmpi ult, %{{.*}}, %c16 : index
// CHECK-NEXT: scf.if %[[ROWLANE]] {
// CHECK: cp.async.cg.shared.global [$0], [g], 16;
// CHECK: cp.async.commit_group
// In the loop, a pair of two channels' values scaled by their scales, read
// from the ring.
// CHECK: scf.for
// CHECK: vector.load %{{.*}} : memref<1792xi32, #gpu.address_space<workgroup>>, vector<1xi32>
// CHECK: %[[LO:.*]] = arith.bitcast %{{.*}} : i32 to f32
// CHECK: %[[HI:.*]] = arith.bitcast %{{.*}} : i32 to f32
// CHECK: %[[SC:.*]] = vector.from_elements %[[LO]], %[[HI]] : vector<2xf32>
// CHECK: %[[PAIR:.*]] = arith.extf %{{.*}} : vector<2xf16> to vector<2xf32>
// CHECK: %[[X:.*]] = arith.mulf %[[PAIR]], %[[SC]] : vector<2xf32>
// CHECK: arith.truncf %[[X]] : vector<2xf32> to vector<2xf16>
// CHECK-LABEL: gpu.func @channel_cache_combine_tiles

// DIRECT-LABEL: gpu.func @channel_cache_decode_tiles
// DIRECT: vector.load %{{.*}} {alignment = 16 : i64} : memref<1099511627776xf32>, vector<16xf32>
// DIRECT: vector.load %{{.*}} {alignment = 16 : i64} : memref<1099511627776xf32>, vector<8xf32>
// DIRECT: arith.mulf %{{.*}}, %{{.*}} : vector<2xf32>
// DIRECT-LABEL: gpu.func @channel_cache_combine_tiles
