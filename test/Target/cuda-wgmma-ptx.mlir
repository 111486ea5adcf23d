// RUN: rm -rf %t && qattn-compile %s -o %t --target=cuda --no-cubin > /dev/null
// RUN: FileCheck %s --input-file=%t/module.ptx

// qattn-tile's choice for a d = 128 prefill: the warpgroup kernel. Its PTX
// holds the transposed-V stage kernel, then (in any order: LLVM rotates the
// tile loop) the ring's mbarriers and bulk copies, waited for by parity,
// with no cp.async and no CTA barrier in the loop, QK^T on wgmma s8 with the
// queries in shared memory (copied there once and fenced for the async
// proxy), the softmax, and P.V on wgmma f16 with P from registers, each group
// waited for. The kernel asks for room for 3 CTAs per SM, all that its
// shared memory allows.
// CHECK: .target sm_90a
// CHECK: .entry prefill_prefill_stage(
// CHECK: st.global.v4.b32
// CHECK: .entry prefill_attention_wgmma(
// CHECK-DAG: mbarrier.init.shared::cta.b64
// CHECK-DAG: mbarrier.arrive.expect_tx.shared::cta.b64
// CHECK-DAG: cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes
// CHECK-DAG: mbarrier.try_wait.parity.shared::cta.b64
// CHECK-DAG: wgmma.fence.sync.aligned
// CHECK-DAG: .minnctapersm 3
// CHECK-DAG: fence.proxy.async.shared::cta
// CHECK-DAG: wgmma.mma_async.sync.aligned.m64n64k32.s32.s8.s8 {{{.*}}}, %rd{{[0-9]+}}, %rd{{[0-9]+}}, p;
// CHECK-DAG: wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {{{.*}}}, {{{.*}}}, %rd{{[0-9]+}}, p, 1, 1, 0;
// CHECK-DAG: wgmma.commit_group.sync.aligned
// CHECK-DAG: wgmma.wait_group.sync.aligned 0
// CHECK-DAG: ex2.approx.ftz.f32
// CHECK-DAG: cvt.rn.f16x2.f32
// CHECK-NOT: ldmatrix
// CHECK-NOT: cp.async.ca

func.func @prefill(%q8: tensor<1x8x1000x128xi8>, %qs: tensor<1x8x16xf32>, %kp: tensor<1x1000x128xi8>, %ks: tensor<1x2x16xf32>, %kg: tensor<1x2x63x128xi8>, %kz: tensor<1x2x63x128xi8>) -> tensor<1x8x1000x128xbf16> {
  %o = qattn.attention %q8 [%qs] keys(%kp, %ks, %kg, %kz) values(%kp, %ks, %kg, %kz)
      {q_stage1 = #qattn.stage1<block = 64>, k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4], group = 16>,
       v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [4], group = 16>, causal}
      : (tensor<1x8x1000x128xi8>, tensor<1x8x16xf32>, tensor<1x1000x128xi8>, tensor<1x2x16xf32>, tensor<1x2x63x128xi8>, tensor<1x2x63x128xi8>, tensor<1x1000x128xi8>, tensor<1x2x16xf32>, tensor<1x2x63x128xi8>, tensor<1x2x63x128xi8>) -> tensor<1x8x1000x128xbf16>
  return %o : tensor<1x8x1000x128xbf16>
}
