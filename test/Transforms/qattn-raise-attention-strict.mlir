// With strict=true an attention-like softmax that does not match is an error and the pass fails;
// a softmax that is not attention-like (the classifier) is still no error.
// RUN: qattn-opt %s -split-input-file --qattn-raise-attention=strict=true -verify-diagnostics

#q = affine_map<(b, h, i, j, c) -> (b, h, i, c)>
#k = affine_map<(b, h, i, j, c) -> (b, h, j, c)>
#s = affine_map<(b, h, i, j, c) -> (b, h, i, j)>
#p = affine_map<(b, h, i, c, j) -> (b, h, i, j)>
#v = affine_map<(b, h, i, c, j) -> (b, h, j, c)>
#o = affine_map<(b, h, i, c, j) -> (b, h, i, c)>
#e = affine_map<(b, h, i, j) -> (b, h, i, j)>

// Softmax over the queries, not the keys.
func.func @softmax_dim2(%q: tensor<1x2x4x64xf32>, %k: tensor<1x2x8x64xf32>, %v: tensor<1x2x8x64xf32>) -> tensor<1x2x4x64xf32> {
  %zero = arith.constant 0.0 : f32
  %s_init = tensor.empty() : tensor<1x2x4x8xf32>
  %s_zero = linalg.fill ins(%zero : f32) outs(%s_init : tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %s = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<1x2x4x64xf32>, tensor<1x2x8x64xf32>) outs(%s_zero : tensor<1x2x4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x4x8xf32>
  %p_init = tensor.empty() : tensor<1x2x4x8xf32>
  // expected-error@+1 {{qattn-raise-attention: not raised: softmax runs along dimension 2, not the key dimension 3}}
  %p = linalg.softmax dimension(2) ins(%s : tensor<1x2x4x8xf32>) outs(%p_init : tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %o_init = tensor.empty() : tensor<1x2x4x64xf32>
  %o_zero = linalg.fill ins(%zero : f32) outs(%o_init : tensor<1x2x4x64xf32>) -> tensor<1x2x4x64xf32>
  %o = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<1x2x4x8xf32>, tensor<1x2x8x64xf32>) outs(%o_zero : tensor<1x2x4x64xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x4x64xf32>
  return %o : tensor<1x2x4x64xf32>
}

// -----

#q = affine_map<(b, h, i, j, c) -> (b, h, i, c)>
#k = affine_map<(b, h, i, j, c) -> (b, h, j, c)>
#s = affine_map<(b, h, i, j, c) -> (b, h, i, j)>
#p = affine_map<(b, h, i, c, j) -> (b, h, i, j)>
#v = affine_map<(b, h, i, c, j) -> (b, h, j, c)>
#o = affine_map<(b, h, i, c, j) -> (b, h, i, c)>
#e = affine_map<(b, h, i, j) -> (b, h, i, j)>

// A scale that is a function argument.
func.func @scale_not_constant(%q: tensor<1x2x4x64xf32>, %k: tensor<1x2x8x64xf32>, %v: tensor<1x2x8x64xf32>, %c: f32) -> tensor<1x2x4x64xf32> {
  %zero = arith.constant 0.0 : f32
  %s_init = tensor.empty() : tensor<1x2x4x8xf32>
  %s_zero = linalg.fill ins(%zero : f32) outs(%s_init : tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %s = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<1x2x4x64xf32>, tensor<1x2x8x64xf32>) outs(%s_zero : tensor<1x2x4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x4x8xf32>
  %t_init = tensor.empty() : tensor<1x2x4x8xf32>
  %t = linalg.generic {indexing_maps = [#e, #e], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s : tensor<1x2x4x8xf32>) outs(%t_init : tensor<1x2x4x8xf32>) {
  ^bb0(%x: f32, %out: f32):
    // expected-error@+1 {{qattn-raise-attention: not raised: scales the scores by a value that is not a constant}}
    %y = arith.mulf %x, %c : f32
    linalg.yield %y : f32
  } -> tensor<1x2x4x8xf32>
  %p_init = tensor.empty() : tensor<1x2x4x8xf32>
  // expected-note@+1 {{for this softmax}}
  %p = linalg.softmax dimension(3) ins(%t : tensor<1x2x4x8xf32>) outs(%p_init : tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %o_init = tensor.empty() : tensor<1x2x4x64xf32>
  %o_zero = linalg.fill ins(%zero : f32) outs(%o_init : tensor<1x2x4x64xf32>) -> tensor<1x2x4x64xf32>
  %o = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<1x2x4x8xf32>, tensor<1x2x8x64xf32>) outs(%o_zero : tensor<1x2x4x64xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x4x64xf32>
  return %o : tensor<1x2x4x64xf32>
}

// -----

#q = affine_map<(b, h, i, j, c) -> (b, h, i, c)>
#k = affine_map<(b, h, i, j, c) -> (b, h, j, c)>
#s = affine_map<(b, h, i, j, c) -> (b, h, i, j)>
#p = affine_map<(b, h, i, c, j) -> (b, h, i, j)>
#v = affine_map<(b, h, i, c, j) -> (b, h, j, c)>
#o = affine_map<(b, h, i, c, j) -> (b, h, i, c)>
#e = affine_map<(b, h, i, j) -> (b, h, i, j)>

// A classifier's softmax is not attention: no remark.
func.func @classifier(%logits: tensor<4x10xf32>) -> tensor<4x10xf32> {
  %zero = arith.constant 0.0 : f32
  %p_init = tensor.empty() : tensor<4x10xf32>
  %p = linalg.softmax dimension(1) ins(%logits : tensor<4x10xf32>) outs(%p_init : tensor<4x10xf32>) -> tensor<4x10xf32>
  return %p : tensor<4x10xf32>
}

// -----

#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0)>

// The decomposed softmax of qattn-raise-attention-forms.mlir with its maximum started at 0: a row
// whose scores are all below 0 would be shifted wrongly, so it is not taken for a softmax.
func.func @decomposed_max_from_zero(%arg0: tensor<4x64xf16>, %arg1: tensor<8x64xf16>, %arg2: tensor<8x64xf16>) -> tensor<4x64xf32> {
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
  %cst_1 = arith.constant 0.000000e+00 : f32
  %8 = linalg.fill ins(%cst_1 : f32) outs(%7 : tensor<4xf32>) -> tensor<4xf32>
  // expected-error@+1 {{qattn-raise-attention: not raised: the row maximum does not start at -inf}}
  %9 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%5 : tensor<4x8xf32>) outs(%8 : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %17 = arith.maxnumf %in, %out : f32
    linalg.yield %17 : f32
  } -> tensor<4xf32>
  // expected-note@+1 {{for this softmax}}
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

// Decode over a cache of dynamic length: qattn.attention would take it, qattn.quantize does not.
func.func @dynamic_keys(%q: tensor<1x8x4x64xf32>, %k: tensor<1x8x?x64xf32>, %v: tensor<1x8x?x64xf32>) -> tensor<1x8x4x64xf32> {
  %c2 = arith.constant 2 : index
  %n = tensor.dim %k, %c2 : tensor<1x8x?x64xf32>
  %zero = arith.constant 0.0 : f32
  %s_init = tensor.empty(%n) : tensor<1x8x4x?xf32>
  %s_zero = linalg.fill ins(%zero : f32) outs(%s_init : tensor<1x8x4x?xf32>) -> tensor<1x8x4x?xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(b, h, i, j, c) -> (b, h, i, c)>, affine_map<(b, h, i, j, c) -> (b, h, j, c)>, affine_map<(b, h, i, j, c) -> (b, h, i, j)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<1x8x4x64xf32>, tensor<1x8x?x64xf32>) outs(%s_zero : tensor<1x8x4x?xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x8x4x?xf32>
  %p_init = tensor.empty(%n) : tensor<1x8x4x?xf32>
  // expected-error@+1 {{qattn-raise-attention: not raised: the scores tensor<1x8x4x?xf32> have a dynamic key count or batch: qattn.attention accepts a dynamic batch and cache capacity, but qattn.quantize and qattn.progressive_quantize, which quantize K and V here, take static shapes only}}
  %p = linalg.softmax dimension(3) ins(%s : tensor<1x8x4x?xf32>) outs(%p_init : tensor<1x8x4x?xf32>) -> tensor<1x8x4x?xf32>
  %o_init = tensor.empty() : tensor<1x8x4x64xf32>
  %o_zero = linalg.fill ins(%zero : f32) outs(%o_init : tensor<1x8x4x64xf32>) -> tensor<1x8x4x64xf32>
  %o = linalg.generic {indexing_maps = [affine_map<(b, h, i, c, j) -> (b, h, i, j)>, affine_map<(b, h, i, c, j) -> (b, h, j, c)>, affine_map<(b, h, i, c, j) -> (b, h, i, c)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<1x8x4x?xf32>, tensor<1x8x?x64xf32>) outs(%o_zero : tensor<1x8x4x64xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x8x4x64xf32>
  return %o : tensor<1x8x4x64xf32>
}

// -----

#q = affine_map<(b, h, i, j, c) -> (b, h, i, c)>
#k = affine_map<(b, h, i, j, c) -> (b, h, j, c)>
#s = affine_map<(b, h, i, j, c) -> (b, h, i, j)>
#p = affine_map<(b, h, i, c, j) -> (b, h, i, j)>
#v = affine_map<(b, h, i, c, j) -> (b, h, j, c)>
#o = affine_map<(b, h, i, c, j) -> (b, h, i, c)>
#e = affine_map<(b, h, i, j) -> (b, h, i, j)>
#m2 = affine_map<(b, h, i, j) -> (i, j)>
#i2 = affine_map<(i, j) -> (i, j)>

// The iota mask aligned top-left (key > query) with Nq < Nk: not qattn's causal mask.
func.func @iota_top_left(%q: tensor<1x2x4x64xf32>, %k: tensor<1x2x8x64xf32>, %v: tensor<1x2x8x64xf32>) -> tensor<1x2x4x64xf32> {
  %zero = arith.constant 0.0 : f32
  %s_init = tensor.empty() : tensor<1x2x4x8xf32>
  %s_zero = linalg.fill ins(%zero : f32) outs(%s_init : tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %s = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<1x2x4x64xf32>, tensor<1x2x8x64xf32>) outs(%s_zero : tensor<1x2x4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x4x8xf32>
  %rows = tensor.generate {
  ^bb0(%i: index, %j: index):
    tensor.yield %i : index
  } : tensor<4x8xindex>
  %cols_init = tensor.empty() : tensor<4x8xi64>
  %cols = linalg.generic {indexing_maps = [#i2], iterator_types = ["parallel", "parallel"]} outs(%cols_init : tensor<4x8xi64>) {
  ^bb0(%out: i64):
    %j = linalg.index 1 : index
    %ji = arith.index_cast %j : index to i64
    linalg.yield %ji : i64
  } -> tensor<4x8xi64>
  %future_init = tensor.empty() : tensor<4x8xi1>
  %future = linalg.generic {indexing_maps = [#i2, #i2, #i2], iterator_types = ["parallel", "parallel"]}
      ins(%rows, %cols : tensor<4x8xindex>, tensor<4x8xi64>) outs(%future_init : tensor<4x8xi1>) {
  ^bb0(%i: index, %j: i64, %out: i1):
    %ii = arith.index_cast %i : index to i64
    %f = arith.cmpi sgt, %j, %ii : i64
    linalg.yield %f : i1
  } -> tensor<4x8xi1>
  %ninf = arith.constant 0xFF800000 : f32
  %t_init = tensor.empty() : tensor<1x2x4x8xf32>
  %t = linalg.generic {indexing_maps = [#e, #m2, #e], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s, %future : tensor<1x2x4x8xf32>, tensor<4x8xi1>) outs(%t_init : tensor<1x2x4x8xf32>) {
  ^bb0(%x: f32, %hide: i1, %out: f32):
    %y = arith.select %hide, %ninf, %x : f32
    linalg.yield %y : f32
  } -> tensor<1x2x4x8xf32>
  %p_init = tensor.empty() : tensor<1x2x4x8xf32>
  // expected-error@+1 {{qattn-raise-attention: not raised: masks the scores, but not causally with the last query aligned to the last key: query 0 does not see key 1}}
  %p = linalg.softmax dimension(3) ins(%t : tensor<1x2x4x8xf32>) outs(%p_init : tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %o_init = tensor.empty() : tensor<1x2x4x64xf32>
  %o_zero = linalg.fill ins(%zero : f32) outs(%o_init : tensor<1x2x4x64xf32>) -> tensor<1x2x4x64xf32>
  %o = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<1x2x4x8xf32>, tensor<1x2x8x64xf32>) outs(%o_zero : tensor<1x2x4x64xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x4x64xf32>
  return %o : tensor<1x2x4x64xf32>
}
