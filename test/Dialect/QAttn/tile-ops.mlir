// RUN: qattn-opt %s | qattn-opt | FileCheck %s
// RUN: qattn-opt %s --mlir-print-op-generic | qattn-opt | FileCheck %s

// One step of a decode tile program: load the query rows and a paged
// stage-2 key tile, dequantize it, score it, fold it into the online softmax.
// CHECK-LABEL: func.func @tile_step
// CHECK: qattn.load_query_tile %{{.*}} [%{{.*}}, %{{.*}}, %{{.*}}] {group = 4 : i64, layout = #qattn.fragment<mma_queries_b>} : tensor<?x8x1x64xf16> -> tensor<16x64xf32>
// CHECK: qattn.load_kv_tile %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] bound %{{.*}} pages(%{{.*}} : tensor<?x?xi32>) {keys = 16 : i64, stage1 = #qattn.stage1<block = 64>, stage2 = #qattn.stage2<bits = [4, 2], group = 16>} : (tensor<?x64x48xi8>, tensor<?x2x1xf32>, tensor<?x2x4x64xi8>, tensor<?x2x4x64xi8>) -> (tensor<16x32xi8>, tensor<1x64xi8>, tensor<1x64xi8>, tensor<16xf32>)
// CHECK: qattn.wait_tiles %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {pending = 1 : i64} : tensor<16x32xi8>, tensor<1x64xi8>, tensor<1x64xi8>, tensor<16xf32>
// CHECK: qattn.dequantize_tile %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} head(%{{.*}}) {layout = #qattn.fragment<mma_keys_a>, stage2 = #qattn.stage2<bits = [4, 2], group = 16>} : tensor<16x32xi8>, tensor<1x64xi8>, tensor<1x64xi8>, tensor<16xf32> -> tensor<16x64xf32>
// CHECK: qattn.tile_scores %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}] bound %{{.*}} length %{{.*}} {causal, group = 4 : i64, queries = 1 : i64, scale = 1.250000e-01 : f32} : tensor<16x64xf32>, tensor<16x64xf32> -> tensor<16x16xf32>
// CHECK: %[[M1:.*]], %[[L1:.*]], %[[A1:.*]] = qattn.softmax_update %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<16x16xf32>, tensor<16x64xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16x64xf32>
// CHECK: qattn.softmax_update %{{.*}}, %{{.*}}, %[[M1]], %[[L1]], %[[A1]] {lazy_max = 5.500000e+00 : f32} : tensor<16x16xf32>, tensor<16x64xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16x64xf32>
func.func @tile_step(%q: tensor<?x8x1x64xf16>, %kp: tensor<?x64x48xi8>, %ks: tensor<?x2x1xf32>, %ks2: tensor<?x2x4x64xi8>, %kz2: tensor<?x2x4x64xi8>,
                     %table: tensor<?x?xi32>, %b: index, %hk: index, %rt: index, %j: index, %end: index, %len: index,
                     %m: tensor<16xf32>, %l: tensor<16xf32>, %acc: tensor<16x64xf32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<16x64xf32>) {
  %qt = qattn.load_query_tile %q [%b, %hk, %rt] {group = 4, layout = #qattn.fragment<mma_queries_b>} : tensor<?x8x1x64xf16> -> tensor<16x64xf32>
  %c, %s2, %z2, %s1 = qattn.load_kv_tile %kp, %ks, %ks2, %kz2 [%b, %hk, %j] bound %end pages(%table : tensor<?x?xi32>)
      {keys = 16, stage1 = #qattn.stage1<block = 64>, stage2 = #qattn.stage2<bits = [4, 2], group = 16>}
      : (tensor<?x64x48xi8>, tensor<?x2x1xf32>, tensor<?x2x4x64xi8>, tensor<?x2x4x64xi8>) -> (tensor<16x32xi8>, tensor<1x64xi8>, tensor<1x64xi8>, tensor<16xf32>)
  %w:4 = qattn.wait_tiles %c, %s2, %z2, %s1 {pending = 1} : tensor<16x32xi8>, tensor<1x64xi8>, tensor<1x64xi8>, tensor<16xf32>
  %k = qattn.dequantize_tile %w#0, %w#1, %w#2, %w#3 head(%hk) {stage2 = #qattn.stage2<bits = [4, 2], group = 16>, layout = #qattn.fragment<mma_keys_a>}
      : tensor<16x32xi8>, tensor<1x64xi8>, tensor<1x64xi8>, tensor<16xf32> -> tensor<16x64xf32>
  %s = qattn.tile_scores %qt, %k [%rt, %j] bound %end length %len {scale = 0.125 : f32, group = 4, queries = 1, causal}
      : tensor<16x64xf32>, tensor<16x64xf32> -> tensor<16x16xf32>
  %m1, %l1, %a1 = qattn.softmax_update %s, %k, %m, %l, %acc : tensor<16x16xf32>, tensor<16x64xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16x64xf32>
  %m2, %l2, %a2 = qattn.softmax_update %s, %k, %m1, %l1, %a1 {lazy_max = 5.5 : f32} : tensor<16x16xf32>, tensor<16x64xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16x64xf32>
  return %m2, %l2, %a2 : tensor<16xf32>, tensor<16xf32>, tensor<16x64xf32>
}

// The int8 tail page and the split combine.
// CHECK-LABEL: func.func @tail_and_combine
// CHECK: qattn.load_kv_tile %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] bound %{{.*}} {keys = 16 : i64, layout = #qattn.fragment<mma_values_a>} : (tensor<?x2x64x64xi8>, tensor<?x2xf32>) -> (tensor<16x64xi8>, tensor<16xf32>)
// CHECK: qattn.dequantize_tile %{{.*}}, %{{.*}} : tensor<16x64xi8>, tensor<16xf32> -> tensor<16x64xf32>
// CHECK: qattn.combine_splits %{{.*}}, %{{.*}}, %{{.*}} {group = 4 : i64} : tensor<?x2x1x8x16x64xf32>, tensor<?x2x1x8x16xf32>, tensor<?x2x1x8x16xf32> -> tensor<?x8x1x64xf16>
func.func @tail_and_combine(%kb: tensor<?x2x64x64xi8>, %kbs: tensor<?x2xf32>, %b: index, %hk: index, %j: index, %end: index,
                            %acc: tensor<?x2x1x8x16x64xf32>, %m: tensor<?x2x1x8x16xf32>, %l: tensor<?x2x1x8x16xf32>) -> (tensor<16x64xf32>, tensor<?x8x1x64xf16>) {
  %t, %s = qattn.load_kv_tile %kb, %kbs [%b, %hk, %j] bound %end {keys = 16, layout = #qattn.fragment<mma_values_a>} : (tensor<?x2x64x64xi8>, tensor<?x2xf32>) -> (tensor<16x64xi8>, tensor<16xf32>)
  %v = qattn.dequantize_tile %t, %s : tensor<16x64xi8>, tensor<16xf32> -> tensor<16x64xf32>
  %o = qattn.combine_splits %acc, %m, %l {group = 4} : tensor<?x2x1x8x16x64xf32>, tensor<?x2x1x8x16xf32>, tensor<?x2x1x8x16xf32> -> tensor<?x8x1x64xf16>
  return %v, %o : tensor<16x64xf32>, tensor<?x8x1x64xf16>
}

// SAS in two passes: each row's final max, then the terms against it.
// CHECK-LABEL: func.func @sas_passes
// CHECK: qattn.tile_row_max %{{.*}}, %{{.*}} : tensor<16x16xf32>, tensor<16xf32>
// CHECK: qattn.softmax_update %{{.*}} {fixed_max, softmax = #qattn.softmax<sas, threshold = -6.000000e+00, degree = 2>} : tensor<16x16xf32>, tensor<16x64xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16x64xf32>
func.func @sas_passes(%s: tensor<16x16xf32>, %v: tensor<16x64xf32>, %m: tensor<16xf32>, %l: tensor<16xf32>, %a: tensor<16x64xf32>) -> (tensor<16xf32>, tensor<16x64xf32>) {
  %m1 = qattn.tile_row_max %s, %m : tensor<16x16xf32>, tensor<16xf32>
  %m2, %l2, %a2 = qattn.softmax_update %s, %v, %m1, %l, %a {fixed_max, softmax = #qattn.softmax<sas, threshold = -6.0, degree = 2>} : tensor<16x16xf32>, tensor<16x64xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16x64xf32>
  return %l2, %a2 : tensor<16xf32>, tensor<16x64xf32>
}

// Balanced key chunks: a grid slot's sequence and keys, and the combine
// that finds each sequence's chunks from the same lengths.
// CHECK-LABEL: func.func @balanced_chunks
// CHECK: %{{.*}}, %{{.*}}, %{{.*}} = qattn.key_chunk %{{.*}}[%{{.*}}] of %{{.*}} {tile_keys = 32 : i64} : tensor<?xi32>
// CHECK: qattn.combine_splits %{{.*}}, %{{.*}}, %{{.*}} chunks(%{{.*}} : tensor<?xi32>) {group = 4 : i64, tile_keys = 32 : i64} : tensor<?x2x1x?x16x64xf32>, tensor<?x2x1x?x16xf32>, tensor<?x2x1x?x16xf32> -> tensor<?x8x1x64xf16>
func.func @balanced_chunks(%lens: tensor<?xi32>, %slot: index, %chunks: index,
                           %acc: tensor<?x2x1x?x16x64xf32>, %m: tensor<?x2x1x?x16xf32>, %l: tensor<?x2x1x?x16xf32>) -> (index, index, index, tensor<?x8x1x64xf16>) {
  %seq, %lo, %hi = qattn.key_chunk %lens[%slot] of %chunks {tile_keys = 32} : tensor<?xi32>
  %o = qattn.combine_splits %acc, %m, %l chunks(%lens : tensor<?xi32>) {group = 4, tile_keys = 32} : tensor<?x2x1x?x16x64xf32>, tensor<?x2x1x?x16xf32>, tensor<?x2x1x?x16xf32> -> tensor<?x8x1x64xf16>
  return %seq, %lo, %hi, %o : index, index, index, tensor<?x8x1x64xf16>
}
