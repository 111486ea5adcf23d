// RUN: qattn-opt %s -split-input-file --qattn-raise-attention -verify-diagnostics | FileCheck %s

#q = affine_map<(b, h, i, j, c) -> (b, h, i, c)>
#k = affine_map<(b, h, i, j, c) -> (b, h, j, c)>
#s = affine_map<(b, h, i, j, c) -> (b, h, i, j)>
#p = affine_map<(b, h, i, c, j) -> (b, h, i, j)>
#v = affine_map<(b, h, i, c, j) -> (b, h, j, c)>
#o = affine_map<(b, h, i, c, j) -> (b, h, i, c)>
#e = affine_map<(b, h, i, j) -> (b, h, i, j)>

// CHECK-LABEL: func.func @softmax_dim2(
// CHECK-NOT:     qattn.
// CHECK:         linalg.softmax
// CHECK-NOT:     qattn.
// CHECK:         return
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
  // expected-remark@+1 {{qattn-raise-attention: not raised: softmax runs along dimension 2, not the key dimension 3}}
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

// CHECK-LABEL: func.func @scale_not_constant(
// CHECK-NOT:     qattn.
// CHECK:         linalg.softmax
// CHECK-NOT:     qattn.
// CHECK:         return
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
    // expected-remark@+1 {{qattn-raise-attention: not raised: scales the scores by a value that is not a constant}}
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

// CHECK-LABEL: func.func @mask_top_left(
// CHECK-NOT:     qattn.
// CHECK:         linalg.softmax
// CHECK-NOT:     qattn.
// CHECK:         return
// A causal mask aligned at the first key (j <= i) with Nq < Nk: not qattn's causal.
func.func @mask_top_left(%q: tensor<1x2x4x64xf32>, %k: tensor<1x2x8x64xf32>, %v: tensor<1x2x8x64xf32>) -> tensor<1x2x4x64xf32> {
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
  %ninf = arith.constant 0xFF800000 : f32
  %t_init = tensor.empty() : tensor<1x2x4x8xf32>
  %t = linalg.generic {indexing_maps = [#e, #e], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s : tensor<1x2x4x8xf32>) outs(%t_init : tensor<1x2x4x8xf32>) {
  ^bb0(%x: f32, %out: f32):
    %i = linalg.index 2 : index
    %j = linalg.index 3 : index
    %visible = arith.cmpi ule, %j, %i : index
    %y = arith.select %visible, %x, %ninf : f32
    linalg.yield %y : f32
  } -> tensor<1x2x4x8xf32>
  %p_init = tensor.empty() : tensor<1x2x4x8xf32>
  // expected-remark@+1 {{qattn-raise-attention: not raised: masks the scores, but not causally with the last query aligned to the last key: query 0 does not see key 1}}
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

// CHECK-LABEL: func.func @bias_not_mask(
// CHECK-NOT:     qattn.
// CHECK:         linalg.softmax
// CHECK-NOT:     qattn.
// CHECK:         return
// An additive bias (ALiBi-like) is not a mask.
func.func @bias_not_mask(%q: tensor<1x2x4x64xf32>, %k: tensor<1x2x8x64xf32>, %v: tensor<1x2x8x64xf32>) -> tensor<1x2x4x64xf32> {
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
  %bias = arith.constant dense<0.5> : tensor<4x8xf32>
  %t_init = tensor.empty() : tensor<1x2x4x8xf32>
  %t = linalg.generic {indexing_maps = [#e, affine_map<(b, h, i, j) -> (i, j)>, #e], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s, %bias : tensor<1x2x4x8xf32>, tensor<4x8xf32>) outs(%t_init : tensor<1x2x4x8xf32>) {
  ^bb0(%x: f32, %bias_el: f32, %out: f32):
    // expected-remark@+1 {{qattn-raise-attention: not raised: adds 0.5 to the score of query 0 and key 0: a bias, not a mask of 0 and -inf}}
    %y = arith.addf %x, %bias_el : f32
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

// CHECK-LABEL: func.func @pv_accumulates(
// CHECK-NOT:     qattn.
// CHECK:         linalg.softmax
// CHECK-NOT:     qattn.
// CHECK:         return
// P.V accumulated into a live tensor.
func.func @pv_accumulates(%q: tensor<1x2x4x64xf32>, %k: tensor<1x2x8x64xf32>, %v: tensor<1x2x8x64xf32>, %init: tensor<1x2x4x64xf32>) -> tensor<1x2x4x64xf32> {
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
  // expected-note@+1 {{for this softmax}}
  %p = linalg.softmax dimension(3) ins(%s : tensor<1x2x4x8xf32>) outs(%p_init : tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %o_init = tensor.empty() : tensor<1x2x4x64xf32>
  %o_zero = linalg.fill ins(%zero : f32) outs(%o_init : tensor<1x2x4x64xf32>) -> tensor<1x2x4x64xf32>
  // expected-remark@+1 {{qattn-raise-attention: not raised: the P.V contraction does not accumulate into zeros}}
  %o = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<1x2x4x8xf32>, tensor<1x2x8x64xf32>) outs(%init : tensor<1x2x4x64xf32>) {
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

// CHECK-LABEL: func.func @probs_escape(
// CHECK-NOT:     qattn.
// CHECK:         linalg.softmax
// CHECK-NOT:     qattn.
// CHECK:         return
// The probabilities are returned too.
func.func @probs_escape(%q: tensor<1x2x4x64xf32>, %k: tensor<1x2x8x64xf32>, %v: tensor<1x2x8x64xf32>) -> (tensor<1x2x4x64xf32>, tensor<1x2x4x8xf32>) {
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
  // expected-remark@+1 {{qattn-raise-attention: not raised: softmax result has more than one use}}
  %p = linalg.softmax dimension(3) ins(%s : tensor<1x2x4x8xf32>) outs(%p_init : tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %o_init = tensor.empty() : tensor<1x2x4x64xf32>
  %o_zero = linalg.fill ins(%zero : f32) outs(%o_init : tensor<1x2x4x64xf32>) -> tensor<1x2x4x64xf32>
  %o = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<1x2x4x8xf32>, tensor<1x2x8x64xf32>) outs(%o_zero : tensor<1x2x4x64xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x4x64xf32>
  return %o, %p : tensor<1x2x4x64xf32>, tensor<1x2x4x8xf32>
}

// -----

#q = affine_map<(b, h, i, j, c) -> (b, h, i, c)>
#k = affine_map<(b, h, i, j, c) -> (b, h, j, c)>
#s = affine_map<(b, h, i, j, c) -> (b, h, i, j)>
#p = affine_map<(b, h, i, c, j) -> (b, h, i, j)>
#v = affine_map<(b, h, i, c, j) -> (b, h, j, c)>
#o = affine_map<(b, h, i, c, j) -> (b, h, i, c)>
#e = affine_map<(b, h, i, j) -> (b, h, i, j)>

// CHECK-LABEL: func.func @value_head_dim(
// CHECK-NOT:     qattn.
// CHECK:         linalg.softmax
// CHECK-NOT:     qattn.
// CHECK:         return
// Values narrower than the queries.
func.func @value_head_dim(%q: tensor<1x2x4x64xf32>, %k: tensor<1x2x8x64xf32>, %v: tensor<1x2x8x32xf32>) -> tensor<1x2x4x32xf32> {
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
  // expected-note@+1 {{for this softmax}}
  %p = linalg.softmax dimension(3) ins(%s : tensor<1x2x4x8xf32>) outs(%p_init : tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %o_init = tensor.empty() : tensor<1x2x4x32xf32>
  %o_zero = linalg.fill ins(%zero : f32) outs(%o_init : tensor<1x2x4x32xf32>) -> tensor<1x2x4x32xf32>
  // expected-remark@+1 {{qattn-raise-attention: not raised: value head dimension 32 differs from the query's 64}}
  %o = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<1x2x4x8xf32>, tensor<1x2x8x32xf32>) outs(%o_zero : tensor<1x2x4x32xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x4x32xf32>
  return %o : tensor<1x2x4x32xf32>
}

// -----

#q = affine_map<(b, h, i, j, c) -> (b, h, i, c)>
#k = affine_map<(b, h, i, j, c) -> (b, h, j, c)>
#s = affine_map<(b, h, i, j, c) -> (b, h, i, j)>
#p = affine_map<(b, h, i, c, j) -> (b, h, i, j)>
#v = affine_map<(b, h, i, c, j) -> (b, h, j, c)>
#o = affine_map<(b, h, i, c, j) -> (b, h, i, c)>
#e = affine_map<(b, h, i, j) -> (b, h, i, j)>

// CHECK-LABEL: func.func @classifier(
// CHECK-NOT:     qattn.
// CHECK:         linalg.softmax
// CHECK-NOT:     qattn.
// CHECK:         return
// A classifier's softmax is not attention: no remark.
func.func @classifier(%logits: tensor<4x10xf32>) -> tensor<4x10xf32> {
  %zero = arith.constant 0.0 : f32
  %p_init = tensor.empty() : tensor<4x10xf32>
  %p = linalg.softmax dimension(1) ins(%logits : tensor<4x10xf32>) outs(%p_init : tensor<4x10xf32>) -> tensor<4x10xf32>
  return %p : tensor<4x10xf32>
}

// -----

#q = affine_map<(b, h, i, j, c) -> (b, h, i, c)>
#k = affine_map<(b, h, i, j, c) -> (b, h, j, c)>
#s = affine_map<(b, h, i, j, c) -> (b, h, i, j)>
#p = affine_map<(b, h, i, c, j) -> (b, h, i, j)>
#v = affine_map<(b, h, i, c, j) -> (b, h, j, c)>
#o = affine_map<(b, h, i, c, j) -> (b, h, i, c)>
#e = affine_map<(b, h, i, j) -> (b, h, i, j)>

// CHECK-LABEL: func.func @scores_only(
// CHECK-NOT:     qattn.
// CHECK:         linalg.generic
// CHECK-NOT:     qattn.
// CHECK:         return
// QK^T alone.
func.func @scores_only(%q: tensor<1x2x4x64xf32>, %k: tensor<1x2x8x64xf32>, %v: tensor<1x2x8x64xf32>) -> tensor<1x2x4x8xf32> {
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
  return %s : tensor<1x2x4x8xf32>
}

// -----

#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0)>

// CHECK-LABEL: func.func @decomposed_max_from_zero(
// CHECK-NOT:     qattn.
// CHECK:         math.exp
// CHECK-NOT:     qattn.
// CHECK:         return
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
  // expected-remark@+1 {{qattn-raise-attention: not raised: the row maximum does not start at -inf}}
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

#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0)>

// CHECK-LABEL: func.func @decomposed_exp_escapes(
// CHECK-NOT:     qattn.
// CHECK:         math.exp
// CHECK-NOT:     qattn.
// CHECK:         return
// The same softmax with its exponentials returned as well.
func.func @decomposed_exp_escapes(%arg0: tensor<4x64xf16>, %arg1: tensor<8x64xf16>, %arg2: tensor<8x64xf16>) -> (tensor<4x64xf32>, tensor<4x8xf32>) {
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
  // expected-remark@+1 {{qattn-raise-attention: not raised: the softmax's exponentials have a use outside the attention}}
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
  return %16, %10 : tensor<4x64xf32>, tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @dynamic_queries(
// CHECK-NOT:     qattn.
// CHECK:         linalg.softmax
// CHECK-NOT:     qattn.
// CHECK:         return
// Self-attention over a dynamic sequence: the query count is dynamic.
func.func @dynamic_queries(%q: tensor<1x8x?x64xf32>, %k: tensor<1x8x?x64xf32>, %v: tensor<1x8x?x64xf32>) -> tensor<1x8x?x64xf32> {
  %c2 = arith.constant 2 : index
  %n = tensor.dim %q, %c2 : tensor<1x8x?x64xf32>
  %zero = arith.constant 0.0 : f32
  %s_init = tensor.empty(%n, %n) : tensor<1x8x?x?xf32>
  %s_zero = linalg.fill ins(%zero : f32) outs(%s_init : tensor<1x8x?x?xf32>) -> tensor<1x8x?x?xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(b, h, i, j, c) -> (b, h, i, c)>, affine_map<(b, h, i, j, c) -> (b, h, j, c)>, affine_map<(b, h, i, j, c) -> (b, h, i, j)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<1x8x?x64xf32>, tensor<1x8x?x64xf32>) outs(%s_zero : tensor<1x8x?x?xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x8x?x?xf32>
  %p_init = tensor.empty(%n, %n) : tensor<1x8x?x?xf32>
  // expected-remark@+1 {{qattn-raise-attention: not raised: the number of queries is dynamic (scores tensor<1x8x?x?xf32>): qattn.attention takes static queries, heads and head dimension}}
  %p = linalg.softmax dimension(3) ins(%s : tensor<1x8x?x?xf32>) outs(%p_init : tensor<1x8x?x?xf32>) -> tensor<1x8x?x?xf32>
  %o_init = tensor.empty(%n) : tensor<1x8x?x64xf32>
  %o_zero = linalg.fill ins(%zero : f32) outs(%o_init : tensor<1x8x?x64xf32>) -> tensor<1x8x?x64xf32>
  %o = linalg.generic {indexing_maps = [affine_map<(b, h, i, c, j) -> (b, h, i, j)>, affine_map<(b, h, i, c, j) -> (b, h, j, c)>, affine_map<(b, h, i, c, j) -> (b, h, i, c)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<1x8x?x?xf32>, tensor<1x8x?x64xf32>) outs(%o_zero : tensor<1x8x?x64xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x8x?x64xf32>
  return %o : tensor<1x8x?x64xf32>
}

// -----

// CHECK-LABEL: func.func @dynamic_keys(
// CHECK-NOT:     qattn.
// CHECK:         linalg.softmax
// CHECK-NOT:     qattn.
// CHECK:         return
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
  // expected-remark@+1 {{qattn-raise-attention: not raised: the scores tensor<1x8x4x?xf32> have a dynamic key count or batch: qattn.attention accepts a dynamic batch and cache capacity, but qattn.quantize and qattn.progressive_quantize, which quantize K and V here, take static shapes only}}
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

// CHECK-LABEL: func.func @bmm_kt_argument(
// CHECK-NOT:     qattn.
// CHECK:         linalg.softmax
// CHECK-NOT:     qattn.
// CHECK:         return
// linalg.batch_matmul over K^T that the program received transposed: the pass quantizes K
// [..., Nk, d] and will not transpose a tensor it did not see transposed.
func.func @bmm_kt_argument(%q: tensor<2x4x64xf32>, %kt: tensor<2x64x8xf32>, %v: tensor<2x8x64xf32>) -> tensor<2x4x64xf32> {
  %zero = arith.constant 0.0 : f32
  %s_init = tensor.empty() : tensor<2x4x8xf32>
  %s_zero = linalg.fill ins(%zero : f32) outs(%s_init : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  // expected-remark@+1 {{qattn-raise-attention: not raised: reads K^T [..., d, Nk] that is not a transpose of K [..., Nk, d]}}
  %s = linalg.batch_matmul ins(%q, %kt : tensor<2x4x64xf32>, tensor<2x64x8xf32>) outs(%s_zero : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %p_init = tensor.empty() : tensor<2x4x8xf32>
  // expected-note@+1 {{for this softmax}}
  %p = linalg.softmax dimension(2) ins(%s : tensor<2x4x8xf32>) outs(%p_init : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %o_init = tensor.empty() : tensor<2x4x64xf32>
  %o_zero = linalg.fill ins(%zero : f32) outs(%o_init : tensor<2x4x64xf32>) -> tensor<2x4x64xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x4x8xf32>, tensor<2x8x64xf32>) outs(%o_zero : tensor<2x4x64xf32>) -> tensor<2x4x64xf32>
  return %o : tensor<2x4x64xf32>
}

// -----

// CHECK-LABEL: func.func @matmul_bias(
// CHECK-NOT:     qattn.
// CHECK:         linalg.softmax
// CHECK-NOT:     qattn.
// CHECK:         return
// One head as linalg.matmul with an additive bias that grows with the key (ALiBi-like).
func.func @matmul_bias(%q: tensor<4x64xf32>, %k: tensor<8x64xf32>, %v: tensor<8x64xf32>) -> tensor<4x64xf32> {
  %zero = arith.constant 0.0 : f32
  %kt_init = tensor.empty() : tensor<64x8xf32>
  %kt = linalg.transpose ins(%k : tensor<8x64xf32>) outs(%kt_init : tensor<64x8xf32>) permutation = [1, 0]
  %s_init = tensor.empty() : tensor<4x8xf32>
  %s_zero = linalg.fill ins(%zero : f32) outs(%s_init : tensor<4x8xf32>) -> tensor<4x8xf32>
  %s = linalg.matmul ins(%q, %kt : tensor<4x64xf32>, tensor<64x8xf32>) outs(%s_zero : tensor<4x8xf32>) -> tensor<4x8xf32>
  %slope = arith.constant -0.5 : f32
  %t_init = tensor.empty() : tensor<4x8xf32>
  %t = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%s : tensor<4x8xf32>) outs(%t_init : tensor<4x8xf32>) {
  ^bb0(%x: f32, %out: f32):
    %j = linalg.index 1 : index
    %ji = arith.index_cast %j : index to i64
    %jf = arith.sitofp %ji : i64 to f32
    %b = arith.mulf %jf, %slope : f32
    // expected-remark@+1 {{qattn-raise-attention: not raised: adds -0.5 to the score of query 0 and key 1: a bias, not a mask of 0 and -inf}}
    %y = arith.addf %x, %b : f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  %p_init = tensor.empty() : tensor<4x8xf32>
  // expected-note@+1 {{for this softmax}}
  %p = linalg.softmax dimension(1) ins(%t : tensor<4x8xf32>) outs(%p_init : tensor<4x8xf32>) -> tensor<4x8xf32>
  %o_init = tensor.empty() : tensor<4x64xf32>
  %o_zero = linalg.fill ins(%zero : f32) outs(%o_init : tensor<4x64xf32>) -> tensor<4x64xf32>
  %o = linalg.matmul ins(%p, %v : tensor<4x8xf32>, tensor<8x64xf32>) outs(%o_zero : tensor<4x64xf32>) -> tensor<4x64xf32>
  return %o : tensor<4x64xf32>
}
