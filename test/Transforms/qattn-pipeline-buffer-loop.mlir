// RUN: qattn-opt %s --qattn-tile --qattn-pipeline --canonicalize | FileCheck %s
// RUN: qattn-opt %s --qattn-tile --qattn-pipeline=num-stages=3 --canonicalize | FileCheck %s --check-prefix=THREE

// qattn-pipeline leaves the decode buffer's loop as qattn-tile wrote it (at
// most a page's tiles, loaded into registers: qattn.pipeline_stages = 1),
// whatever depth it gives the cache's loop.
// CHECK-LABEL: func.func @buffered_decode
// CHECK: scf.for %{{.*}} iter_args
// CHECK:   qattn.load_kv_tile
// CHECK:   qattn.wait_tiles {{.*}} {pending = 1 : i64}
// CHECK: } {qattn.key_loop, qattn.pipeline_stages = 2 : i64}
// CHECK: scf.for %{{.*}} iter_args
// CHECK-NOT: qattn.wait_tiles
// CHECK: qattn.load_kv_tile %{{.*}}, %{{.*}}[%{{.*}}] bound
// CHECK-NOT: qattn.wait_tiles
// CHECK: } {qattn.key_loop, qattn.pipeline_stages = 1 : i64}
// THREE: qattn.wait_tiles {{.*}} {pending = 2 : i64}
// THREE: } {qattn.key_loop, qattn.pipeline_stages = 3 : i64}
// THREE: } {qattn.key_loop, qattn.pipeline_stages = 1 : i64}
func.func @buffered_decode(%q: tensor<?x4x1x64xf32>, %k: tensor<?x2x?x64xi8>, %ks: tensor<?x2x?xf32>, %v: tensor<?x2x?x64xi8>, %vs: tensor<?x2x?xf32>,
                           %kb: tensor<?x2x64x64xi8>, %kbs: tensor<?x2xf32>, %vb: tensor<?x2x64x64xi8>, %vbs: tensor<?x2xf32>, %lens: tensor<?xi32>) -> tensor<?x4x1x64xf32> {
  %o = qattn.attention %q keys(%k, %ks) values(%v, %vs) buffers(%kb, %kbs, %vb, %vbs) lengths(%lens) {k_stage1 = #qattn.stage1<block = 32>, v_stage1 = #qattn.stage1<block = 32>}
      : (tensor<?x4x1x64xf32>, tensor<?x2x?x64xi8>, tensor<?x2x?xf32>, tensor<?x2x?x64xi8>, tensor<?x2x?xf32>, tensor<?x2x64x64xi8>, tensor<?x2xf32>, tensor<?x2x64x64xi8>, tensor<?x2xf32>, tensor<?xi32>) -> tensor<?x4x1x64xf32>
  return %o : tensor<?x4x1x64xf32>
}
