// RUN: rm -rf %t && qattn-compile %s -o %t --target=cuda --no-cubin > /dev/null
// RUN: FileCheck %s --input-file=%t/module.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t/module.ptx -o %t/e4m3.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}
// qattn-compile --pv-e4m3 asks qattn-tile for it (here on an op without a tiling).
// RUN: rm -rf %t && qattn-compile %S/cuda-wgmma-ptx.mlir -o %t --target=cuda --no-cubin --pv-e4m3 > /dev/null
// RUN: FileCheck %s --input-file=%t/module.ptx --check-prefix=FLAG
// FLAG: .entry prefill_attention_wgmma_e4m3(
// FLAG: wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3

// The wgmma prefill kernel with P.V on fp8 (pv = e4m3): the stage kernel
// rounds V's int8 codes to e4m3 bytes; the attention kernel (named for its
// reduced precision) packs P into e4m3 pairs and runs P.V as wgmma
// m64n128k32 e4m3 (two k steps per 64-key tile, not four), with the tile's
// V scale folded into the exponent (lg2). It asks for room for 4 CTAs per
// SM, all that its shared memory holds: 128 registers, with a few spilled
// (faster on the H200 than 146 registers at 3 CTAs), and no serialized
// wgmmas.
// CHECK: .entry prefill_prefill_stage(
// CHECK: cvt.rn.satfinite.e4m3x2.f32
// CHECK: st.global.v4.b32
// CHECK: .entry prefill_attention_wgmma_e4m3(
// CHECK: .minnctapersm 4
// CHECK-DAG: lg2.approx.ftz.f32
// CHECK-DAG: cvt.rn.satfinite.e4m3x2.f32
// CHECK-DAG: wgmma.mma_async.sync.aligned.m64n64k32.s32.s8.s8
// CHECK-DAG: wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 {{{.*}}}, {{{.*}}}, %rd{{[0-9]+}}, p, 1, 1;
// CHECK-NOT: m64n128k16
// PTXAS-NOT: C75
// PTXAS: Compiling entry function 'prefill_attention_wgmma_e4m3' for 'sm_90a'
// PTXAS-NOT: C75
// PTXAS: Used 128 registers

func.func @prefill(%q8: tensor<1x8x1000x128xi8>, %qs: tensor<1x8x16xf32>, %kp: tensor<1x1000x128xi8>, %ks: tensor<1x2x16xf32>, %kg: tensor<1x2x63x128xi8>, %kz: tensor<1x2x63x128xi8>) -> tensor<1x8x1000x128xbf16> {
  %o = qattn.attention %q8 [%qs] keys(%kp, %ks, %kg, %kz) values(%kp, %ks, %kg, %kz)
      {q_stage1 = #qattn.stage1<block = 64>, k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4], group = 16>,
       v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [4], group = 16>, causal,
       gpu_tiling = #qattn.gpu_tiling<warps = 4, splits = 1, kernel = wgmma, stages = 2, pv = e4m3>}
      : (tensor<1x8x1000x128xi8>, tensor<1x8x16xf32>, tensor<1x1000x128xi8>, tensor<1x2x16xf32>, tensor<1x2x63x128xi8>, tensor<1x2x63x128xi8>, tensor<1x1000x128xi8>, tensor<1x2x16xf32>, tensor<1x2x63x128xi8>, tensor<1x2x63x128xi8>) -> tensor<1x8x1000x128xbf16>
  return %o : tensor<1x8x1000x128xbf16>
}
