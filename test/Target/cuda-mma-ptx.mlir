// RUN: rm -rf %t && qattn-compile %s -o %t --target=cuda --no-cubin > /dev/null
// RUN: FileCheck %s --input-file=%t/module.ptx

// The stage kernel, then the tensor-core instructions that must be in the
// mma.sync prefill kernel's PTX (in any order: LLVM rotates the tile loop);
// qattn-tile would take the wgmma kernel at d = 128 (cuda-wgmma-ptx.mlir).
// CHECK: .target sm_90a
// CHECK: .entry prefill_prefill_stage(
// CHECK: .entry prefill_attention_mma(
// CHECK-DAG: cp.async.ca.shared.global
// CHECK-DAG: cp.async.wait_group
// CHECK-DAG: bar.sync
// CHECK-DAG: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK-DAG: mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32
// CHECK-DAG: shfl.sync.bfly.b32
// CHECK-DAG: ex2.approx.ftz.f32
// CHECK-DAG: cvt.rn.f16x2.f32
// CHECK-DAG: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// CHECK-DAG: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32

func.func @prefill(%q8: tensor<1x8x1000x128xi8>, %qs: tensor<1x8x16xf32>, %kp: tensor<1x1000x128xi8>, %ks: tensor<1x2x16xf32>, %kg: tensor<1x2x63x128xi8>, %kz: tensor<1x2x63x128xi8>) -> tensor<1x8x1000x128xbf16> {
  %o = qattn.attention %q8 [%qs] keys(%kp, %ks, %kg, %kz) values(%kp, %ks, %kg, %kz)
      {q_stage1 = #qattn.stage1<block = 64>, k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4], group = 16>,
       v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [4], group = 16>, causal,
       gpu_tiling = #qattn.gpu_tiling<warps = 4, splits = 1, kernel = mma, stages = 2>}
      : (tensor<1x8x1000x128xi8>, tensor<1x8x16xf32>, tensor<1x1000x128xi8>, tensor<1x2x16xf32>, tensor<1x2x63x128xi8>, tensor<1x2x63x128xi8>, tensor<1x1000x128xi8>, tensor<1x2x16xf32>, tensor<1x2x63x128xi8>, tensor<1x2x63x128xi8>) -> tensor<1x8x1000x128xbf16>
  return %o : tensor<1x8x1000x128xbf16>
}
