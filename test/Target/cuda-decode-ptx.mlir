// RUN: rm -rf %t && qattn-compile %s -o %t --target=cuda --no-cubin > /dev/null
// RUN: FileCheck %s --input-file=%t/module.ptx
// RUN: FileCheck %s --input-file=%t/module.ptx --check-prefix=DEQUANT
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t/module.ptx -o %t/decode.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}

// A static 4-bit GQA decode (4 query heads per KV head, one query) goes
// through the tile layer (qattn-tile's default): the grid kernel asks for
// 12 warps per SM, streams the packed cache through the cp.async ring (the
// codes with an L2 prefetch of the whole 128-byte line, the group
// constants without), runs S^T = K Q^T and O^T += V^T P^T on mma.sync
// m16n8k16 with P^T moved by movmatrix, and merges the key slices in the
// combine kernel. A code is masked and given the exponent of 1024 by one
// lop3 ((x & 0x000f000f) ^ magic: 983055 is the mask of the low nibbles).
// CHECK: .target sm_90a
// CHECK: .entry attention_decode_tiles(
// CHECK: .minnctapersm 12
// CHECK-DAG: cp.async.cg.shared.global.L2::128B [%r{{[0-9]+}}], [g], 16;
// CHECK-DAG: cp.async.cg.shared.global [%r{{[0-9]+}}], [g], 16;
// CHECK-DAG: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// CHECK-DAG: movmatrix.sync.aligned.m8n8.trans.b16
// CHECK-DAG: lop3.b32 %r{{[0-9]+}}, %r{{[0-9]+}}, 983055, %r{{[0-9]+}}, 0x6a;
// CHECK-DAG: ex2.approx.ftz.f32
// CHECK: .entry attention_combine_tiles(

// Low nibbles take a subtract and a multiply; high nibbles (M = 16) one FMA
// on the masked code (mask 15728880 = 0x00f000f0) with the staged constant
// c = -(64 + z2) s2.
// DEQUANT: .entry attention_decode_tiles(
// DEQUANT: lop3.b32 [[LOW:%r[0-9]+]], %r{{[0-9]+}}, 983055, %r{{[0-9]+}}, 0x6a;
// DEQUANT-NEXT: // end inline asm
// DEQUANT-NEXT: sub.rn.f16x2 [[DIFF:%r[0-9]+]], [[LOW]], %r{{[0-9]+}};
// DEQUANT-NEXT: mul.rn.f16x2 {{.*}}[[DIFF]]{{(,|;)}}
// DEQUANT: lop3.b32 [[HIGH:%r[0-9]+]], %r{{[0-9]+}}, 15728880, %r{{[0-9]+}}, 0x6a;
// DEQUANT-NEXT: // end inline asm
// DEQUANT-NEXT: fma.rn.f16x2 %r{{[0-9]+}}, [[HIGH]], %r{{[0-9]+}}, %r{{[0-9]+}};
// DEQUANT-NOT: sub.rn.f16x2 %r{{[0-9]+}}, [[HIGH]],

// ptxas fits the grid kernel in the 168 registers behind 12 warps per SM,
// without local-memory spills.
// PTXAS: Compiling entry function 'attention_decode_tiles' for 'sm_90a'
// PTXAS-NEXT: Function properties for attention_decode_tiles
// PTXAS-NEXT: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// PTXAS-NEXT: Used {{([0-9]|[1-9][0-9]|1[0-5][0-9]|16[0-8])}} registers

func.func @attention(%q8: tensor<1x32x1x128xi8>, %qs: tensor<1x32x1xf32>, %kp: tensor<1x1024x512xi8>, %ks: tensor<1x8x16xf32>, %kg: tensor<1x8x64x128xi8>, %kz: tensor<1x8x64x128xi8>, %vp: tensor<1x1024x512xi8>, %vs: tensor<1x8x16xf32>, %vg: tensor<1x8x64x128xi8>, %vz: tensor<1x8x64x128xi8>) -> tensor<1x32x1x128xf32> {
  %o = qattn.attention %q8 [%qs] keys(%kp, %ks, %kg, %kz) values(%vp, %vs, %vg, %vz) {k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>, q_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4], group = 16, order = lsb_first>, v_stage2 = #qattn.stage2<bits = [4], group = 16, order = lsb_first>}
      : (tensor<1x32x1x128xi8>, tensor<1x32x1xf32>, tensor<1x1024x512xi8>, tensor<1x8x16xf32>, tensor<1x8x64x128xi8>, tensor<1x8x64x128xi8>, tensor<1x1024x512xi8>, tensor<1x8x16xf32>, tensor<1x8x64x128xi8>, tensor<1x8x64x128xi8>) -> tensor<1x32x1x128xf32>
  return %o : tensor<1x32x1x128xf32>
}
