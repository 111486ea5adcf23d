// RUN: qattn-opt %s --qattn-tile --qattn-pipeline=num-stages=1 --qattn-convert-to-gpu --canonicalize | FileCheck %s
// RUN: qattn-opt %s --qattn-tile --qattn-pipeline --qattn-convert-to-gpu --canonicalize | FileCheck %s --check-prefix=RING
// Stage-1 blocks and stage-2 groups of 8 keys on the tile layer's GPU
// lowering: a 16-key tile holds two of each, one per half of its mma key
// block (K's keys g and g + 8 of a lane, V's 2t, 2t + 1 and 2t + 8, 2t + 9).
// A tile loads both halves' scales (the second one's block row is the
// first's plus one, or, where the cache is not whole tiles and the half
// starts past the bound, the first's again); the scores scale key g + 8h
// by K's scale of half h, P^T's terms of keys g + 8h by V's.

func.func @ragged_block8(%q: tensor<?x8x1x64xf16>, %k: tensor<?x2x1000x64xi8>, %ks: tensor<?x2x125xf32>, %lens: tensor<?xi32>) -> tensor<?x8x1x64xf16> {
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) lengths(%lens)
      {k_stage1 = #qattn.stage1<block = 8>, v_stage1 = #qattn.stage1<block = 8>}
      : (tensor<?x8x1x64xf16>, tensor<?x2x1000x64xi8>, tensor<?x2x125xf32>, tensor<?x2x1000x64xi8>, tensor<?x2x125xf32>, tensor<?xi32>) -> tensor<?x8x1x64xf16>
  return %o : tensor<?x8x1x64xf16>
}

// CHECK-LABEL: gpu.func @ragged_block8_decode_tiles
// K's tile: the scales of blocks row/8 and (if its keys start before the bound) row/8 + 1.
// CHECK: scf.for %[[KEY:.*]] = %{{.*}} to %[[BOUND:.*]] step %c16
// CHECK: %[[FIRST:.*]] = arith.divui %{{.*}}, %c8 : index
// CHECK: %[[AT0:.*]] = arith.addi %{{.*}}, %[[FIRST]] : index
// CHECK: %[[NEXT:.*]] = arith.addi %[[FIRST]], %c1 : index
// CHECK: %[[HALF:.*]] = arith.addi %[[KEY]], %c8 : index
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[HALF]], %[[BOUND]] : index
// CHECK: %[[B1:.*]] = arith.select %[[IN]], %[[NEXT]], %[[FIRST]] : index
// CHECK: %[[AT1:.*]] = arith.addi %{{.*}}, %[[B1]] : index
// CHECK: %[[KS0:.*]] = memref.load %{{.*}}[%[[AT0]]] : memref<1099511627776xf32>
// CHECK: %[[KS1:.*]] = memref.load %{{.*}}[%[[AT1]]] : memref<1099511627776xf32>
// V's tile, likewise.
// CHECK: %[[VS0:.*]] = memref.load %{{.*}} : memref<1099511627776xf32>
// CHECK: %[[VS1:.*]] = memref.load %{{.*}} : memref<1099511627776xf32>
// The scores' factors (softmax scale x log2 e times each half's scale).
// CHECK: %[[F0:.*]] = arith.mulf %[[KS0]], %[[C:cst.*]] : f32
// CHECK: %[[F1:.*]] = arith.mulf %[[KS1]], %[[C]] : f32
// CHECK: nvgpu.mma.sync
// CHECK: %[[S0:.*]] = vector.extract %[[ACC:.*]][0, 0] : f32 from vector<2x2xf32>
// CHECK: arith.mulf %[[S0]], %[[F0]] : f32
// CHECK: %[[S1:.*]] = vector.extract %[[ACC]][1, 0] : f32 from vector<2x2xf32>
// CHECK: arith.mulf %[[S1]], %[[F1]] : f32
// P^T: the terms of keys g (half 0) times V's first scale, of g + 8 its second.
// CHECK: arith.mulf %{{.*}}, %[[VS0]] : f32
// CHECK: arith.mulf %{{.*}}, %[[VS0]] : f32
// CHECK: arith.mulf %{{.*}}, %[[VS1]] : f32
// CHECK: arith.mulf %{{.*}}, %[[VS1]] : f32
// CHECK: nvgpu.mma.sync
// CHECK-LABEL: gpu.func @ragged_block8_combine_tiles

// Through the ring, each scale is its own 4-byte copy (lane 0's), 16 bytes
// apart in the slot.
// RING-LABEL: gpu.func @ragged_block8_decode_tiles
// RING: cp.async.cg.shared.global.L2::128B [$0], [g], 16;
// RING: cp.async.cg.shared.global.L2::128B [$0], [g], 16;
// RING: cp.async.ca.shared.global [$0], [g], 4;
// RING: cp.async.ca.shared.global [$0], [g], 4;
// RING: cp.async.commit_group;

func.func @group8(%q: tensor<?x8x1x64xf16>, %kp: tensor<?x64x64xi8>, %ks: tensor<?x2x1xf32>, %ks2: tensor<?x2x8x64xi8>, %kz2: tensor<?x2x8x64xi8>, %lens: tensor<?xi32>, %table: tensor<?x?xi32>) -> tensor<?x8x1x64xf16> {
  %o = qattn.attention %q keys(%kp, %ks, %ks2, %kz2) values(%kp, %ks, %ks2, %kz2) lengths(%lens) pages(%table)
      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4], group = 8>, v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [4], group = 8>}
      : (tensor<?x8x1x64xf16>, tensor<?x64x64xi8>, tensor<?x2x1xf32>, tensor<?x2x8x64xi8>, tensor<?x2x8x64xi8>, tensor<?x64x64xi8>, tensor<?x2x1xf32>, tensor<?x2x8x64xi8>, tensor<?x2x8x64xi8>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x8x1x64xf16>
  return %o : tensor<?x8x1x64xf16>
}

// Each lane loads its channels' s2 and z2 of both groups of the K tile
// (rows row/8 and row/8 + 1 of the page: whole tiles, no select), and the
// tile's one stage-1 scale (blocks of 64).
// CHECK-LABEL: gpu.func @group8_decode_tiles
// CHECK: %[[G0:.*]] = arith.divui %[[PROW:.*]], %c8 : index
// CHECK: arith.addi %[[G0]], %c1 : index
// CHECK-NOT: arith.select
// CHECK: arith.divui %[[PROW]], %c64 : index
// CHECK-COUNT-2: vector.load %{{.*}} {alignment = 8 : i64} : memref<1099511627776xi8>, vector<8xi8>
// CHECK-COUNT-4: vector.load %{{.*}} {alignment = 16 : i64} : memref<1099511627776xi8>, vector<16xi8>
// CHECK: memref.load %{{.*}} : memref<1099511627776xf32>
// CHECK-LABEL: gpu.func @group8_combine_tiles

// Through the ring, the warp copies each group's rows of s2 and z2 (64
// bytes: 4 lanes' 16 each) and the one 4-byte scale.
// RING-LABEL: gpu.func @group8_decode_tiles
// RING: cp.async.cg.shared.global.L2::128B [$0], [g], 16;
// RING-COUNT-4: cp.async.cg.shared.global [$0], [g], 16;
// RING: cp.async.ca.shared.global [$0], [g], 4;
// RING: cp.async.commit_group;
