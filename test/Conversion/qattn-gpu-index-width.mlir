// RUN: qattn-opt %s -split-input-file --qattn-convert-to-gpu | FileCheck %s

// The warpgroup kernel with e4m3 P.V gets 32-bit indices (the kernel
// module's data layout, which convert-gpu-to-nvvm follows): every buffer has
// fewer than 2^31 bytes. The bulk copies' global addresses come from the
// memrefs' descriptors (64-bit pointers), not from an index, which would
// lose their upper half; shared addresses still come as indices.
// CHECK-LABEL: func.func @e4m3
// CHECK: gpu.module @qattn_kernels attributes {dlti.dl_spec = #dlti.dl_spec<index = 32 : i64>}
// CHECK: gpu.func @e4m3_attention_wgmma_e4m3(
// CHECK: memref.extract_aligned_pointer_as_index %{{.*}} : memref<16384xi8, #gpu.address_space<workgroup>>
// CHECK: %[[DESC:.*]] = builtin.unrealized_conversion_cast %arg6 : memref<1x2x320x128xi8> to !llvm.struct<(ptr, ptr, i32, array<4 x i32>, array<4 x i32>)>
// CHECK-NEXT: %[[PTR:.*]] = llvm.extractvalue %[[DESC]][1]
// CHECK-NEXT: %[[ADDR:.*]] = llvm.ptrtoint %[[PTR]] : !llvm.ptr to i64
// CHECK: arith.addi %[[ADDR]], %{{.*}} : i64
// CHECK: cp.async.bulk.shared::cluster.global
// CHECK-NOT: memref.extract_aligned_pointer_as_index %arg
func.func @e4m3(%q8: tensor<1x4x300x128xi8>, %qs: tensor<1x4x5xf32>, %k: tensor<1x2x300x128xi8>, %ks: tensor<1x2x5xf32>) -> tensor<1x4x300x128xf32> {
  %o = qattn.attention %q8 [%qs] keys(%k, %ks) values(%k, %ks)
      {q_stage1 = #qattn.stage1<block = 64>, k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>, causal,
       gpu_tiling = #qattn.gpu_tiling<warps = 4, splits = 1, kernel = wgmma, stages = 2, pv = e4m3>}
      : (tensor<1x4x300x128xi8>, tensor<1x4x5xf32>, tensor<1x2x300x128xi8>, tensor<1x2x5xf32>, tensor<1x2x300x128xi8>, tensor<1x2x5xf32>) -> tensor<1x4x300x128xf32>
  return %o : tensor<1x4x300x128xf32>
}

// -----

// So does the warpgroup kernel at d = 64, f16 P.V.
// CHECK-LABEL: func.func @d64
// CHECK: gpu.module @qattn_kernels attributes {dlti.dl_spec = #dlti.dl_spec<index = 32 : i64>}
func.func @d64(%q8: tensor<1x4x300x64xi8>, %qs: tensor<1x4x5xf32>, %k: tensor<1x2x300x64xi8>, %ks: tensor<1x2x5xf32>) -> tensor<1x4x300x64xf32> {
  %o = qattn.attention %q8 [%qs] keys(%k, %ks) values(%k, %ks)
      {q_stage1 = #qattn.stage1<block = 64>, k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>,
       gpu_tiling = #qattn.gpu_tiling<warps = 4, splits = 1, kernel = wgmma, stages = 3>}
      : (tensor<1x4x300x64xi8>, tensor<1x4x5xf32>, tensor<1x2x300x64xi8>, tensor<1x2x5xf32>, tensor<1x2x300x64xi8>, tensor<1x2x5xf32>) -> tensor<1x4x300x64xf32>
  return %o : tensor<1x4x300x64xf32>
}

// -----

// f16 P.V at d = 128 keeps 64-bit indices (ptxas scheduled it worse
// narrowed), and its global addresses come from indices.
// CHECK-LABEL: func.func @f16_d128
// CHECK: gpu.module @qattn_kernels {
// CHECK: %[[K:.*]] = memref.extract_aligned_pointer_as_index %arg6 : memref<1x2x320x128xi8> -> index
// CHECK-NEXT: arith.index_castui %[[K]] : index to i64
func.func @f16_d128(%q8: tensor<1x4x300x128xi8>, %qs: tensor<1x4x5xf32>, %k: tensor<1x2x300x128xi8>, %ks: tensor<1x2x5xf32>) -> tensor<1x4x300x128xf32> {
  %o = qattn.attention %q8 [%qs] keys(%k, %ks) values(%k, %ks)
      {q_stage1 = #qattn.stage1<block = 64>, k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>,
       gpu_tiling = #qattn.gpu_tiling<warps = 4, splits = 1, kernel = wgmma, stages = 2>}
      : (tensor<1x4x300x128xi8>, tensor<1x4x5xf32>, tensor<1x2x300x128xi8>, tensor<1x2x5xf32>, tensor<1x2x300x128xi8>, tensor<1x2x5xf32>) -> tensor<1x4x300x128xf32>
  return %o : tensor<1x4x300x128xf32>
}

// -----

// A buffer of 2^31 elements (the queries: 256 heads x 64K x 128) could
// overflow a 32-bit linearized index: 64 bits stay.
// CHECK-LABEL: func.func @huge
// CHECK: gpu.module @qattn_kernels {
func.func @huge(%q8: tensor<1x256x65536x128xi8>, %qs: tensor<1x256x1024xf32>, %k: tensor<1x2x65536x128xi8>, %ks: tensor<1x2x1024xf32>) -> tensor<1x256x65536x128xf32> {
  %o = qattn.attention %q8 [%qs] keys(%k, %ks) values(%k, %ks)
      {q_stage1 = #qattn.stage1<block = 64>, k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>,
       gpu_tiling = #qattn.gpu_tiling<warps = 4, splits = 1, kernel = wgmma, stages = 2, pv = e4m3>}
      : (tensor<1x256x65536x128xi8>, tensor<1x256x1024xf32>, tensor<1x2x65536x128xi8>, tensor<1x2x1024xf32>, tensor<1x2x65536x128xi8>, tensor<1x2x1024xf32>) -> tensor<1x256x65536x128xf32>
  return %o : tensor<1x256x65536x128xf32>
}

// -----

// Fewer than 2^31 elements everywhere, but the f32 output is 4 GiB (2^30
// elements): its byte offsets would overflow 32 bits, so 64 bits stay.
// CHECK-LABEL: func.func @bytes
// CHECK: gpu.module @qattn_kernels {
func.func @bytes(%q8: tensor<1x128x65536x128xi8>, %qs: tensor<1x128x1024xf32>, %k: tensor<1x2x65536x128xi8>, %ks: tensor<1x2x1024xf32>) -> tensor<1x128x65536x128xf32> {
  %o = qattn.attention %q8 [%qs] keys(%k, %ks) values(%k, %ks)
      {q_stage1 = #qattn.stage1<block = 64>, k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>,
       gpu_tiling = #qattn.gpu_tiling<warps = 4, splits = 1, kernel = wgmma, stages = 2, pv = e4m3>}
      : (tensor<1x128x65536x128xi8>, tensor<1x128x1024xf32>, tensor<1x2x65536x128xi8>, tensor<1x2x1024xf32>, tensor<1x2x65536x128xi8>, tensor<1x2x1024xf32>) -> tensor<1x128x65536x128xf32>
  return %o : tensor<1x128x65536x128xf32>
}
