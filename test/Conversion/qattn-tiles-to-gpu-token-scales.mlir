// RUN: qattn-opt %s --qattn-tile --qattn-pipeline=num-stages=1 --qattn-convert-to-gpu --canonicalize | FileCheck %s
// RUN: qattn-opt %s --qattn-tile --qattn-pipeline --qattn-convert-to-gpu --canonicalize | FileCheck %s --check-prefix=RING
// Stage-1 blocks that neither cover a tile nor split it into halves of key
// blocks, on the tile layer's GPU lowering: 1 key (an int8 cache's scale per
// token), 12, and 12 with scales per channel (last). A lane's keys g and
// g + 8 of a key block each have their own scale, which the lane reads for
// itself: row (tile's first row + g + 8h) / block, or, where the cache is
// not whole tiles and that key lies past the bound, the tile's first. The
// scores of key g + 8h take K's scale of half h, P^T's terms V's, as for
// blocks of 8.

func.func @ragged_token(%q: tensor<?x8x1x64xf16>, %k: tensor<?x2x1000x64xi8>, %ks: tensor<?x2x1000xf32>, %lens: tensor<?xi32>) -> tensor<?x8x1x64xf16> {
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) lengths(%lens)
      {k_stage1 = #qattn.stage1<block = 1>, v_stage1 = #qattn.stage1<block = 1>}
      : (tensor<?x8x1x64xf16>, tensor<?x2x1000x64xi8>, tensor<?x2x1000xf32>, tensor<?x2x1000x64xi8>, tensor<?x2x1000xf32>, tensor<?xi32>) -> tensor<?x8x1x64xf16>
  return %o : tensor<?x8x1x64xf16>
}

// CHECK-LABEL: gpu.func @ragged_token_decode_tiles
// CHECK: %[[G:.*]] = arith.divui %thread_id_x, %c4 : index
// CHECK: scf.for %[[KEY:.*]] = %{{.*}} to %[[BOUND:.*]] step %c16
// CHECK: %[[ROW:.*]] = arith.select %{{.*}}, %[[KEY]], %c0 : index
// K's codes of keys g and g + 8 (rows of 64 bytes).
// CHECK: arith.muli %{{.*}}, %c64 : index
// CHECK: arith.muli %{{.*}}, %c64 : index
// Their scales.
// CHECK: %[[R0:.*]] = arith.addi %[[ROW]], %[[G]] : index
// CHECK: %[[K0:.*]] = arith.addi %[[KEY]], %[[G]] : index
// CHECK: %[[IN0:.*]] = arith.cmpi ult, %[[K0]], %[[BOUND]] : index
// CHECK: %[[B0:.*]] = arith.select %[[IN0]], %[[R0]], %[[ROW]] : index
// CHECK: %[[AT0:.*]] = arith.addi %{{.*}}, %[[B0]] : index
// CHECK: %[[G8:.*]] = arith.addi %[[G]], %c8 : index
// CHECK: %[[R1:.*]] = arith.addi %[[ROW]], %[[G8]] : index
// CHECK: %[[K1:.*]] = arith.addi %[[KEY]], %[[G8]] : index
// CHECK: %[[IN1:.*]] = arith.cmpi ult, %[[K1]], %[[BOUND]] : index
// CHECK: %[[B1:.*]] = arith.select %[[IN1]], %[[R1]], %[[ROW]] : index
// CHECK: %[[AT1:.*]] = arith.addi %{{.*}}, %[[B1]] : index
// CHECK: %[[KS0:.*]] = memref.load %{{.*}}[%[[AT0]]] : memref<1099511627776xf32>
// CHECK: %[[KS1:.*]] = memref.load %{{.*}}[%[[AT1]]] : memref<1099511627776xf32>
// V's tile, likewise.
// CHECK: %[[VS0:.*]] = memref.load %{{.*}} : memref<1099511627776xf32>
// CHECK: %[[VS1:.*]] = memref.load %{{.*}} : memref<1099511627776xf32>
// CHECK: %[[F0:.*]] = arith.mulf %[[KS0]], %[[C:cst.*]] : f32
// CHECK: %[[F1:.*]] = arith.mulf %[[KS1]], %[[C]] : f32
// CHECK: nvgpu.mma.sync
// CHECK: %[[S0:.*]] = vector.extract %[[ACC:.*]][0, 0] : f32 from vector<2x2xf32>
// CHECK: arith.mulf %[[S0]], %[[F0]] : f32
// CHECK: %[[S1:.*]] = vector.extract %[[ACC]][1, 0] : f32 from vector<2x2xf32>
// CHECK: arith.mulf %[[S1]], %[[F1]] : f32
// CHECK: arith.mulf %{{.*}}, %[[VS0]] : f32
// CHECK: arith.mulf %{{.*}}, %[[VS0]] : f32
// CHECK: arith.mulf %{{.*}}, %[[VS1]] : f32
// CHECK: arith.mulf %{{.*}}, %[[VS1]] : f32
// CHECK: nvgpu.mma.sync
// CHECK-LABEL: gpu.func @ragged_token_combine_tiles

// Through the ring, each lane copies its own two scales (4 bytes at lane *
// 4 of their areas, 128 bytes apart, after the two 16-byte code pieces a
// lane's 512 bytes each), not lane 0 one for all, and reads them back from
// there after the wait.
// RING-LABEL: gpu.func @ragged_token_decode_tiles
// RING: cp.async.cg.shared.global.L2::128B [$0], [g], 16;
// RING: cp.async.cg.shared.global.L2::128B [$0], [g], 16;
// RING-NOT: scf.if
// RING: %[[L0:.*]] = arith.muli %thread_id_x, %c4 : index
// RING-NEXT: arith.addi %[[L0]], %c1024 : index
// RING-NOT: scf.if
// RING: cp.async.ca.shared.global [$0], [g], 4;
// RING: %[[L1:.*]] = arith.muli %thread_id_x, %c4 : index
// RING-NEXT: arith.addi %[[L1]], %c1152 : index
// RING-NOT: scf.if
// RING: cp.async.ca.shared.global [$0], [g], 4;
// RING-NEXT: cp.async.commit_group;
// RING: scf.for
// RING: cp.async.wait_group
// RING-NEXT: nvvm.bar.warp.sync
// RING-NEXT: %[[R0:.*]] = arith.muli %thread_id_x, %c4 : index
// RING-NEXT: arith.addi %[[R0]], %c1024 : index
// RING: vector.load {{.*}} vector<1xi32>
// RING: arith.bitcast %{{.*}} : i32 to f32

// Blocks of 12 keys: the lane's keys' blocks (tile row + g (+ 8)) / 12, the
// fallback the tile row's block.
func.func @block12(%q: tensor<?x8x1x64xf16>, %k: tensor<?x2x1000x64xi8>, %ks: tensor<?x2x84xf32>, %lens: tensor<?xi32>) -> tensor<?x8x1x64xf16> {
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) lengths(%lens)
      {k_stage1 = #qattn.stage1<block = 12>, v_stage1 = #qattn.stage1<block = 12>}
      : (tensor<?x8x1x64xf16>, tensor<?x2x1000x64xi8>, tensor<?x2x84xf32>, tensor<?x2x1000x64xi8>, tensor<?x2x84xf32>, tensor<?xi32>) -> tensor<?x8x1x64xf16>
  return %o : tensor<?x8x1x64xf16>
}

// CHECK-LABEL: gpu.func @block12_decode_tiles
// CHECK: %[[G:.*]] = arith.divui %thread_id_x, %c4 : index
// CHECK: scf.for %[[KEY:.*]] = %{{.*}} to %[[BOUND:.*]] step %c16
// CHECK: %[[ROW:.*]] = arith.select %{{.*}}, %[[KEY]], %c0 : index
// CHECK: %[[FIRST:.*]] = arith.divui %[[ROW]], %c12 : index
// CHECK: %[[R0:.*]] = arith.addi %[[ROW]], %[[G]] : index
// CHECK-NEXT: %[[B0:.*]] = arith.divui %[[R0]], %c12 : index
// CHECK-NEXT: %[[K0:.*]] = arith.addi %[[KEY]], %[[G]] : index
// CHECK-NEXT: %[[IN0:.*]] = arith.cmpi ult, %[[K0]], %[[BOUND]] : index
// CHECK-NEXT: arith.select %[[IN0]], %[[B0]], %[[FIRST]] : index
// CHECK-LABEL: gpu.func @block12_combine_tiles

// Scales per channel of blocks of 12: each lane loads its channels' scales
// (K's 16, V's 8 at d = 64) of the block of each of its keys, K's g + 8h, V's
// 2t + 8h (its fragments' keys; 2t + 1 + 8h in the same block).
func.func @channel12(%q: tensor<?x8x1x64xf16>, %k: tensor<?x2x1000x64xi8>, %ks: tensor<?x2x84x64xf32>, %lens: tensor<?xi32>) -> tensor<?x8x1x64xf16> {
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) lengths(%lens)
      {k_stage1 = #qattn.stage1<block = 12, granularity = channel>, v_stage1 = #qattn.stage1<block = 12, granularity = channel>}
      : (tensor<?x8x1x64xf16>, tensor<?x2x1000x64xi8>, tensor<?x2x84x64xf32>, tensor<?x2x1000x64xi8>, tensor<?x2x84x64xf32>, tensor<?xi32>) -> tensor<?x8x1x64xf16>
  return %o : tensor<?x8x1x64xf16>
}

// CHECK-LABEL: gpu.func @channel12_decode_tiles
// CHECK: %[[G:.*]] = arith.divui %thread_id_x, %c4 : index
// CHECK: %[[T:.*]] = arith.remui %thread_id_x, %c4 : index
// CHECK: scf.for %[[KEY:.*]] = %{{.*}} to %[[BOUND:.*]] step %c16
// CHECK: %[[FIRST:.*]] = arith.divui %[[ROW:.*]], %c12 : index
// CHECK-NEXT: %[[R0:.*]] = arith.addi %[[ROW]], %[[G]] : index
// CHECK-NEXT: %[[B0:.*]] = arith.divui %[[R0]], %c12 : index
// CHECK: vector.load %{{.*}} {alignment = 16 : i64} : memref<1099511627776xf32>, vector<16xf32>
// CHECK: vector.load %{{.*}} {alignment = 16 : i64} : memref<1099511627776xf32>, vector<16xf32>
// CHECK: %[[VFIRST:.*]] = arith.divui %[[VROW:.*]], %c12 : index
// CHECK-NEXT: %[[TT:.*]] = arith.muli %[[T]], %c2 : index
// CHECK-NEXT: %[[V0:.*]] = arith.addi %[[VROW]], %[[TT]] : index
// CHECK-NEXT: arith.divui %[[V0]], %c12 : index
// CHECK: vector.load %{{.*}} {alignment = 16 : i64} : memref<1099511627776xf32>, vector<8xf32>
// CHECK: vector.load %{{.*}} {alignment = 16 : i64} : memref<1099511627776xf32>, vector<8xf32>
// CHECK-LABEL: gpu.func @channel12_combine_tiles
