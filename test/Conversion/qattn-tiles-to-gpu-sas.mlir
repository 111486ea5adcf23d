// RUN: qattn-opt %s --qattn-tile --qattn-pipeline --qattn-convert-to-gpu --canonicalize | FileCheck %s

// SAS on the tile layer's GPU lowering: one split, a first key loop for each
// row's final max (only S^T = K Q^T, 4 mma at d = 64, and the column max),
// then a second for the terms against it (the SAS exponential: the integer
// part's LUT, the fraction's polynomial, 0 below the threshold) and P.V.
// CHECK-LABEL: func.func @sas
// CHECK: gpu.launch_func @qattn_kernels::@sas_decode_tiles blocks in (%c2, %c1, %{{.*}})
// CHECK-LABEL: gpu.func @sas_decode_tiles
// CHECK: scf.for
// CHECK-COUNT-4: nvgpu.mma.sync
// CHECK-NOT: movmatrix
// CHECK: scf.yield
// CHECK: scf.for
// CHECK: nvgpu.mma.sync
// CHECK: math.floor
// CHECK: arith.cmpf olt, %{{.*}}, %cst{{.*}} : f32
// CHECK: movmatrix.sync.aligned.m8n8.trans.b16
// CHECK: scf.yield
func.func @sas(%q: tensor<?x8x1x64xf16>, %kp: tensor<?x64x64xi8>, %ks: tensor<?x2x1xf32>, %ks2: tensor<?x2x4x64xi8>, %kz2: tensor<?x2x4x64xi8>,
               %lens: tensor<?xi32>, %table: tensor<?x?xi32>) -> tensor<?x8x1x64xf16> {
  %o = qattn.attention %q keys(%kp, %ks, %ks2, %kz2) values(%kp, %ks, %ks2, %kz2) lengths(%lens) pages(%table)
      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4], group = 16>, v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [4], group = 16>,
       softmax = #qattn.softmax<sas, threshold = -6.0, degree = 3>}
      : (tensor<?x8x1x64xf16>, tensor<?x64x64xi8>, tensor<?x2x1xf32>, tensor<?x2x4x64xi8>, tensor<?x2x4x64xi8>, tensor<?x64x64xi8>, tensor<?x2x1xf32>, tensor<?x2x4x64xi8>, tensor<?x2x4x64xi8>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x8x1x64xf16>
  return %o : tensor<?x8x1x64xf16>
}
