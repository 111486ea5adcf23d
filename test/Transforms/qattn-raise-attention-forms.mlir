// qattn-raise-attention on the forms other than 4-D linalg.generic contractions around
// linalg.softmax: named ops over flattened heads, one head, the softmax decomposed by upstream and
// the IR after upstream's generalization and elementwise fusion. The generated cases were made by
// running mlir-opt 22 over the hand-written ones, with the command given at each.
// RUN: qattn-opt %s -split-input-file --qattn-raise-attention=strict=true | FileCheck %s
// RUN: qattn-opt %s -split-input-file --qattn-raise-attention -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK

// Each raised chain gets a remark (the pass's "raised" statistic counts them too, but the
// packaged release LLVM compiles statistics out: -mlir-pass-statistics prints no value there).
// REMARK: remark: qattn-raise-attention: raised to qattn.attention (causal, scale 0.125, Hq 4, Hkv 2)

#q = affine_map<(b, h, i, j, c) -> (b, h, i, c)>
#k = affine_map<(b, h, i, j, c) -> (b, h, j, c)>
#s = affine_map<(b, h, i, j, c) -> (b, h, i, j)>
#p = affine_map<(b, h, i, c, j) -> (b, h, i, j)>
#v = affine_map<(b, h, i, c, j) -> (b, h, j, c)>
#o = affine_map<(b, h, i, c, j) -> (b, h, i, c)>
#e = affine_map<(b, h, i, j) -> (b, h, i, j)>

// CHECK-LABEL: func.func @bmm_flattened(
// CHECK-SAME:    %[[Q:[^:]+]]: tensor<1x2x4x64xf32>, %[[K:[^:]+]]: tensor<1x2x8x64xf32>, %[[V:[^:]+]]: tensor<1x2x8x64xf32>
// CHECK-NOT:     linalg.
// CHECK-NOT:     tensor.collapse_shape
// CHECK:         qattn.quantize %[[K]] {{.+}} : tensor<1x2x8x64xf32>
// CHECK:         qattn.quantize %[[V]] {{.+}} : tensor<1x2x8x64xf32>
// CHECK:         %[[O:.+]] = qattn.attention %[[Q]] keys(
// CHECK-SAME:      scale = 1.250000e-01 : f32
// CHECK-SAME:      -> tensor<1x2x4x64xf32>
// CHECK-NOT:     linalg.
// CHECK-NOT:     tensor.expand_shape
// CHECK:         return %[[O]]
// Torch-style: batch and heads flattened for linalg.batch_matmul (tensor.collapse_shape around it),
// K transposed by linalg.transpose, the scale as linalg.mul by a splat, linalg.softmax over
// [B*H, Nq, Nk] and the result expanded back: the reshapes disappear.
func.func @bmm_flattened(%q: tensor<1x2x4x64xf32>, %k: tensor<1x2x8x64xf32>, %v: tensor<1x2x8x64xf32>) -> tensor<1x2x4x64xf32> {
  %zero = arith.constant 0.0 : f32
  %q3 = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<1x2x4x64xf32> into tensor<2x4x64xf32>
  %kt_init = tensor.empty() : tensor<1x2x64x8xf32>
  %kt = linalg.transpose ins(%k : tensor<1x2x8x64xf32>) outs(%kt_init : tensor<1x2x64x8xf32>) permutation = [0, 1, 3, 2]
  %kt3 = tensor.collapse_shape %kt [[0, 1], [2], [3]] : tensor<1x2x64x8xf32> into tensor<2x64x8xf32>
  %s_init = tensor.empty() : tensor<2x4x8xf32>
  %s_zero = linalg.fill ins(%zero : f32) outs(%s_init : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %s = linalg.batch_matmul ins(%q3, %kt3 : tensor<2x4x64xf32>, tensor<2x64x8xf32>) outs(%s_zero : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %c = arith.constant dense<0.125> : tensor<2x4x8xf32>
  %t_init = tensor.empty() : tensor<2x4x8xf32>
  %t = linalg.mul ins(%s, %c : tensor<2x4x8xf32>, tensor<2x4x8xf32>) outs(%t_init : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %p_init = tensor.empty() : tensor<2x4x8xf32>
  %p = linalg.softmax dimension(2) ins(%t : tensor<2x4x8xf32>) outs(%p_init : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %v3 = tensor.collapse_shape %v [[0, 1], [2], [3]] : tensor<1x2x8x64xf32> into tensor<2x8x64xf32>
  %o_init = tensor.empty() : tensor<2x4x64xf32>
  %o_zero = linalg.fill ins(%zero : f32) outs(%o_init : tensor<2x4x64xf32>) -> tensor<2x4x64xf32>
  %o = linalg.batch_matmul ins(%p, %v3 : tensor<2x4x8xf32>, tensor<2x8x64xf32>) outs(%o_zero : tensor<2x4x64xf32>) -> tensor<2x4x64xf32>
  %o4 = tensor.expand_shape %o [[0, 1], [2], [3]] output_shape [1, 2, 4, 64] : tensor<2x4x64xf32> into tensor<1x2x4x64xf32>
  return %o4 : tensor<1x2x4x64xf32>
}


// -----

// CHECK-LABEL: func.func @matmul_single_head(
// CHECK-SAME:    %[[Q:[^:]+]]: tensor<4x64xf16>, %[[K:[^:]+]]: tensor<8x64xf16>, %[[V:[^:]+]]: tensor<8x64xf16>
// CHECK-NOT:     linalg.
// CHECK-DAG:     %[[Q4:.+]] = tensor.expand_shape %[[Q]] {{.+}} : tensor<4x64xf16> into tensor<1x1x4x64xf16>
// CHECK-DAG:     %[[K4:.+]] = tensor.expand_shape %[[K]] {{.+}} : tensor<8x64xf16> into tensor<1x1x8x64xf16>
// CHECK-DAG:     %[[V4:.+]] = tensor.expand_shape %[[V]] {{.+}} : tensor<8x64xf16> into tensor<1x1x8x64xf16>
// CHECK:         qattn.quantize %[[K4]]
// CHECK:         qattn.quantize %[[V4]]
// CHECK:         %[[O:.+]] = qattn.attention %[[Q4]] keys(
// CHECK-SAME:      scale = 1.250000e-01 : f32
// CHECK-SAME:      -> tensor<1x1x4x64xf32>
// CHECK:         %[[O2:.+]] = tensor.collapse_shape %[[O]] {{.+}} : tensor<1x1x4x64xf32> into tensor<4x64xf32>
// CHECK-NOT:     linalg.
// CHECK:         return %[[O2]]
// One head as linalg.matmul on f16 (K^T from linalg.transpose [1, 0]), the scale as a division:
// Q, K and V are expanded to [1, 1, N, d] and the result collapsed back to [Nq, d].
func.func @matmul_single_head(%q: tensor<4x64xf16>, %k: tensor<8x64xf16>, %v: tensor<8x64xf16>) -> tensor<4x64xf32> {
  %zero = arith.constant 0.0 : f32
  %kt_init = tensor.empty() : tensor<64x8xf16>
  %kt = linalg.transpose ins(%k : tensor<8x64xf16>) outs(%kt_init : tensor<64x8xf16>) permutation = [1, 0]
  %s_init = tensor.empty() : tensor<4x8xf32>
  %s_zero = linalg.fill ins(%zero : f32) outs(%s_init : tensor<4x8xf32>) -> tensor<4x8xf32>
  %s = linalg.matmul ins(%q, %kt : tensor<4x64xf16>, tensor<64x8xf16>) outs(%s_zero : tensor<4x8xf32>) -> tensor<4x8xf32>
  %c = arith.constant 8.0 : f32
  %t_init = tensor.empty() : tensor<4x8xf32>
  %t = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%s : tensor<4x8xf32>) outs(%t_init : tensor<4x8xf32>) {
  ^bb0(%x: f32, %out: f32):
    %y = arith.divf %x, %c : f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  %p_init = tensor.empty() : tensor<4x8xf32>
  %p = linalg.softmax dimension(1) ins(%t : tensor<4x8xf32>) outs(%p_init : tensor<4x8xf32>) -> tensor<4x8xf32>
  %o_init = tensor.empty() : tensor<4x64xf32>
  %o_zero = linalg.fill ins(%zero : f32) outs(%o_init : tensor<4x64xf32>) -> tensor<4x64xf32>
  %o = linalg.matmul ins(%p, %v : tensor<4x8xf32>, tensor<8x64xf16>) outs(%o_zero : tensor<4x64xf32>) -> tensor<4x64xf32>
  return %o : tensor<4x64xf32>
}


// -----

#map = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>
#map1 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>
#map2 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
#map3 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#map5 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>

// CHECK-LABEL: func.func @gqa_causal_decomposed(
// CHECK-SAME:    %[[Q:[^:]+]]: tensor<1x4x4x64xf32>, %[[K:[^:]+]]: tensor<1x2x8x64xf32>, %[[V:[^:]+]]: tensor<1x2x8x64xf32>
// CHECK-NOT:     linalg.
// CHECK:         qattn.quantize %[[K]] {{.+}} : tensor<1x2x8x64xf32>
// CHECK:         qattn.quantize %[[V]] {{.+}} : tensor<1x2x8x64xf32>
// CHECK:         %[[O:.+]] = qattn.attention %[[Q]] keys(
// CHECK-SAME:      {causal, {{.*}}scale = 1.250000e-01 : f32
// CHECK-SAME:      -> tensor<1x4x4x64xf32>
// CHECK-NOT:     linalg.
// CHECK:         return %[[O]]
// Generated: the grouped-query causal attention of qattn-raise-attention.mlir (8 keys, 4 queries,
// Hq 4, Hkv 2) with its linalg.softmax decomposed by
//   mlir-opt --transform-preload-library=transform-library-paths=test/Integration/Inputs/decompose_softmax.mlir --transform-interpreter
// (upstream's AggregatedOpInterface: max and sum reductions, exp(x - max), a division).
func.func @gqa_causal_decomposed(%arg0: tensor<1x4x4x64xf32>, %arg1: tensor<1x2x8x64xf32>, %arg2: tensor<1x2x8x64xf32>) -> tensor<1x4x4x64xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %0 = tensor.empty() : tensor<1x2x2x8x64xf32>
  %broadcasted = linalg.broadcast ins(%arg1 : tensor<1x2x8x64xf32>) outs(%0 : tensor<1x2x2x8x64xf32>) dimensions = [2] 
  %collapsed = tensor.collapse_shape %broadcasted [[0], [1, 2], [3], [4]] : tensor<1x2x2x8x64xf32> into tensor<1x4x8x64xf32>
  %1 = tensor.empty() : tensor<1x2x2x8x64xf32>
  %broadcasted_0 = linalg.broadcast ins(%arg2 : tensor<1x2x8x64xf32>) outs(%1 : tensor<1x2x2x8x64xf32>) dimensions = [2] 
  %collapsed_1 = tensor.collapse_shape %broadcasted_0 [[0], [1, 2], [3], [4]] : tensor<1x2x2x8x64xf32> into tensor<1x4x8x64xf32>
  %2 = tensor.empty() : tensor<1x4x4x8xf32>
  %3 = linalg.fill ins(%cst : f32) outs(%2 : tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  %4 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%arg0, %collapsed : tensor<1x4x4x64xf32>, tensor<1x4x8x64xf32>) outs(%3 : tensor<1x4x4x8xf32>) {
  ^bb0(%in: f32, %in_6: f32, %out: f32):
    %18 = arith.mulf %in, %in_6 : f32
    %19 = arith.addf %out, %18 : f32
    linalg.yield %19 : f32
  } -> tensor<1x4x4x8xf32>
  %cst_2 = arith.constant 0xFF800000 : f32
  %cst_3 = arith.constant 1.250000e-01 : f32
  %c4 = arith.constant 4 : index
  %5 = tensor.empty() : tensor<1x4x4x8xf32>
  %6 = linalg.generic {indexing_maps = [#map3, #map3], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%4 : tensor<1x4x4x8xf32>) outs(%5 : tensor<1x4x4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %18 = linalg.index 2 : index
    %19 = linalg.index 3 : index
    %20 = arith.addi %18, %c4 : index
    %21 = arith.cmpi ule, %19, %20 : index
    %22 = arith.mulf %in, %cst_3 : f32
    %23 = arith.select %21, %22, %cst_2 : f32
    linalg.yield %23 : f32
  } -> tensor<1x4x4x8xf32>
  %7 = tensor.empty() : tensor<1x4x4x8xf32>
  %8 = tensor.empty() : tensor<1x4x4xf32>
  %cst_4 = arith.constant 0xFFC00000 : f32
  %9 = linalg.fill ins(%cst_4 : f32) outs(%8 : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %10 = linalg.generic {indexing_maps = [#map3, #map4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%6 : tensor<1x4x4x8xf32>) outs(%9 : tensor<1x4x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %18 = arith.maxnumf %in, %out : f32
    linalg.yield %18 : f32
  } -> tensor<1x4x4xf32>
  %11 = linalg.generic {indexing_maps = [#map3, #map4, #map3], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%6, %10 : tensor<1x4x4x8xf32>, tensor<1x4x4xf32>) outs(%7 : tensor<1x4x4x8xf32>) {
  ^bb0(%in: f32, %in_6: f32, %out: f32):
    %18 = arith.subf %in, %in_6 : f32
    %19 = math.exp %18 : f32
    linalg.yield %19 : f32
  } -> tensor<1x4x4x8xf32>
  %cst_5 = arith.constant 0.000000e+00 : f32
  %12 = linalg.fill ins(%cst_5 : f32) outs(%8 : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %13 = linalg.generic {indexing_maps = [#map3, #map4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%11 : tensor<1x4x4x8xf32>) outs(%12 : tensor<1x4x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %18 = arith.addf %in, %out : f32
    linalg.yield %18 : f32
  } -> tensor<1x4x4xf32>
  %14 = linalg.generic {indexing_maps = [#map3, #map4, #map3], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%11, %13 : tensor<1x4x4x8xf32>, tensor<1x4x4xf32>) outs(%7 : tensor<1x4x4x8xf32>) {
  ^bb0(%in: f32, %in_6: f32, %out: f32):
    %18 = arith.divf %in, %in_6 : f32
    linalg.yield %18 : f32
  } -> tensor<1x4x4x8xf32>
  %15 = tensor.empty() : tensor<1x4x4x64xf32>
  %16 = linalg.fill ins(%cst : f32) outs(%15 : tensor<1x4x4x64xf32>) -> tensor<1x4x4x64xf32>
  %17 = linalg.generic {indexing_maps = [#map, #map5, #map2], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%14, %collapsed_1 : tensor<1x4x4x8xf32>, tensor<1x4x8x64xf32>) outs(%16 : tensor<1x4x4x64xf32>) {
  ^bb0(%in: f32, %in_6: f32, %out: f32):
    %18 = arith.mulf %in, %in_6 : f32
    %19 = arith.addf %out, %18 : f32
    linalg.yield %19 : f32
  } -> tensor<1x4x4x64xf32>
  return %17 : tensor<1x4x4x64xf32>
}


// -----

#map = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d0, d1)>

// CHECK-LABEL: func.func @bmm_decomposed(
// CHECK-SAME:    %[[Q:[^:]+]]: tensor<1x2x4x64xf32>, %[[K:[^:]+]]: tensor<1x2x8x64xf32>, %[[V:[^:]+]]: tensor<1x2x8x64xf32>
// CHECK-NOT:     linalg.
// CHECK-NOT:     tensor.collapse_shape
// CHECK:         qattn.quantize %[[K]] {{.+}} : tensor<1x2x8x64xf32>
// CHECK:         qattn.quantize %[[V]] {{.+}} : tensor<1x2x8x64xf32>
// CHECK:         %[[O:.+]] = qattn.attention %[[Q]] keys(
// CHECK-SAME:      scale = 1.250000e-01 : f32
// CHECK-SAME:      -> tensor<1x2x4x64xf32>
// CHECK-NOT:     linalg.
// CHECK-NOT:     tensor.expand_shape
// CHECK:         return %[[O]]
// Generated: @bmm_flattened with its softmax decomposed as above (the pieces over [B*H, Nq, Nk]).
func.func @bmm_decomposed(%arg0: tensor<1x2x4x64xf32>, %arg1: tensor<1x2x8x64xf32>, %arg2: tensor<1x2x8x64xf32>) -> tensor<1x2x4x64xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %collapsed = tensor.collapse_shape %arg0 [[0, 1], [2], [3]] : tensor<1x2x4x64xf32> into tensor<2x4x64xf32>
  %0 = tensor.empty() : tensor<1x2x64x8xf32>
  %transposed = linalg.transpose ins(%arg1 : tensor<1x2x8x64xf32>) outs(%0 : tensor<1x2x64x8xf32>) permutation = [0, 1, 3, 2] 
  %collapsed_0 = tensor.collapse_shape %transposed [[0, 1], [2], [3]] : tensor<1x2x64x8xf32> into tensor<2x64x8xf32>
  %1 = tensor.empty() : tensor<2x4x8xf32>
  %2 = linalg.fill ins(%cst : f32) outs(%1 : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %3 = linalg.batch_matmul ins(%collapsed, %collapsed_0 : tensor<2x4x64xf32>, tensor<2x64x8xf32>) outs(%2 : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %cst_1 = arith.constant dense<1.250000e-01> : tensor<2x4x8xf32>
  %4 = tensor.empty() : tensor<2x4x8xf32>
  %5 = linalg.mul ins(%3, %cst_1 : tensor<2x4x8xf32>, tensor<2x4x8xf32>) outs(%4 : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %6 = tensor.empty() : tensor<2x4x8xf32>
  %7 = tensor.empty() : tensor<2x4xf32>
  %cst_2 = arith.constant 0xFFC00000 : f32
  %8 = linalg.fill ins(%cst_2 : f32) outs(%7 : tensor<2x4xf32>) -> tensor<2x4xf32>
  %9 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "reduction"]} ins(%5 : tensor<2x4x8xf32>) outs(%8 : tensor<2x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %17 = arith.maxnumf %in, %out : f32
    linalg.yield %17 : f32
  } -> tensor<2x4xf32>
  %10 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%5, %9 : tensor<2x4x8xf32>, tensor<2x4xf32>) outs(%6 : tensor<2x4x8xf32>) {
  ^bb0(%in: f32, %in_5: f32, %out: f32):
    %17 = arith.subf %in, %in_5 : f32
    %18 = math.exp %17 : f32
    linalg.yield %18 : f32
  } -> tensor<2x4x8xf32>
  %cst_3 = arith.constant 0.000000e+00 : f32
  %11 = linalg.fill ins(%cst_3 : f32) outs(%7 : tensor<2x4xf32>) -> tensor<2x4xf32>
  %12 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "reduction"]} ins(%10 : tensor<2x4x8xf32>) outs(%11 : tensor<2x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %17 = arith.addf %in, %out : f32
    linalg.yield %17 : f32
  } -> tensor<2x4xf32>
  %13 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%10, %12 : tensor<2x4x8xf32>, tensor<2x4xf32>) outs(%6 : tensor<2x4x8xf32>) {
  ^bb0(%in: f32, %in_5: f32, %out: f32):
    %17 = arith.divf %in, %in_5 : f32
    linalg.yield %17 : f32
  } -> tensor<2x4x8xf32>
  %collapsed_4 = tensor.collapse_shape %arg2 [[0, 1], [2], [3]] : tensor<1x2x8x64xf32> into tensor<2x8x64xf32>
  %14 = tensor.empty() : tensor<2x4x64xf32>
  %15 = linalg.fill ins(%cst : f32) outs(%14 : tensor<2x4x64xf32>) -> tensor<2x4x64xf32>
  %16 = linalg.batch_matmul ins(%13, %collapsed_4 : tensor<2x4x8xf32>, tensor<2x8x64xf32>) outs(%15 : tensor<2x4x64xf32>) -> tensor<2x4x64xf32>
  %expanded = tensor.expand_shape %16 [[0, 1], [2], [3]] output_shape [1, 2, 4, 64] : tensor<2x4x64xf32> into tensor<1x2x4x64xf32>
  return %expanded : tensor<1x2x4x64xf32>
}


// -----

#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0)>

// CHECK-LABEL: func.func @matmul_decomposed(
// CHECK-SAME:    %[[Q:[^:]+]]: tensor<4x64xf16>, %[[K:[^:]+]]: tensor<8x64xf16>, %[[V:[^:]+]]: tensor<8x64xf16>
// CHECK-NOT:     linalg.
// CHECK-DAG:     %[[Q4:.+]] = tensor.expand_shape %[[Q]] {{.+}} : tensor<4x64xf16> into tensor<1x1x4x64xf16>
// CHECK-DAG:     %[[K4:.+]] = tensor.expand_shape %[[K]] {{.+}} : tensor<8x64xf16> into tensor<1x1x8x64xf16>
// CHECK-DAG:     %[[V4:.+]] = tensor.expand_shape %[[V]] {{.+}} : tensor<8x64xf16> into tensor<1x1x8x64xf16>
// CHECK:         qattn.quantize %[[K4]]
// CHECK:         qattn.quantize %[[V4]]
// CHECK:         %[[O:.+]] = qattn.attention %[[Q4]] keys(
// CHECK-SAME:      scale = 1.250000e-01 : f32
// CHECK-SAME:      -> tensor<1x1x4x64xf32>
// CHECK:         %[[O2:.+]] = tensor.collapse_shape %[[O]] {{.+}} : tensor<1x1x4x64xf32> into tensor<4x64xf32>
// CHECK-NOT:     linalg.
// CHECK:         return %[[O2]]
// Generated: @matmul_single_head with its softmax decomposed as above.
func.func @matmul_decomposed(%arg0: tensor<4x64xf16>, %arg1: tensor<8x64xf16>, %arg2: tensor<8x64xf16>) -> tensor<4x64xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %0 = tensor.empty() : tensor<64x8xf16>
  %transposed = linalg.transpose ins(%arg1 : tensor<8x64xf16>) outs(%0 : tensor<64x8xf16>) permutation = [1, 0] 
  %1 = tensor.empty() : tensor<4x8xf32>
  %2 = linalg.fill ins(%cst : f32) outs(%1 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = linalg.matmul ins(%arg0, %transposed : tensor<4x64xf16>, tensor<64x8xf16>) outs(%2 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %cst_0 = arith.constant 8.000000e+00 : f32
  %4 = tensor.empty() : tensor<4x8xf32>
  %5 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%3 : tensor<4x8xf32>) outs(%4 : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %17 = arith.divf %in, %cst_0 : f32
    linalg.yield %17 : f32
  } -> tensor<4x8xf32>
  %6 = tensor.empty() : tensor<4x8xf32>
  %7 = tensor.empty() : tensor<4xf32>
  %cst_1 = arith.constant 0xFFC00000 : f32
  %8 = linalg.fill ins(%cst_1 : f32) outs(%7 : tensor<4xf32>) -> tensor<4xf32>
  %9 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%5 : tensor<4x8xf32>) outs(%8 : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %17 = arith.maxnumf %in, %out : f32
    linalg.yield %17 : f32
  } -> tensor<4xf32>
  %10 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%5, %9 : tensor<4x8xf32>, tensor<4xf32>) outs(%6 : tensor<4x8xf32>) {
  ^bb0(%in: f32, %in_3: f32, %out: f32):
    %17 = arith.subf %in, %in_3 : f32
    %18 = math.exp %17 : f32
    linalg.yield %18 : f32
  } -> tensor<4x8xf32>
  %cst_2 = arith.constant 0.000000e+00 : f32
  %11 = linalg.fill ins(%cst_2 : f32) outs(%7 : tensor<4xf32>) -> tensor<4xf32>
  %12 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%10 : tensor<4x8xf32>) outs(%11 : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %17 = arith.addf %in, %out : f32
    linalg.yield %17 : f32
  } -> tensor<4xf32>
  %13 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%10, %12 : tensor<4x8xf32>, tensor<4xf32>) outs(%6 : tensor<4x8xf32>) {
  ^bb0(%in: f32, %in_3: f32, %out: f32):
    %17 = arith.divf %in, %in_3 : f32
    linalg.yield %17 : f32
  } -> tensor<4x8xf32>
  %14 = tensor.empty() : tensor<4x64xf32>
  %15 = linalg.fill ins(%cst : f32) outs(%14 : tensor<4x64xf32>) -> tensor<4x64xf32>
  %16 = linalg.matmul ins(%13, %arg2 : tensor<4x8xf32>, tensor<8x64xf16>) outs(%15 : tensor<4x64xf32>) -> tensor<4x64xf32>
  return %16 : tensor<4x64xf32>
}


// -----

#map = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
#map1 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d5)>
#map2 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d4, d5)>
#map3 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d4)>
#map4 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map5 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map6 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#map7 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
#map8 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>
#map9 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d5, d4)>

// CHECK-LABEL: func.func @gqa_causal_fused(
// CHECK-SAME:    %[[Q:[^:]+]]: tensor<1x4x4x64xf32>, %[[K:[^:]+]]: tensor<1x2x8x64xf32>, %[[V:[^:]+]]: tensor<1x2x8x64xf32>
// CHECK-NOT:     linalg.
// CHECK:         qattn.quantize %[[K]] {{.+}} : tensor<1x2x8x64xf32>
// CHECK:         qattn.quantize %[[V]] {{.+}} : tensor<1x2x8x64xf32>
// CHECK:         %[[O:.+]] = qattn.attention %[[Q]] keys(
// CHECK-SAME:      {causal, {{.*}}scale = 1.250000e-01 : f32
// CHECK-SAME:      -> tensor<1x4x4x64xf32>
// CHECK-NOT:     linalg.
// CHECK:         return %[[O]]
// Generated: @gqa_causal_decomposed after
//   mlir-opt --linalg-generalize-named-ops --linalg-fuse-elementwise-ops --canonicalize
// Fills are linalg.generic now, the KV broadcast is folded into rank-5 contractions (K and V
// read without the repeat dim), reshapes sit between the softmax's pieces and the division
// by the row sums is fused into the P.V body.
func.func @gqa_causal_fused(%arg0: tensor<1x4x4x64xf32>, %arg1: tensor<1x2x8x64xf32>, %arg2: tensor<1x2x8x64xf32>) -> tensor<1x4x4x64xf32> {
  %cst = arith.constant 0xFFC00000 : f32
  %c4 = arith.constant 4 : index
  %cst_0 = arith.constant 1.250000e-01 : f32
  %cst_1 = arith.constant 0xFF800000 : f32
  %cst_2 = arith.constant 0.000000e+00 : f32
  %0 = tensor.empty() : tensor<1x2x2x4x8xf32>
  %1 = linalg.generic {indexing_maps = [#map], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%0 : tensor<1x2x2x4x8xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_2 : f32
  } -> tensor<1x2x2x4x8xf32>
  %expanded = tensor.expand_shape %arg0 [[0], [1, 2], [3], [4]] output_shape [1, 2, 2, 4, 64] : tensor<1x4x4x64xf32> into tensor<1x2x2x4x64xf32>
  %2 = linalg.generic {indexing_maps = [#map1, #map2, #map3], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%expanded, %arg1 : tensor<1x2x2x4x64xf32>, tensor<1x2x8x64xf32>) outs(%1 : tensor<1x2x2x4x8xf32>) {
  ^bb0(%in: f32, %in_6: f32, %out: f32):
    %16 = arith.mulf %in, %in_6 : f32
    %17 = arith.addf %out, %16 : f32
    linalg.yield %17 : f32
  } -> tensor<1x2x2x4x8xf32>
  %3 = tensor.empty() : tensor<1x2x2x4x8xf32>
  %4 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%2 : tensor<1x2x2x4x8xf32>) outs(%3 : tensor<1x2x2x4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %16 = linalg.index 3 : index
    %17 = linalg.index 4 : index
    %18 = arith.addi %16, %c4 : index
    %19 = arith.cmpi ule, %17, %18 : index
    %20 = arith.mulf %in, %cst_0 : f32
    %21 = arith.select %19, %20, %cst_1 : f32
    linalg.yield %21 : f32
  } -> tensor<1x2x2x4x8xf32>
  %collapsed = tensor.collapse_shape %4 [[0], [1, 2], [3], [4]] : tensor<1x2x2x4x8xf32> into tensor<1x4x4x8xf32>
  %5 = tensor.empty() : tensor<1x4x4x8xf32>
  %6 = tensor.empty() : tensor<1x4x4xf32>
  %7 = linalg.generic {indexing_maps = [#map4], iterator_types = ["parallel", "parallel", "parallel"]} outs(%6 : tensor<1x4x4xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst : f32
  } -> tensor<1x4x4xf32>
  %8 = linalg.generic {indexing_maps = [#map5, #map6], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%collapsed : tensor<1x4x4x8xf32>) outs(%7 : tensor<1x4x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %16 = arith.maxnumf %in, %out : f32
    linalg.yield %16 : f32
  } -> tensor<1x4x4xf32>
  %9 = linalg.generic {indexing_maps = [#map5, #map6, #map5], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%collapsed, %8 : tensor<1x4x4x8xf32>, tensor<1x4x4xf32>) outs(%5 : tensor<1x4x4x8xf32>) {
  ^bb0(%in: f32, %in_6: f32, %out: f32):
    %16 = arith.subf %in, %in_6 : f32
    %17 = math.exp %16 : f32
    linalg.yield %17 : f32
  } -> tensor<1x4x4x8xf32>
  %10 = tensor.empty() : tensor<1x2x2x4xf32>
  %11 = linalg.generic {indexing_maps = [#map5], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%10 : tensor<1x2x2x4xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_2 : f32
  } -> tensor<1x2x2x4xf32>
  %expanded_3 = tensor.expand_shape %9 [[0], [1, 2], [3], [4]] output_shape [1, 2, 2, 4, 8] : tensor<1x4x4x8xf32> into tensor<1x2x2x4x8xf32>
  %12 = linalg.generic {indexing_maps = [#map, #map7], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%expanded_3 : tensor<1x2x2x4x8xf32>) outs(%11 : tensor<1x2x2x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %16 = arith.addf %in, %out : f32
    linalg.yield %16 : f32
  } -> tensor<1x2x2x4xf32>
  %13 = tensor.empty() : tensor<1x2x2x4x64xf32>
  %14 = linalg.generic {indexing_maps = [#map], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%13 : tensor<1x2x2x4x64xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_2 : f32
  } -> tensor<1x2x2x4x64xf32>
  %expanded_4 = tensor.expand_shape %9 [[0], [1, 2], [3], [4]] output_shape [1, 2, 2, 4, 8] : tensor<1x4x4x8xf32> into tensor<1x2x2x4x8xf32>
  %15 = linalg.generic {indexing_maps = [#map1, #map8, #map9, #map3], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%expanded_4, %12, %arg2 : tensor<1x2x2x4x8xf32>, tensor<1x2x2x4xf32>, tensor<1x2x8x64xf32>) outs(%14 : tensor<1x2x2x4x64xf32>) {
  ^bb0(%in: f32, %in_6: f32, %in_7: f32, %out: f32):
    %16 = arith.divf %in, %in_6 : f32
    %17 = arith.mulf %16, %in_7 : f32
    %18 = arith.addf %out, %17 : f32
    linalg.yield %18 : f32
  } -> tensor<1x2x2x4x64xf32>
  %collapsed_5 = tensor.collapse_shape %15 [[0], [1, 2], [3], [4]] : tensor<1x2x2x4x64xf32> into tensor<1x4x4x64xf32>
  return %collapsed_5 : tensor<1x4x4x64xf32>
}


// -----

#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map1 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>
#map2 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>
#map3 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
#map4 = affine_map<(d0, d1) -> (d0, d1)>
#map5 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map6 = affine_map<(d0, d1, d2) -> (d0, d1)>
#map7 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#map8 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2)>
#map9 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>

// CHECK-LABEL: func.func @bmm_fused(
// CHECK-SAME:    %[[Q:[^:]+]]: tensor<1x2x4x64xf32>, %[[K:[^:]+]]: tensor<1x2x8x64xf32>, %[[V:[^:]+]]: tensor<1x2x8x64xf32>
// CHECK-NOT:     linalg.
// CHECK-NOT:     tensor.collapse_shape
// CHECK:         qattn.quantize %[[K]] {{.+}} : tensor<1x2x8x64xf32>
// CHECK:         qattn.quantize %[[V]] {{.+}} : tensor<1x2x8x64xf32>
// CHECK:         %[[O:.+]] = qattn.attention %[[Q]] keys(
// CHECK-SAME:      scale = 1.250000e-01 : f32
// CHECK-SAME:      -> tensor<1x2x4x64xf32>
// CHECK-NOT:     linalg.
// CHECK-NOT:     tensor.expand_shape
// CHECK:         return %[[O]]
// Generated: @bmm_decomposed after the same passes: the transpose is folded into QK^T's map.
func.func @bmm_fused(%arg0: tensor<1x2x4x64xf32>, %arg1: tensor<1x2x8x64xf32>, %arg2: tensor<1x2x8x64xf32>) -> tensor<1x2x4x64xf32> {
  %cst = arith.constant 0xFFC00000 : f32
  %cst_0 = arith.constant 1.250000e-01 : f32
  %cst_1 = arith.constant 0.000000e+00 : f32
  %0 = tensor.empty() : tensor<1x2x4x8xf32>
  %1 = linalg.generic {indexing_maps = [#map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%0 : tensor<1x2x4x8xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_1 : f32
  } -> tensor<1x2x4x8xf32>
  %2 = linalg.generic {indexing_maps = [#map1, #map2, #map3], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%arg0, %arg1 : tensor<1x2x4x64xf32>, tensor<1x2x8x64xf32>) outs(%1 : tensor<1x2x4x8xf32>) {
  ^bb0(%in: f32, %in_3: f32, %out: f32):
    %16 = arith.mulf %in, %in_3 : f32
    %17 = arith.addf %out, %16 : f32
    linalg.yield %17 : f32
  } -> tensor<1x2x4x8xf32>
  %3 = tensor.empty() : tensor<1x2x4x8xf32>
  %4 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%2 : tensor<1x2x4x8xf32>) outs(%3 : tensor<1x2x4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %16 = arith.mulf %in, %cst_0 : f32
    linalg.yield %16 : f32
  } -> tensor<1x2x4x8xf32>
  %collapsed = tensor.collapse_shape %4 [[0, 1], [2], [3]] : tensor<1x2x4x8xf32> into tensor<2x4x8xf32>
  %5 = tensor.empty() : tensor<2x4x8xf32>
  %6 = tensor.empty() : tensor<2x4xf32>
  %7 = linalg.generic {indexing_maps = [#map4], iterator_types = ["parallel", "parallel"]} outs(%6 : tensor<2x4xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst : f32
  } -> tensor<2x4xf32>
  %8 = linalg.generic {indexing_maps = [#map5, #map6], iterator_types = ["parallel", "parallel", "reduction"]} ins(%collapsed : tensor<2x4x8xf32>) outs(%7 : tensor<2x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %16 = arith.maxnumf %in, %out : f32
    linalg.yield %16 : f32
  } -> tensor<2x4xf32>
  %9 = linalg.generic {indexing_maps = [#map5, #map6, #map5], iterator_types = ["parallel", "parallel", "parallel"]} ins(%collapsed, %8 : tensor<2x4x8xf32>, tensor<2x4xf32>) outs(%5 : tensor<2x4x8xf32>) {
  ^bb0(%in: f32, %in_3: f32, %out: f32):
    %16 = arith.subf %in, %in_3 : f32
    %17 = math.exp %16 : f32
    linalg.yield %17 : f32
  } -> tensor<2x4x8xf32>
  %10 = tensor.empty() : tensor<1x2x4xf32>
  %11 = linalg.generic {indexing_maps = [#map5], iterator_types = ["parallel", "parallel", "parallel"]} outs(%10 : tensor<1x2x4xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_1 : f32
  } -> tensor<1x2x4xf32>
  %expanded = tensor.expand_shape %9 [[0, 1], [2], [3]] output_shape [1, 2, 4, 8] : tensor<2x4x8xf32> into tensor<1x2x4x8xf32>
  %12 = linalg.generic {indexing_maps = [#map, #map7], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%expanded : tensor<1x2x4x8xf32>) outs(%11 : tensor<1x2x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %16 = arith.addf %in, %out : f32
    linalg.yield %16 : f32
  } -> tensor<1x2x4xf32>
  %13 = tensor.empty() : tensor<1x2x4x64xf32>
  %14 = linalg.generic {indexing_maps = [#map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%13 : tensor<1x2x4x64xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_1 : f32
  } -> tensor<1x2x4x64xf32>
  %expanded_2 = tensor.expand_shape %9 [[0, 1], [2], [3]] output_shape [1, 2, 4, 8] : tensor<2x4x8xf32> into tensor<1x2x4x8xf32>
  %15 = linalg.generic {indexing_maps = [#map1, #map8, #map9, #map3], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%expanded_2, %12, %arg2 : tensor<1x2x4x8xf32>, tensor<1x2x4xf32>, tensor<1x2x8x64xf32>) outs(%14 : tensor<1x2x4x64xf32>) {
  ^bb0(%in: f32, %in_3: f32, %in_4: f32, %out: f32):
    %16 = arith.divf %in, %in_3 : f32
    %17 = arith.mulf %16, %in_4 : f32
    %18 = arith.addf %out, %17 : f32
    linalg.yield %18 : f32
  } -> tensor<1x2x4x64xf32>
  return %15 : tensor<1x2x4x64xf32>
}


// -----

#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1, d2) -> (d0, d2)>
#map2 = affine_map<(d0, d1, d2) -> (d1, d2)>
#map3 = affine_map<(d0, d1, d2) -> (d0, d1)>
#map4 = affine_map<(d0) -> (d0)>
#map5 = affine_map<(d0, d1) -> (d0)>
#map6 = affine_map<(d0, d1, d2) -> (d0)>
#map7 = affine_map<(d0, d1, d2) -> (d2, d1)>

// CHECK-LABEL: func.func @matmul_fused(
// CHECK-SAME:    %[[Q:[^:]+]]: tensor<4x64xf16>, %[[K:[^:]+]]: tensor<8x64xf16>, %[[V:[^:]+]]: tensor<8x64xf16>
// CHECK-NOT:     linalg.
// CHECK-DAG:     %[[Q4:.+]] = tensor.expand_shape %[[Q]] {{.+}} : tensor<4x64xf16> into tensor<1x1x4x64xf16>
// CHECK-DAG:     %[[K4:.+]] = tensor.expand_shape %[[K]] {{.+}} : tensor<8x64xf16> into tensor<1x1x8x64xf16>
// CHECK-DAG:     %[[V4:.+]] = tensor.expand_shape %[[V]] {{.+}} : tensor<8x64xf16> into tensor<1x1x8x64xf16>
// CHECK:         qattn.quantize %[[K4]]
// CHECK:         qattn.quantize %[[V4]]
// CHECK:         %[[O:.+]] = qattn.attention %[[Q4]] keys(
// CHECK-SAME:      scale = 1.250000e-01 : f32
// CHECK-SAME:      -> tensor<1x1x4x64xf32>
// CHECK:         %[[O2:.+]] = tensor.collapse_shape %[[O]] {{.+}} : tensor<1x1x4x64xf32> into tensor<4x64xf32>
// CHECK-NOT:     linalg.
// CHECK:         return %[[O2]]
// Generated: @matmul_decomposed after the same passes.
func.func @matmul_fused(%arg0: tensor<4x64xf16>, %arg1: tensor<8x64xf16>, %arg2: tensor<8x64xf16>) -> tensor<4x64xf32> {
  %cst = arith.constant 0xFFC00000 : f32
  %cst_0 = arith.constant 0.000000e+00 : f32
  %cst_1 = arith.constant 8.000000e+00 : f32
  %0 = tensor.empty() : tensor<4x8xf32>
  %1 = linalg.generic {indexing_maps = [#map], iterator_types = ["parallel", "parallel"]} outs(%0 : tensor<4x8xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_0 : f32
  } -> tensor<4x8xf32>
  %2 = linalg.generic {indexing_maps = [#map1, #map2, #map3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%arg0, %arg1 : tensor<4x64xf16>, tensor<8x64xf16>) outs(%1 : tensor<4x8xf32>) {
  ^bb0(%in: f16, %in_2: f16, %out: f32):
    %15 = arith.extf %in : f16 to f32
    %16 = arith.extf %in_2 : f16 to f32
    %17 = arith.mulf %15, %16 : f32
    %18 = arith.addf %out, %17 : f32
    linalg.yield %18 : f32
  } -> tensor<4x8xf32>
  %3 = tensor.empty() : tensor<4x8xf32>
  %4 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%2 : tensor<4x8xf32>) outs(%3 : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %15 = arith.divf %in, %cst_1 : f32
    linalg.yield %15 : f32
  } -> tensor<4x8xf32>
  %5 = tensor.empty() : tensor<4x8xf32>
  %6 = tensor.empty() : tensor<4xf32>
  %7 = linalg.generic {indexing_maps = [#map4], iterator_types = ["parallel"]} outs(%6 : tensor<4xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst : f32
  } -> tensor<4xf32>
  %8 = linalg.generic {indexing_maps = [#map, #map5], iterator_types = ["parallel", "reduction"]} ins(%4 : tensor<4x8xf32>) outs(%7 : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %15 = arith.maxnumf %in, %out : f32
    linalg.yield %15 : f32
  } -> tensor<4xf32>
  %9 = linalg.generic {indexing_maps = [#map, #map5, #map], iterator_types = ["parallel", "parallel"]} ins(%4, %8 : tensor<4x8xf32>, tensor<4xf32>) outs(%5 : tensor<4x8xf32>) {
  ^bb0(%in: f32, %in_2: f32, %out: f32):
    %15 = arith.subf %in, %in_2 : f32
    %16 = math.exp %15 : f32
    linalg.yield %16 : f32
  } -> tensor<4x8xf32>
  %10 = linalg.generic {indexing_maps = [#map4], iterator_types = ["parallel"]} outs(%6 : tensor<4xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_0 : f32
  } -> tensor<4xf32>
  %11 = linalg.generic {indexing_maps = [#map, #map5], iterator_types = ["parallel", "reduction"]} ins(%9 : tensor<4x8xf32>) outs(%10 : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %15 = arith.addf %in, %out : f32
    linalg.yield %15 : f32
  } -> tensor<4xf32>
  %12 = tensor.empty() : tensor<4x64xf32>
  %13 = linalg.generic {indexing_maps = [#map], iterator_types = ["parallel", "parallel"]} outs(%12 : tensor<4x64xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_0 : f32
  } -> tensor<4x64xf32>
  %14 = linalg.generic {indexing_maps = [#map1, #map6, #map7, #map3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%9, %11, %arg2 : tensor<4x8xf32>, tensor<4xf32>, tensor<8x64xf16>) outs(%13 : tensor<4x64xf32>) {
  ^bb0(%in: f32, %in_2: f32, %in_3: f16, %out: f32):
    %15 = arith.divf %in, %in_2 : f32
    %16 = arith.extf %in_3 : f16 to f32
    %17 = arith.mulf %15, %16 : f32
    %18 = arith.addf %out, %17 : f32
    linalg.yield %18 : f32
  } -> tensor<4x64xf32>
  return %14 : tensor<4x64xf32>
}
