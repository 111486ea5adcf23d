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
