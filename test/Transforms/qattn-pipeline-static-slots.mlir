// RUN: qattn-opt %s --qattn-tile=tile-keys=16 --qattn-pipeline=static-slots=true --canonicalize | FileCheck %s
// RUN: qattn-opt %s --qattn-tile=tile-keys=16 --qattn-pipeline='num-stages=3 static-slots=true' --canonicalize | FileCheck %s --check-prefix=THREE
// RUN: qattn-opt %s --qattn-tile=tile-keys=16 --qattn-pipeline --canonicalize | FileCheck %s --check-prefix=AUTO
// RUN: not qattn-opt %s --qattn-tile --qattn-pipeline=static-slots=maybe 2>&1 | FileCheck %s --check-prefix=BAD

// static-slots: the 2-stage key loop unrolled by 2 (modulo variable
// expansion), each tile's ring slot fixed by its place in the loop: the
// prologue's load slot 0; the unrolled body's first step waits for slot 0
// and loads into slot 1, its second the reverse; the epilogue (the odd
// step left, an even one of the loop) waits for slot 0 and loads slot 1.
// CHECK-LABEL: func.func @varlen_decode
// CHECK: %[[K0:.*]]:2 = qattn.load_kv_tile {{.*}}qattn.ring_slot = 0 : i64
// CHECK: %[[V0:.*]]:2 = qattn.load_kv_tile {{.*}}qattn.ring_slot = 0 : i64
// CHECK: %[[MAIN:[0-9]+]]:7 = scf.for %{{[a-z0-9_]+}} = %{{[a-z0-9_]+}} to %[[EVEN:[a-z0-9_]+]] step %{{[a-z0-9_]+}} iter_args
// CHECK:   qattn.load_kv_tile {{.*}}qattn.ring_slot = 1 : i64
// CHECK:   qattn.load_kv_tile {{.*}}qattn.ring_slot = 1 : i64
// CHECK:   qattn.wait_tiles {{.*}} {pending = 1 : i64, qattn.ring_slot = 0 : i64}
// CHECK:   qattn.softmax_update
// CHECK:   qattn.load_kv_tile {{.*}}qattn.ring_slot = 0 : i64
// CHECK:   qattn.load_kv_tile {{.*}}qattn.ring_slot = 0 : i64
// CHECK:   qattn.wait_tiles {{.*}} {pending = 1 : i64, qattn.ring_slot = 1 : i64}
// CHECK:   qattn.softmax_update
// CHECK:   scf.yield
// CHECK: } {qattn.key_loop, qattn.pipeline_stages = 2 : i64}
// CHECK: scf.for %{{.*}} = %[[EVEN]] to %{{.*}} step %{{.*}} iter_args({{.*}} = %[[MAIN]]#0
// CHECK:   qattn.load_kv_tile {{.*}}qattn.ring_slot = 1 : i64
// CHECK:   qattn.wait_tiles {{.*}} {pending = 1 : i64, qattn.ring_slot = 0 : i64}
// CHECK-NOT: qattn.ring_slot
// CHECK: return
// Deeper rings keep their slots dynamic.
// THREE-NOT: qattn.ring_slot
func.func @varlen_decode(%q: tensor<?x4x1x64xf32>, %k: tensor<?x2x?x64xi8>, %ks: tensor<?x2x?xf32>, %v: tensor<?x2x?x64xi8>, %vs: tensor<?x2x?xf32>, %lens: tensor<?xi32>) -> tensor<?x4x1x64xf32> {
  %o = qattn.attention %q keys(%k, %ks) values(%v, %vs) lengths(%lens) {k_stage1 = #qattn.stage1<block = 32>, v_stage1 = #qattn.stage1<block = 32>}
      : (tensor<?x4x1x64xf32>, tensor<?x2x?x64xi8>, tensor<?x2x?xf32>, tensor<?x2x?x64xi8>, tensor<?x2x?xf32>, tensor<?xi32>) -> tensor<?x4x1x64xf32>
  return %o : tensor<?x4x1x64xf32>
}

// static-slots=auto (the default): only the loops qattn-tile marked
// qattn.static_slots, here the stage-2 cache's (d = 64, 4 bits: K's and V's
// tiles both code rows), not the int8 one above.
// AUTO-LABEL: func.func @varlen_decode
// AUTO-NOT: qattn.ring_slot
// AUTO-LABEL: func.func @paged_decode
// AUTO: qattn.load_kv_tile {{.*}}qattn.ring_slot = 0 : i64
// AUTO: scf.for
// AUTO: qattn.wait_tiles {{.*}} {pending = 1 : i64, qattn.ring_slot = 0 : i64}
// AUTO: } {qattn.key_loop, qattn.pipeline_stages = 2 : i64, qattn.static_slots}
// BAD: error: qattn-pipeline: static-slots must be auto, true or false, got 'maybe'
func.func @paged_decode(%q: tensor<?x8x1x64xf16>, %kp: tensor<?x64x64xi8>, %ks: tensor<?x2x1xf32>, %ks2: tensor<?x2x4x64xi8>, %kz2: tensor<?x2x4x64xi8>,
                        %lens: tensor<?xi32>, %table: tensor<?x?xi32>) -> tensor<?x8x1x64xf16> {
  %o = qattn.attention %q keys(%kp, %ks, %ks2, %kz2) values(%kp, %ks, %ks2, %kz2) lengths(%lens) pages(%table)
      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4], group = 16>, v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [4], group = 16>}
      : (tensor<?x8x1x64xf16>, tensor<?x64x64xi8>, tensor<?x2x1xf32>, tensor<?x2x4x64xi8>, tensor<?x2x4x64xi8>, tensor<?x64x64xi8>, tensor<?x2x1xf32>, tensor<?x2x4x64xi8>, tensor<?x2x4x64xi8>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x8x1x64xf16>
  return %o : tensor<?x8x1x64xf16>
}
