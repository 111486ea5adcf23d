// RUN: qattn-opt %s -split-input-file --qattn-assign-head-bits | FileCheck %s
// RUN: qattn-opt %s -split-input-file --qattn-assign-head-bits="num-low=1 low-bits=3" | FileCheck %s --check-prefix=ONE

// Priorities gap x std: 10, 1.5, 40, 4 -> heads 1 and 3 are the two lowest
// (half of 4) and go to 2 bits; the codes' rows shrink from 128 to 96 bytes
// and the attention reading them learns the new scheme.
// CHECK-LABEL: func.func @four_heads
// CHECK: qattn.progressive_quantize %{{.*}} {scheme = #qattn.stage2<bits = [4, 2, 4, 2], group = 16>} : tensor<1x4x64x64xi8> -> tensor<1x64x96xi8>
// CHECK-NOT: qattn.head_stats
// CHECK: k_stage2 = #qattn.stage2<bits = [4, 2, 4, 2], group = 16>
// ONE-LABEL: func.func @four_heads
// ONE: {scheme = #qattn.stage2<bits = [4, 3, 4, 4], group = 16>} : tensor<1x4x64x64xi8> -> tensor<1x64x120xi8>
func.func @four_heads(%q: tensor<1x4x1x64xf32>, %k8: tensor<1x4x64x64xi8>, %ks: tensor<1x4x1xf32>) -> tensor<1x4x1x64xf32> {
  %p, %s, %z = qattn.progressive_quantize %k8 {scheme = #qattn.stage2<bits = [4], group = 16>,
      qattn.head_stats = {gaps = array<f64: 5.0, 3.0, 8.0, 2.0>, gap_stds = array<f64: 2.0, 0.5, 5.0, 2.0>}}
      : tensor<1x4x64x64xi8> -> tensor<1x64x128xi8>, tensor<1x4x4x64xi8>, tensor<1x4x4x64xi8>
  %o = qattn.attention %q keys(%p, %ks, %s, %z) values(%k8, %ks)
      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4], group = 16>, v_stage1 = #qattn.stage1<block = 64>}
      : (tensor<1x4x1x64xf32>, tensor<1x64x128xi8>, tensor<1x4x1xf32>, tensor<1x4x4x64xi8>, tensor<1x4x4x64xi8>, tensor<1x4x64x64xi8>, tensor<1x4x1xf32>) -> tensor<1x4x1x64xf32>
  return %o : tensor<1x4x1x64xf32>
}

// -----

// Without statistics nothing changes.
// CHECK-LABEL: func.func @no_stats
// CHECK: {scheme = #qattn.stage2<bits = [4], group = 16>}
func.func @no_stats(%k8: tensor<1x2x16x64xi8>) -> tensor<1x2x1x64xi8> {
  %p, %s, %z = qattn.progressive_quantize %k8 {scheme = #qattn.stage2<bits = [4], group = 16>}
      : tensor<1x2x16x64xi8> -> tensor<1x16x64xi8>, tensor<1x2x1x64xi8>, tensor<1x2x1x64xi8>
  return %s : tensor<1x2x1x64xi8>
}
