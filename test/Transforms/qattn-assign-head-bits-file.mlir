// RUN: qattn-opt %s -split-input-file --qattn-assign-head-bits="stats-file=%S/Inputs/head-stats.json" | FileCheck %s
// RUN: not qattn-opt %s --qattn-assign-head-bits 2>&1 | FileCheck %s --check-prefix=NOFILE
// RUN: not qattn-opt %s --qattn-assign-head-bits="stats-file=%S/Inputs/missing.json" 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not qattn-opt %s --qattn-assign-head-bits="stats-file=%s" 2>&1 | FileCheck %s --check-prefix=NOTJSON

// Statistics from a file, named by the ops: layer0.k has the priorities of
// qattn-assign-head-bits.mlir's @four_heads (heads 1 and 3 low), layer0.v
// 1, 9, 1, 9 (heads 0 and 2 low).
// CHECK-LABEL: func.func @from_file
// CHECK: qattn.progressive_quantize %{{.*}} {scheme = #qattn.stage2<bits = [4, 2, 4, 2], group = 16>}
// CHECK: qattn.progressive_quantize %{{.*}} {scheme = #qattn.stage2<bits = [2, 4, 2, 4], group = 16>}
// CHECK-NOT: qattn.head_stats
// NOFILE: error: 'qattn.progressive_quantize' op names statistics "layer0.k" but no stats-file was given
// MISSING: error: qattn-assign-head-bits: cannot read {{.*}}missing.json: {{.*}}
// NOTJSON: error: qattn-assign-head-bits: {{.*}} is not JSON: {{.*}}
func.func @from_file(%k8: tensor<1x4x64x64xi8>) -> (tensor<1x4x4x64xi8>, tensor<1x4x4x64xi8>) {
  %p, %s, %z = qattn.progressive_quantize %k8 {scheme = #qattn.stage2<bits = [4], group = 16>, qattn.head_stats = "layer0.k"}
      : tensor<1x4x64x64xi8> -> tensor<1x64x128xi8>, tensor<1x4x4x64xi8>, tensor<1x4x4x64xi8>
  %p2, %s2, %z2 = qattn.progressive_quantize %k8 {scheme = #qattn.stage2<bits = [4], group = 16>, qattn.head_stats = "layer0.v"}
      : tensor<1x4x64x64xi8> -> tensor<1x64x128xi8>, tensor<1x4x4x64xi8>, tensor<1x4x4x64xi8>
  return %s, %s2 : tensor<1x4x4x64xi8>, tensor<1x4x4x64xi8>
}
