// RUN: qattn-opt %s -split-input-file --qattn-pipeline="num-stages=2" | FileCheck %s
// RUN: qattn-opt %s -split-input-file --qattn-pipeline | FileCheck %s --check-prefix=ONE
// RUN: not qattn-opt %s -split-input-file --qattn-pipeline="num-stages=3" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: qattn-opt %s -split-input-file --qattn-pipeline="num-stages=1" | FileCheck %s --check-prefix=SET1

// The warp kernel's key stream gets two stages with num-stages=2; the default
// keeps the depth qattn-tile chose.
// CHECK-LABEL: func.func @warp_kernel
// CHECK: gpu_tiling = #qattn.gpu_tiling<warps = 4, splits = 7, stages = 2>
// ONE-LABEL: func.func @warp_kernel
// ONE: gpu_tiling = #qattn.gpu_tiling<warps = 4, splits = 7>
// BAD: error: 'qattn.attention' op qattn-pipeline: expected 1 to 2 stages for the rows kernel, got 3
func.func @warp_kernel(%q: tensor<1x8x1x64xf32>, %k: tensor<1x2x2000x64xi8>, %ks: tensor<1x2x32xf32>) -> tensor<1x8x1x64xf32> {
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) {k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>, gpu_tiling = #qattn.gpu_tiling<warps = 4, splits = 7>}
      : (tensor<1x8x1x64xf32>, tensor<1x2x2000x64xi8>, tensor<1x2x32xf32>, tensor<1x2x2000x64xi8>, tensor<1x2x32xf32>) -> tensor<1x8x1x64xf32>
  return %o : tensor<1x8x1x64xf32>
}

// -----

// The prefill tensor-core kernel keeps qattn-tile's depth by default and
// takes num-stages (up to 4: its ring is in shared memory).
// CHECK-LABEL: func.func @mma_kernel
// CHECK: gpu_tiling = #qattn.gpu_tiling<warps = 8, splits = 1, kernel = mma, stages = 2>
// ONE-LABEL: func.func @mma_kernel
// ONE: gpu_tiling = #qattn.gpu_tiling<warps = 8, splits = 1, kernel = mma, stages = 3>
// SET1-LABEL: func.func @mma_kernel
// SET1: gpu_tiling = #qattn.gpu_tiling<warps = 8, splits = 1, kernel = mma>
func.func @mma_kernel(%q: tensor<1x4x256x64xi8>, %qs: tensor<1x4x4xf32>, %k: tensor<1x4x256x64xi8>, %ks: tensor<1x4x4xf32>) -> tensor<1x4x256x64xf32> {
  %o = qattn.attention %q [%qs] keys(%k, %ks) values(%k, %ks) {q_stage1 = #qattn.stage1<block = 64>, k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>, gpu_tiling = #qattn.gpu_tiling<warps = 8, splits = 1, kernel = mma, stages = 3>}
      : (tensor<1x4x256x64xi8>, tensor<1x4x4xf32>, tensor<1x4x256x64xi8>, tensor<1x4x4xf32>, tensor<1x4x256x64xi8>, tensor<1x4x4xf32>) -> tensor<1x4x256x64xf32>
  return %o : tensor<1x4x256x64xf32>
}
