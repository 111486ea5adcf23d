// Masks in the spellings torch-style frontends use, raised when they are qattn's causal mask
// (key j visible to query i iff j <= i + Nk - Nq) and left alone with the reason otherwise.
// RUN: qattn-opt %s -split-input-file --qattn-raise-attention -verify-diagnostics | FileCheck %s

#q = affine_map<(b, h, i, j, c) -> (b, h, i, c)>
#k = affine_map<(b, h, i, j, c) -> (b, h, j, c)>
#s = affine_map<(b, h, i, j, c) -> (b, h, i, j)>
#p = affine_map<(b, h, i, c, j) -> (b, h, i, j)>
#v = affine_map<(b, h, i, c, j) -> (b, h, j, c)>
#o = affine_map<(b, h, i, c, j) -> (b, h, i, c)>
#e = affine_map<(b, h, i, j) -> (b, h, i, j)>
#m2 = affine_map<(b, h, i, j) -> (i, j)>
#i2 = affine_map<(i, j) -> (i, j)>

// CHECK-LABEL: func.func @iota_generic(
// CHECK-NOT:     linalg.
// CHECK:         qattn.attention
// CHECK-SAME:      {causal, {{.*}}scale = 1.000000e+00 : f32
// CHECK-NOT:     linalg.
// CHECK:         return
// Row indices from tensor.generate, key indices from linalg.generic on linalg.index, their
// comparison (key > query + Nk - Nq) into an i1 tensor, a select of -inf on it.
func.func @iota_generic(%q: tensor<1x2x4x64xf32>, %k: tensor<1x2x8x64xf32>, %v: tensor<1x2x8x64xf32>) -> tensor<1x2x4x64xf32> {
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
    %c4 = arith.constant 4 : i64
    %last = arith.addi %ii, %c4 : i64
    %f = arith.cmpi sgt, %j, %last : i64
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
  %p = linalg.softmax dimension(3) ins(%t : tensor<1x2x4x8xf32>) outs(%p_init : tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %o_init = tensor.empty() : tensor<1x2x4x64xf32>
  %o_zero = linalg.fill ins(%zero : f32) outs(%o_init : tensor<1x2x4x64xf32>) -> tensor<1x2x4x64xf32>
  // expected-remark@+1 {{qattn-raise-attention: raised to qattn.attention (causal, scale 1, Hq 2, Hkv 2)}}
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
#m2 = affine_map<(b, h, i, j) -> (i, j)>
#i2 = affine_map<(i, j) -> (i, j)>

// CHECK-LABEL: func.func @iota_arith_tensors(
// CHECK-NOT:     linalg.
// CHECK:         qattn.attention
// CHECK-SAME:      {causal, {{.*}}scale = 1.250000e-01 : f32
// CHECK-NOT:     linalg.
// CHECK:         return
// Elementwise arith on whole tensors: dense iota constants broadcast to [Nq, Nk], arith.addi and
// arith.cmpi on tensors, the i1 tensor broadcast over batch and heads, arith.mulf by a splat
// and arith.select of -1e9.
func.func @iota_arith_tensors(%q: tensor<1x2x4x64xf32>, %k: tensor<1x2x8x64xf32>, %v: tensor<1x2x8x64xf32>) -> tensor<1x2x4x64xf32> {
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
  %row_iota = arith.constant dense<[0, 1, 2, 3]> : tensor<4xindex>
  %col_iota = arith.constant dense<[0, 1, 2, 3, 4, 5, 6, 7]> : tensor<8xindex>
  %rows_init = tensor.empty() : tensor<4x8xindex>
  %rows = linalg.broadcast ins(%row_iota : tensor<4xindex>) outs(%rows_init : tensor<4x8xindex>) dimensions = [1]
  %cols = linalg.broadcast ins(%col_iota : tensor<8xindex>) outs(%rows_init : tensor<4x8xindex>) dimensions = [0]
  %offset = arith.constant dense<4> : tensor<4x8xindex>
  %last = arith.addi %rows, %offset : tensor<4x8xindex>
  %visible = arith.cmpi ule, %cols, %last : tensor<4x8xindex>
  %visible4_init = tensor.empty() : tensor<1x2x4x8xi1>
  %visible4 = linalg.broadcast ins(%visible : tensor<4x8xi1>) outs(%visible4_init : tensor<1x2x4x8xi1>) dimensions = [0, 1]
  %c = arith.constant dense<0.125> : tensor<1x2x4x8xf32>
  %scaled = arith.mulf %s, %c : tensor<1x2x4x8xf32>
  %neg = arith.constant dense<-1.0e9> : tensor<1x2x4x8xf32>
  %t = arith.select %visible4, %scaled, %neg : tensor<1x2x4x8xi1>, tensor<1x2x4x8xf32>
  %p_init = tensor.empty() : tensor<1x2x4x8xf32>
  %p = linalg.softmax dimension(3) ins(%t : tensor<1x2x4x8xf32>) outs(%p_init : tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %o_init = tensor.empty() : tensor<1x2x4x64xf32>
  %o_zero = linalg.fill ins(%zero : f32) outs(%o_init : tensor<1x2x4x64xf32>) -> tensor<1x2x4x64xf32>
  // expected-remark@+1 {{qattn-raise-attention: raised to qattn.attention (causal, scale 0.125, Hq 2, Hkv 2)}}
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
#m2 = affine_map<(b, h, i, j) -> (i, j)>
#i2 = affine_map<(i, j) -> (i, j)>

// CHECK-LABEL: func.func @additive_computed(
// CHECK-NOT:     linalg.
// CHECK:         qattn.attention
// CHECK-SAME:      {causal, {{.*}}scale = 1.000000e+00 : f32
// CHECK-NOT:     linalg.
// CHECK:         return
// An additive float mask computed from linalg.index (0 where visible, -inf where not),
// broadcast over batch and heads and added by linalg.add.
func.func @additive_computed(%q: tensor<1x2x4x64xf32>, %k: tensor<1x2x8x64xf32>, %v: tensor<1x2x8x64xf32>) -> tensor<1x2x4x64xf32> {
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
  %zero_f = arith.constant 0.0 : f32
  %c4 = arith.constant 4 : index
  %mask_init = tensor.empty() : tensor<4x8xf32>
  %mask = linalg.generic {indexing_maps = [#i2], iterator_types = ["parallel", "parallel"]} outs(%mask_init : tensor<4x8xf32>) {
  ^bb0(%out: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %last = arith.addi %i, %c4 : index
    %visible = arith.cmpi ule, %j, %last : index
    %m = arith.select %visible, %zero_f, %ninf : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  %mask4_init = tensor.empty() : tensor<1x2x4x8xf32>
  %mask4 = linalg.broadcast ins(%mask : tensor<4x8xf32>) outs(%mask4_init : tensor<1x2x4x8xf32>) dimensions = [0, 1]
  %t_init = tensor.empty() : tensor<1x2x4x8xf32>
  %t = linalg.add ins(%s, %mask4 : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) outs(%t_init : tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %p_init = tensor.empty() : tensor<1x2x4x8xf32>
  %p = linalg.softmax dimension(3) ins(%t : tensor<1x2x4x8xf32>) outs(%p_init : tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %o_init = tensor.empty() : tensor<1x2x4x64xf32>
  %o_zero = linalg.fill ins(%zero : f32) outs(%o_init : tensor<1x2x4x64xf32>) -> tensor<1x2x4x64xf32>
  // expected-remark@+1 {{qattn-raise-attention: raised to qattn.attention (causal, scale 1, Hq 2, Hkv 2)}}
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
#m2 = affine_map<(b, h, i, j) -> (i, j)>
#i2 = affine_map<(i, j) -> (i, j)>

// CHECK-LABEL: func.func @additive_constant_large(
// CHECK-NOT:     linalg.
// CHECK:         qattn.attention
// CHECK-SAME:      {causal, {{.*}}scale = 1.000000e+00 : f32
// CHECK-NOT:     linalg.
// CHECK:         return
// A constant additive mask of 0 and -1e9, reshaped to [1, 1, Nq, Nk] and added by arith.addf on
// tensors.
func.func @additive_constant_large(%q: tensor<1x1x4x64xf32>, %k: tensor<1x1x8x64xf32>, %v: tensor<1x1x8x64xf32>) -> tensor<1x1x4x64xf32> {
  %zero = arith.constant 0.0 : f32
  %s_init = tensor.empty() : tensor<1x1x4x8xf32>
  %s_zero = linalg.fill ins(%zero : f32) outs(%s_init : tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32>
  %s = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<1x1x4x64xf32>, tensor<1x1x8x64xf32>) outs(%s_zero : tensor<1x1x4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x1x4x8xf32>
  %mask = arith.constant dense<[[0.0, 0.0, 0.0, 0.0, 0.0, -1.0e9, -1.0e9, -1.0e9],
      [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -1.0e9, -1.0e9],
      [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -1.0e9],
      [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]]> : tensor<4x8xf32>
  %mask4 = tensor.expand_shape %mask [[0, 1, 2], [3]] output_shape [1, 1, 4, 8] : tensor<4x8xf32> into tensor<1x1x4x8xf32>
  %t = arith.addf %s, %mask4 : tensor<1x1x4x8xf32>
  %p_init = tensor.empty() : tensor<1x1x4x8xf32>
  %p = linalg.softmax dimension(3) ins(%t : tensor<1x1x4x8xf32>) outs(%p_init : tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32>
  %o_init = tensor.empty() : tensor<1x1x4x64xf32>
  %o_zero = linalg.fill ins(%zero : f32) outs(%o_init : tensor<1x1x4x64xf32>) -> tensor<1x1x4x64xf32>
  // expected-remark@+1 {{qattn-raise-attention: raised to qattn.attention (causal, scale 1, Hq 1, Hkv 1)}}
  %o = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<1x1x4x8xf32>, tensor<1x1x8x64xf32>) outs(%o_zero : tensor<1x1x4x64xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x1x4x64xf32>
  return %o : tensor<1x1x4x64xf32>
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

// CHECK-LABEL: func.func @subtract_keep(
// CHECK-NOT:     linalg.
// CHECK:         qattn.attention
// CHECK-SAME:      {causal, {{.*}}scale = 1.000000e+00 : f32
// CHECK-NOT:     linalg.
// CHECK:         return
// A keep mask of 1 and 0 from linalg.index, applied as scores - (1 - keep) * 1e4.
func.func @subtract_keep(%q: tensor<1x2x4x64xf32>, %k: tensor<1x2x8x64xf32>, %v: tensor<1x2x8x64xf32>) -> tensor<1x2x4x64xf32> {
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
  %one = arith.constant 1.0 : f32
  %zero_f = arith.constant 0.0 : f32
  %big = arith.constant 1.0e4 : f32
  %c4 = arith.constant 4 : index
  %keep_init = tensor.empty() : tensor<4x8xf32>
  %keep = linalg.generic {indexing_maps = [#i2], iterator_types = ["parallel", "parallel"]} outs(%keep_init : tensor<4x8xf32>) {
  ^bb0(%out: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %last = arith.addi %i, %c4 : index
    %visible = arith.cmpi ule, %j, %last : index
    %kf = arith.select %visible, %one, %zero_f : f32
    linalg.yield %kf : f32
  } -> tensor<4x8xf32>
  %t_init = tensor.empty() : tensor<1x2x4x8xf32>
  %t = linalg.generic {indexing_maps = [#e, #m2, #e], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s, %keep : tensor<1x2x4x8xf32>, tensor<4x8xf32>) outs(%t_init : tensor<1x2x4x8xf32>) {
  ^bb0(%x: f32, %kv: f32, %out: f32):
    %hidden = arith.subf %one, %kv : f32
    %penalty = arith.mulf %hidden, %big : f32
    %y = arith.subf %x, %penalty : f32
    linalg.yield %y : f32
  } -> tensor<1x2x4x8xf32>
  %p_init = tensor.empty() : tensor<1x2x4x8xf32>
  %p = linalg.softmax dimension(3) ins(%t : tensor<1x2x4x8xf32>) outs(%p_init : tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %o_init = tensor.empty() : tensor<1x2x4x64xf32>
  %o_zero = linalg.fill ins(%zero : f32) outs(%o_init : tensor<1x2x4x64xf32>) -> tensor<1x2x4x64xf32>
  // expected-remark@+1 {{qattn-raise-attention: raised to qattn.attention (causal, scale 1, Hq 2, Hkv 2)}}
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
#m2 = affine_map<(b, h, i, j) -> (i, j)>
#i2 = affine_map<(i, j) -> (i, j)>

// CHECK-LABEL: func.func @iota_top_left(
// CHECK-NOT:     qattn.
// CHECK:         linalg.softmax
// CHECK-NOT:     qattn.
// CHECK:         return
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
#m2 = affine_map<(b, h, i, j) -> (i, j)>
#i2 = affine_map<(i, j) -> (i, j)>

// CHECK-LABEL: func.func @sliding_window(
// CHECK-NOT:     qattn.
// CHECK:         linalg.softmax
// CHECK-NOT:     qattn.
// CHECK:         return
// A sliding window (query i sees keys i + 2 .. i + 4): causal bottom-right and more.
func.func @sliding_window(%q: tensor<1x2x4x64xf32>, %k: tensor<1x2x8x64xf32>, %v: tensor<1x2x8x64xf32>) -> tensor<1x2x4x64xf32> {
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
    %c4 = arith.constant 4 : i64
    %c2 = arith.constant 2 : i64
    %last = arith.addi %ii, %c4 : i64
    %first = arith.addi %ii, %c2 : i64
    %late = arith.cmpi sgt, %j, %last : i64
    %early = arith.cmpi slt, %j, %first : i64
    %f = arith.ori %late, %early : i1
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
  // expected-remark@+1 {{qattn-raise-attention: not raised: masks the scores, but not causally with the last query aligned to the last key: query 0 does not see key 0}}
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
#m2 = affine_map<(b, h, i, j) -> (i, j)>
#i2 = affine_map<(i, j) -> (i, j)>

// CHECK-LABEL: func.func @mask_per_head(
// CHECK-NOT:     qattn.
// CHECK:         linalg.softmax
// CHECK-NOT:     qattn.
// CHECK:         return
// A mask that depends on the head (linalg.index 1).
func.func @mask_per_head(%q: tensor<1x2x4x64xf32>, %k: tensor<1x2x8x64xf32>, %v: tensor<1x2x8x64xf32>) -> tensor<1x2x4x64xf32> {
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
    // expected-remark@+1 {{qattn-raise-attention: not raised: masks the scores with values that vary with the batch or head}}
    %h = linalg.index 1 : index
    %j = linalg.index 3 : index
    %f = arith.cmpi ugt, %j, %h : index
    %y = arith.select %f, %ninf, %x : f32
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
#m2 = affine_map<(b, h, i, j) -> (i, j)>
#i2 = affine_map<(i, j) -> (i, j)>

// CHECK-LABEL: func.func @select_small(
// CHECK-NOT:     qattn.
// CHECK:         linalg.softmax
// CHECK-NOT:     qattn.
// CHECK:         return
// A select of -10: not small enough to hide a key.
func.func @select_small(%q: tensor<1x2x4x64xf32>, %k: tensor<1x2x8x64xf32>, %v: tensor<1x2x8x64xf32>) -> tensor<1x2x4x64xf32> {
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
  %low = arith.constant -10.0 : f32
  %c4 = arith.constant 4 : index
  %t_init = tensor.empty() : tensor<1x2x4x8xf32>
  %t = linalg.generic {indexing_maps = [#e, #e], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s : tensor<1x2x4x8xf32>) outs(%t_init : tensor<1x2x4x8xf32>) {
  ^bb0(%x: f32, %out: f32):
    %i = linalg.index 2 : index
    %j = linalg.index 3 : index
    %last = arith.addi %i, %c4 : index
    %f = arith.cmpi ugt, %j, %last : index
    // expected-remark@+1 {{qattn-raise-attention: not raised: replaces the score of query 0 and key 5 by -10, not by -inf or a value <= -1e4}}
    %y = arith.select %f, %low, %x : f32
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
#m2 = affine_map<(b, h, i, j) -> (i, j)>
#i2 = affine_map<(i, j) -> (i, j)>

// CHECK-LABEL: func.func @mask_argument(
// CHECK-NOT:     qattn.
// CHECK:         linalg.softmax
// CHECK-NOT:     qattn.
// CHECK:         return
// A mask that is not computed from constants (a function argument) cannot be checked.
func.func @mask_argument(%q: tensor<1x1x4x64xf32>, %k: tensor<1x1x8x64xf32>, %v: tensor<1x1x8x64xf32>) -> tensor<1x1x4x64xf32> {
  %zero = arith.constant 0.0 : f32
  %s_init = tensor.empty() : tensor<1x1x4x8xf32>
  %s_zero = linalg.fill ins(%zero : f32) outs(%s_init : tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32>
  %s = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<1x1x4x64xf32>, tensor<1x1x8x64xf32>) outs(%s_zero : tensor<1x1x4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x1x4x8xf32>
  // expected-remark@+1 {{qattn-raise-attention: not raised: computes a mask with 'tensor.empty', which the pass cannot evaluate}}
  %mask = tensor.empty() : tensor<1x1x4x8xf32>
  %t = arith.addf %s, %mask : tensor<1x1x4x8xf32>
  %p_init = tensor.empty() : tensor<1x1x4x8xf32>
  // expected-note@+1 {{for this softmax}}
  %p = linalg.softmax dimension(3) ins(%t : tensor<1x1x4x8xf32>) outs(%p_init : tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32>
  %o_init = tensor.empty() : tensor<1x1x4x64xf32>
  %o_zero = linalg.fill ins(%zero : f32) outs(%o_init : tensor<1x1x4x64xf32>) -> tensor<1x1x4x64xf32>
  %o = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<1x1x4x8xf32>, tensor<1x1x8x64xf32>) outs(%o_zero : tensor<1x1x4x64xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x1x4x64xf32>
  return %o : tensor<1x1x4x64xf32>
}

// -----

#q = affine_map<(b, h, i, j, c) -> (b, h, i, c)>
#k = affine_map<(b, h, i, j, c) -> (b, h, j, c)>
#s = affine_map<(b, h, i, j, c) -> (b, h, i, j)>
#p = affine_map<(b, h, i, c, j) -> (b, h, i, j)>
#v = affine_map<(b, h, i, c, j) -> (b, h, j, c)>
#o = affine_map<(b, h, i, c, j) -> (b, h, i, c)>
#e = affine_map<(b, h, i, j) -> (b, h, i, j)>

// CHECK-LABEL: func.func @fill_from_argument(
// CHECK-NOT:     qattn.
// CHECK:         linalg.softmax
// CHECK-NOT:     qattn.
// CHECK:         return
// The masked-out value is a function argument: it cannot be checked to hide its keys.
func.func @fill_from_argument(%q: tensor<1x2x4x64xf32>, %k: tensor<1x2x8x64xf32>, %v: tensor<1x2x8x64xf32>, %fill: f32) -> tensor<1x2x4x64xf32> {
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
  %c4 = arith.constant 4 : index
  %t_init = tensor.empty() : tensor<1x2x4x8xf32>
  // expected-remark@+1 {{qattn-raise-attention: not raised: masks the scores with a value that is not computed from constants (an argument of 'func.func')}}
  %t = linalg.generic {indexing_maps = [#e, #e], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s : tensor<1x2x4x8xf32>) outs(%t_init : tensor<1x2x4x8xf32>) {
  ^bb0(%x: f32, %out: f32):
    %i = linalg.index 2 : index
    %j = linalg.index 3 : index
    %last = arith.addi %i, %c4 : index
    %f = arith.cmpi ugt, %j, %last : index
    %y = arith.select %f, %fill, %x : f32
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
