// RUN: rm -rf %t && qattn-compile %s -o %t --target=cuda --no-cubin > /dev/null
// RUN: FileCheck %s --input-file=%t/module.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t/module.ptx -o %t/producer.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}

// The wgmma prefill kernel with a producer warpgroup (qattn-tile's choice
// for this causal grid of 4096 queries with f16 P.V): 384 threads, one CTA
// per SM so that ptxas knows the register count at entry (168) and honours
// setmaxnreg; the producer drops to 24 registers and refills the ring
// alone, waiting on the empty barriers, the other two warpgroups take 240.
// Their loop issues the next tile's QK^T and this tile's P.V together and
// waits for the first alone (wait_group 1) before the softmax.
// CHECK: .entry prefill_attention_wgmma(
// CHECK-DAG: .maxntid 384, 1, 1
// CHECK-DAG: .minnctapersm 1
// CHECK-DAG: setmaxnreg.dec.sync.aligned.u32 24;
// CHECK-DAG: setmaxnreg.inc.sync.aligned.u32 240;
// CHECK-DAG: cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes
// CHECK-DAG: wgmma.mma_async.sync.aligned.m64n64k32.s32.s8.s8
// CHECK-DAG: wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16
// CHECK-DAG: wgmma.wait_group.sync.aligned 1;
// CHECK-DAG: wgmma.wait_group.sync.aligned 0;
// No spill; no C7508 (setmaxnreg ignored) or C7514 (wgmma serialized).
// PTXAS-NOT: C75
// PTXAS: Compiling entry function 'prefill_attention_wgmma' for 'sm_90a'
// PTXAS-NOT: C75
// PTXAS: 0 bytes spill stores, 0 bytes spill loads
// PTXAS-NEXT: Used 168 registers

func.func @prefill(%q8: tensor<1x8x4096x128xi8>, %qs: tensor<1x8x64xf32>, %kp: tensor<1x4096x128xi8>, %ks: tensor<1x2x64xf32>, %kg: tensor<1x2x256x128xi8>, %kz: tensor<1x2x256x128xi8>) -> tensor<1x8x4096x128xbf16> {
  %o = qattn.attention %q8 [%qs] keys(%kp, %ks, %kg, %kz) values(%kp, %ks, %kg, %kz)
      {q_stage1 = #qattn.stage1<block = 64>, k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4], group = 16>,
       v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [4], group = 16>, causal}
      : (tensor<1x8x4096x128xi8>, tensor<1x8x64xf32>, tensor<1x4096x128xi8>, tensor<1x2x64xf32>, tensor<1x2x256x128xi8>, tensor<1x2x256x128xi8>, tensor<1x4096x128xi8>, tensor<1x2x64xf32>, tensor<1x2x256x128xi8>, tensor<1x2x256x128xi8>) -> tensor<1x8x4096x128xbf16>
  return %o : tensor<1x8x4096x128xbf16>
}
