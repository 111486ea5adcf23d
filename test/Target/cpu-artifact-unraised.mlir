// Attention that qattn-raise-attention did not raise is refused by both targets, at the op, with
// no artifact written; --allow-unquantized compiles it as float code (linalg.softmax decomposed
// first) and qattn-run runs it. An exp between two matmuls without a row sum (SiLU) is no softmax.

// RUN: rm -rf %t && not qattn-compile %s -o %t 2>&1 | FileCheck %s --implicit-check-not=error:
// RUN: not test -e %t
// RUN: not qattn-compile %s -o %t --target=cuda --no-cubin 2>&1 | FileCheck %s --implicit-check-not=error:
// RUN: not test -e %t

// With the option, cuda still refuses the float host code, with its own diagnostic, not a crash.
// RUN: not qattn-compile %s -o %t --target=cuda --no-cubin --allow-unquantized 2>&1 | FileCheck %s --check-prefix=CUDA-ALLOW
// RUN: not test -e %t

// RUN: qattn-compile %s -o %t --allow-unquantized | FileCheck %s --check-prefix=ALLOW
// RUN: FileCheck %s --input-file=%t/manifest.json --check-prefix=MANIFEST
// RUN: qattn-run %t --function softmax_attention --seed 7 | FileCheck %s --check-prefix=RUN-SOFTMAX
// RUN: qattn-run %t --function decomposed_attention --seed 7 | FileCheck %s --check-prefix=RUN-DECOMPOSED
// RUN: qattn-run %t --function classifier | FileCheck %s --check-prefix=RUN-CLASSIFIER
// RUN: qattn-run %t --function silu_mlp | FileCheck %s --check-prefix=RUN-SILU

// CHECK: cpu-artifact-unraised.mlir:[[@LINE+45]]:{{[0-9]+}}: error: 'linalg.softmax' op is the softmax of an attention that is still in linalg; qattn-compile would compile it unquantized, as float code. Run qattn-raise-attention first (qattn-opt --qattn-raise-attention) to quantize it as qattn.attention, or pass qattn-compile --allow-unquantized to compile float attention on purpose
// CHECK: note: its QK^T contraction
// CHECK-NEXT: %s = linalg.generic
// CHECK: note: its P.V contraction
// CHECK-NEXT: %o = linalg.generic

// CHECK: cpu-artifact-unraised.mlir:[[@LINE+73]]:{{[0-9]+}}: error: 'linalg.generic' op takes the exp of a softmax between two contractions: an attention that is still in linalg; qattn-compile would compile it unquantized, as float code. Run qattn-raise-attention first (qattn-opt --qattn-raise-attention)
// CHECK: note: its QK^T contraction
// CHECK-NEXT: %s = linalg.batch_matmul
// CHECK: note: its P.V contraction
// CHECK-NEXT: %o = linalg.batch_matmul

// CHECK: cpu-artifact-unraised.mlir:[[@LINE+97]]:{{[0-9]+}}: error: 'linalg.softmax' op is left in the module, where qattn-compile expects attention raised to qattn.attention; qattn-compile would compile it unquantized, as float code. Run qattn-raise-attention first (qattn-opt --qattn-raise-attention)

// CUDA-ALLOW: error: 'linalg.{{[a-z_]+}}' op cannot be expressed in a cuda artifact's manifest

// ALLOW: wrote {{.*}}/manifest.json and {{.*}}/module.so
// MANIFEST: "name": "softmax_attention",
// MANIFEST: "kind": "none"

// RUN-SOFTMAX: result result0: f32 [1, 2, 8, 16]
// RUN-DECOMPOSED: result result0: f32 [2, 8, 16]
// RUN-CLASSIFIER: result result0: f32 [4, 10]
// RUN-SILU: result result0: f32 [4, 16]

#q = affine_map<(b, h, i, j, c) -> (b, h, i, c)>
#k = affine_map<(b, h, i, j, c) -> (b, h, j, c)>
#s = affine_map<(b, h, i, j, c) -> (b, h, i, j)>
#p = affine_map<(b, h, i, c, j) -> (b, h, i, j)>
#v = affine_map<(b, h, i, c, j) -> (b, h, j, c)>
#o = affine_map<(b, h, i, c, j) -> (b, h, i, c)>

// What a frontend emits, and qattn-raise-attention raises.
func.func @softmax_attention(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x24x16xf32>, %v: tensor<1x2x24x16xf32>) -> tensor<1x2x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %s_init = tensor.empty() : tensor<1x2x8x24xf32>
  %s_zero = linalg.fill ins(%zero : f32) outs(%s_init : tensor<1x2x8x24xf32>) -> tensor<1x2x8x24xf32>
  %s = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<1x2x8x16xf32>, tensor<1x2x24x16xf32>) outs(%s_zero : tensor<1x2x8x24xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x24xf32>
  %p_init = tensor.empty() : tensor<1x2x8x24xf32>
  %p = linalg.softmax dimension(3) ins(%s : tensor<1x2x8x24xf32>) outs(%p_init : tensor<1x2x8x24xf32>) -> tensor<1x2x8x24xf32>
  %o_init = tensor.empty() : tensor<1x2x8x16xf32>
  %o_zero = linalg.fill ins(%zero : f32) outs(%o_init : tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %o = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<1x2x8x24xf32>, tensor<1x2x24x16xf32>) outs(%o_zero : tensor<1x2x8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

#x = affine_map<(b, i, j) -> (b, i, j)>
#row = affine_map<(b, i, j) -> (b, i)>

// The softmax written out (row max, exp, row sum, divide), between batch_matmuls over B*H.
func.func @decomposed_attention(%q: tensor<2x8x16xf32>, %k: tensor<2x24x16xf32>, %v: tensor<2x24x16xf32>) -> tensor<2x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %kt_init = tensor.empty() : tensor<2x16x24xf32>
  %kt = linalg.transpose ins(%k : tensor<2x24x16xf32>) outs(%kt_init : tensor<2x16x24xf32>) permutation = [0, 2, 1]
  %s_init = tensor.empty() : tensor<2x8x24xf32>
  %s_zero = linalg.fill ins(%zero : f32) outs(%s_init : tensor<2x8x24xf32>) -> tensor<2x8x24xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<2x8x16xf32>, tensor<2x16x24xf32>) outs(%s_zero : tensor<2x8x24xf32>) -> tensor<2x8x24xf32>
  %r_init = tensor.empty() : tensor<2x8xf32>
  %m_init = linalg.fill ins(%ninf : f32) outs(%r_init : tensor<2x8xf32>) -> tensor<2x8xf32>
  %m = linalg.generic {indexing_maps = [#x, #row], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%s : tensor<2x8x24xf32>) outs(%m_init : tensor<2x8xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.maximumf %x, %acc : f32
    linalg.yield %y : f32
  } -> tensor<2x8xf32>
  %e_init = tensor.empty() : tensor<2x8x24xf32>
  %e = linalg.generic {indexing_maps = [#x, #row, #x], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s, %m : tensor<2x8x24xf32>, tensor<2x8xf32>) outs(%e_init : tensor<2x8x24xf32>) {
  ^bb0(%x: f32, %max: f32, %out: f32):
    %d = arith.subf %x, %max : f32
    %y = math.exp %d : f32
    linalg.yield %y : f32
  } -> tensor<2x8x24xf32>
  %l_init = linalg.fill ins(%zero : f32) outs(%r_init : tensor<2x8xf32>) -> tensor<2x8xf32>
  %l = linalg.generic {indexing_maps = [#x, #row], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%e : tensor<2x8x24xf32>) outs(%l_init : tensor<2x8xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.addf %x, %acc : f32
    linalg.yield %y : f32
  } -> tensor<2x8xf32>
  %p_init = tensor.empty() : tensor<2x8x24xf32>
  %p = linalg.generic {indexing_maps = [#x, #row, #x], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%e, %l : tensor<2x8x24xf32>, tensor<2x8xf32>) outs(%p_init : tensor<2x8x24xf32>) {
  ^bb0(%x: f32, %sum: f32, %out: f32):
    %y = arith.divf %x, %sum : f32
    linalg.yield %y : f32
  } -> tensor<2x8x24xf32>
  %o_init = tensor.empty() : tensor<2x8x16xf32>
  %o_zero = linalg.fill ins(%zero : f32) outs(%o_init : tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x8x24xf32>, tensor<2x24x16xf32>) outs(%o_zero : tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  return %o : tensor<2x8x16xf32>
}

// A softmax of no attention is refused too: the pass is where it would be raised, or not.
func.func @classifier(%logits: tensor<4x10xf32>) -> tensor<4x10xf32> {
  %init = tensor.empty() : tensor<4x10xf32>
  %p = linalg.softmax dimension(1) ins(%logits : tensor<4x10xf32>) outs(%init : tensor<4x10xf32>) -> tensor<4x10xf32>
  return %p : tensor<4x10xf32>
}

#e = affine_map<(i, j) -> (i, j)>

// An MLP: exp between two matmuls, but no row sum. Not reported.
func.func @silu_mlp(%x: tensor<4x16xf32>, %w1: tensor<16x32xf32>, %w2: tensor<32x16xf32>) -> tensor<4x16xf32> {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %h_init = tensor.empty() : tensor<4x32xf32>
  %h_zero = linalg.fill ins(%zero : f32) outs(%h_init : tensor<4x32xf32>) -> tensor<4x32xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<4x16xf32>, tensor<16x32xf32>) outs(%h_zero : tensor<4x32xf32>) -> tensor<4x32xf32>
  %a = linalg.generic {indexing_maps = [#e, #e], iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<4x32xf32>) outs(%h_init : tensor<4x32xf32>) {
  ^bb0(%y: f32, %out: f32):
    %n = arith.negf %y : f32
    %en = math.exp %n : f32
    %d = arith.addf %en, %one : f32
    %r = arith.divf %y, %d : f32
    linalg.yield %r : f32
  } -> tensor<4x32xf32>
  %o_init = tensor.empty() : tensor<4x16xf32>
  %o_zero = linalg.fill ins(%zero : f32) outs(%o_init : tensor<4x16xf32>) -> tensor<4x16xf32>
  %o = linalg.matmul ins(%a, %w2 : tensor<4x32xf32>, tensor<32x16xf32>) outs(%o_zero : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %o : tensor<4x16xf32>
}
