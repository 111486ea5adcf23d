// RUN: qattn-opt %s --qattn-tile --qattn-pipeline=num-stages=1 --qattn-convert-to-gpu --canonicalize | FileCheck %s
// Stage-2 groups of 2 or 4 keys on the tile layer's GPU lowering: a key
// block's half holds several groups, so each lane
// loads the constants (its channels of the s2 and z2 rows) of the group of
// its own keys of each half: K's key g + 8h, row (tile row + g + 8h) / G;
// V's keys 2t + 8h and 2t + 1 + 8h (one group), row (tile row + 2t + 8h) /
// G; past the bound (a cache of 1000 keys) the tile's first group. Two
// groups' constants a key block take the wide register budget: 12 warps an
// SM. K in groups of 2 beside V in 16, then K in 16 beside V in 4.

func.func @k_group2(%q: tensor<?x8x1x64xf16>, %kp: tensor<?x1000x64xi8>, %ks: tensor<?x2x16xf32>, %kg: tensor<?x2x500x64xi8>, %vg: tensor<?x2x63x64xi8>, %lens: tensor<?xi32>) -> tensor<?x8x1x64xf16> {
  %o = qattn.attention %q keys(%kp, %ks, %kg, %kg) values(%kp, %ks, %vg, %vg) lengths(%lens)
      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4], group = 2>, v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [4], group = 16>}
      : (tensor<?x8x1x64xf16>, tensor<?x1000x64xi8>, tensor<?x2x16xf32>, tensor<?x2x500x64xi8>, tensor<?x2x500x64xi8>, tensor<?x1000x64xi8>, tensor<?x2x16xf32>, tensor<?x2x63x64xi8>, tensor<?x2x63x64xi8>, tensor<?xi32>) -> tensor<?x8x1x64xf16>
  return %o : tensor<?x8x1x64xf16>
}

// CHECK-LABEL: gpu.func @k_group2_decode_tiles
// CHECK-SAME: nvvm.minctasm = 12 : i32
// CHECK: %[[G:.*]] = arith.divui %thread_id_x, %c4 : index
// CHECK: scf.for %[[KEY:.*]] = %{{.*}} to %[[BOUND:.*]] step %c16
// The group of key g, then of g + 8.
// CHECK: %[[FIRST:.*]] = arith.divui %[[ROW:.*]], %c2 : index
// CHECK-NEXT: %[[R0:.*]] = arith.addi %[[ROW]], %[[G]] : index
// CHECK-NEXT: %[[G0:.*]] = arith.divui %[[R0]], %c2 : index
// CHECK-NEXT: %[[K0:.*]] = arith.addi %[[KEY]], %[[G]] : index
// CHECK-NEXT: %[[IN0:.*]] = arith.cmpi ult, %[[K0]], %[[BOUND]] : index
// CHECK-NEXT: arith.select %[[IN0]], %[[G0]], %[[FIRST]] : index
// CHECK: %[[G8:.*]] = arith.addi %[[G]], %c8 : index
// CHECK-NEXT: %[[R1:.*]] = arith.addi %[[ROW]], %[[G8]] : index
// CHECK-NEXT: arith.divui %[[R1]], %c2 : index
// CHECK: nvgpu.mma.sync
// CHECK-LABEL: gpu.func @k_group2_combine_tiles

func.func @v_group4(%q: tensor<?x8x1x64xf16>, %kp: tensor<?x1000x64xi8>, %ks: tensor<?x2x16xf32>, %kg: tensor<?x2x63x64xi8>, %vg: tensor<?x2x250x64xi8>, %lens: tensor<?xi32>) -> tensor<?x8x1x64xf16> {
  %o = qattn.attention %q keys(%kp, %ks, %kg, %kg) values(%kp, %ks, %vg, %vg) lengths(%lens)
      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4], group = 16>, v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [4], group = 4>}
      : (tensor<?x8x1x64xf16>, tensor<?x1000x64xi8>, tensor<?x2x16xf32>, tensor<?x2x63x64xi8>, tensor<?x2x63x64xi8>, tensor<?x1000x64xi8>, tensor<?x2x16xf32>, tensor<?x2x250x64xi8>, tensor<?x2x250x64xi8>, tensor<?xi32>) -> tensor<?x8x1x64xf16>
  return %o : tensor<?x8x1x64xf16>
}

// CHECK-LABEL: gpu.func @v_group4_decode_tiles
// CHECK-SAME: nvvm.minctasm = 12 : i32
// CHECK: %[[T:.*]] = arith.remui %thread_id_x, %c4 : index
// CHECK: scf.for %[[KEY:.*]] = %{{.*}} to %[[BOUND:.*]] step %c16
// The group of keys 2t and 2t + 1, then of 2t + 8 and 2t + 9.
// CHECK: %[[FIRST:.*]] = arith.divui %[[ROW:.*]], %c4 : index
// CHECK-NEXT: %[[TT:.*]] = arith.muli %[[T]], %c2 : index
// CHECK-NEXT: %[[V0:.*]] = arith.addi %[[ROW]], %[[TT]] : index
// CHECK-NEXT: %[[VG0:.*]] = arith.divui %[[V0]], %c4 : index
// CHECK-NEXT: %[[VK0:.*]] = arith.addi %[[KEY]], %[[TT]] : index
// CHECK-NEXT: %[[IN0:.*]] = arith.cmpi ult, %[[VK0]], %[[BOUND]] : index
// CHECK-NEXT: arith.select %[[IN0]], %[[VG0]], %[[FIRST]] : index
// CHECK: %[[TT8:.*]] = arith.addi %{{.*}}, %c8 : index
// CHECK-NEXT: %[[V1:.*]] = arith.addi %[[ROW]], %[[TT8]] : index
// CHECK-NEXT: arith.divui %[[V1]], %c4 : index
// CHECK: nvgpu.mma.sync
// CHECK-LABEL: gpu.func @v_group4_combine_tiles
