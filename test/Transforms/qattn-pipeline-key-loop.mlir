// RUN: qattn-opt %s --qattn-tile=tile-keys=16 --qattn-pipeline=num-stages=3 --canonicalize | FileCheck %s
// RUN: qattn-opt %s --qattn-tile=tile-keys=16 --qattn-pipeline=num-stages=1 --canonicalize | FileCheck %s --check-prefix=ONE

// qattn-pipeline on a tile-layer key loop, 3 stages: the tiles of the first
// two steps load before the loop; each step loads the tiles of the step two
// ahead (bounded by the loop's end, so past it they read nothing), waits for
// its own with the two later steps' loads left in flight, and hands the ring
// on through the loop's iteration arguments.
// CHECK-LABEL: func.func @varlen_decode
// CHECK-DAG: %[[C16:.*]] = arith.constant 16 : index
// CHECK-DAG: %[[C32:.*]] = arith.constant 32 : index
// CHECK: %[[K0:.*]]:2 = qattn.load_kv_tile %{{.*}}[%{{.*}}, %{{.*}}, %[[LO:.*]]] bound %[[HI:[^ ]*]]
// CHECK: %[[V0:.*]]:2 = qattn.load_kv_tile %{{.*}}[%{{.*}}, %{{.*}}, %[[LO]]] bound %[[HI]]
// CHECK: %[[LO1:.*]] = arith.addi %[[LO]], %[[C16]] : index
// CHECK: %[[K1:.*]]:2 = qattn.load_kv_tile %{{.*}}[%{{.*}}, %{{.*}}, %[[LO1]]] bound %[[HI]]
// CHECK: %[[V1:.*]]:2 = qattn.load_kv_tile %{{.*}}[%{{.*}}, %{{.*}}, %[[LO1]]] bound %[[HI]]
// CHECK: scf.for %[[J:.*]] = %[[LO]] to %[[HI]] step %[[C16]] iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %[[R0:.*]] = %[[K0]]#0, %[[R1:.*]] = %[[K0]]#1, %[[R2:.*]] = %[[V0]]#0, %[[R3:.*]] = %[[V0]]#1, %[[R4:.*]] = %[[K1]]#0, %[[R5:.*]] = %[[K1]]#1, %[[R6:.*]] = %[[V1]]#0, %[[R7:.*]] = %[[V1]]#1)
// CHECK:   %[[AHEAD:.*]] = arith.addi %[[J]], %[[C32]] : index
// CHECK:   %[[KN:.*]]:2 = qattn.load_kv_tile %{{.*}}[%{{.*}}, %{{.*}}, %[[AHEAD]]] bound %[[HI]]
// CHECK:   %[[VN:.*]]:2 = qattn.load_kv_tile %{{.*}}[%{{.*}}, %{{.*}}, %[[AHEAD]]] bound %[[HI]]
// CHECK:   %[[W:.*]]:4 = qattn.wait_tiles %[[R0]], %[[R1]], %[[R2]], %[[R3]] {pending = 2 : i64}
// CHECK:   qattn.dequantize_tile %[[W]]#0, %[[W]]#1
// CHECK:   qattn.tile_scores %{{.*}}, %{{.*}}[%{{.*}}, %[[J]]]
// CHECK:   qattn.dequantize_tile %[[W]]#2, %[[W]]#3
// CHECK:   %[[M:.*]], %[[L:.*]], %[[A:.*]] = qattn.softmax_update
// CHECK:   scf.yield %[[M]], %[[L]], %[[A]], %[[R4]], %[[R5]], %[[R6]], %[[R7]], %[[KN]]#0, %[[KN]]#1, %[[VN]]#0, %[[VN]]#1
// CHECK: } {qattn.key_loop, qattn.pipeline_stages = 3 : i64}
// ONE-NOT: qattn.wait_tiles
// ONE-NOT: qattn.pipeline_stages
func.func @varlen_decode(%q: tensor<?x4x1x64xf32>, %k: tensor<?x2x?x64xi8>, %ks: tensor<?x2x?xf32>, %v: tensor<?x2x?x64xi8>, %vs: tensor<?x2x?xf32>, %lens: tensor<?xi32>) -> tensor<?x4x1x64xf32> {
  %o = qattn.attention %q keys(%k, %ks) values(%v, %vs) lengths(%lens) {k_stage1 = #qattn.stage1<block = 32>, v_stage1 = #qattn.stage1<block = 32>}
      : (tensor<?x4x1x64xf32>, tensor<?x2x?x64xi8>, tensor<?x2x?xf32>, tensor<?x2x?x64xi8>, tensor<?x2x?xf32>, tensor<?xi32>) -> tensor<?x4x1x64xf32>
  return %o : tensor<?x4x1x64xf32>
}
