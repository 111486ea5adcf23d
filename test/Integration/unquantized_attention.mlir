// qattn-compile --allow-unquantized end to end: attention left in linalg compiles as float code
// on the CPU and computes attention. linalg.softmax is decomposed by qattn-compile itself
// (upstream's AggregatedOpInterface); the written-out softmax is lowered as it stands. Each
// result is checked against a float64 NumPy attention (check_float_attention.py, rel_fro <= 1e-5).
// Without the option both are refused (test/Target/cpu-artifact-unraised.mlir).

// REQUIRES: numpy
// RUN: rm -rf %t && qattn-compile %s -o %t/art --allow-unquantized
// RUN: qattn-run %t/art --function softmax_causal --seed 71 --quiet --output-dir %t/softmax_causal
// RUN: %python %S/Inputs/check_float_attention.py --case softmax_causal --run %t/softmax_causal --scale 0.125 --causal-offset 64 | FileCheck %s --check-prefix=SOFTMAX
// RUN: qattn-run %t/art --function written_out --seed 72 --quiet --output-dir %t/written_out
// RUN: %python %S/Inputs/check_float_attention.py --case written_out --run %t/written_out --scale 0.25 | FileCheck %s --check-prefix=WRITTEN

// SOFTMAX: softmax_causal: float program vs float64 attention OK
// SOFTMAX: softmax_causal: all checks passed
// WRITTEN: written_out: float program vs float64 attention OK
// WRITTEN: written_out: all checks passed

#q = affine_map<(b, h, i, j, c) -> (b, h, i, c)>
#k = affine_map<(b, h, i, j, c) -> (b, h, j, c)>
#s = affine_map<(b, h, i, j, c) -> (b, h, i, j)>
#p = affine_map<(b, h, i, c, j) -> (b, h, i, j)>
#v = affine_map<(b, h, i, c, j) -> (b, h, j, c)>
#o = affine_map<(b, h, i, c, j) -> (b, h, i, c)>
#e = affine_map<(b, h, i, j) -> (b, h, i, j)>

// B=1 H=4 Nq=32 Nk=96 d=64, scale 0.125, query i sees keys j <= i + 64, linalg.softmax.
func.func @softmax_causal(%q: tensor<1x4x32x64xf32> {qattn.name = "q"}, %k: tensor<1x4x96x64xf32> {qattn.name = "k"}, %v: tensor<1x4x96x64xf32> {qattn.name = "v"}) -> (tensor<1x4x32x64xf32> {qattn.name = "o"}) {
  %zero = arith.constant 0.0 : f32
  %s_init = tensor.empty() : tensor<1x4x32x96xf32>
  %s_zero = linalg.fill ins(%zero : f32) outs(%s_init : tensor<1x4x32x96xf32>) -> tensor<1x4x32x96xf32>
  %s = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<1x4x32x64xf32>, tensor<1x4x96x64xf32>) outs(%s_zero : tensor<1x4x32x96xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x4x32x96xf32>
  %ninf = arith.constant 0xFF800000 : f32
  %c = arith.constant 0.125 : f32
  %offset = arith.constant 64 : index
  %t_init = tensor.empty() : tensor<1x4x32x96xf32>
  %t = linalg.generic {indexing_maps = [#e, #e], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s : tensor<1x4x32x96xf32>) outs(%t_init : tensor<1x4x32x96xf32>) {
  ^bb0(%x: f32, %out: f32):
    %i = linalg.index 2 : index
    %j = linalg.index 3 : index
    %last = arith.addi %i, %offset : index
    %visible = arith.cmpi ule, %j, %last : index
    %scaled = arith.mulf %x, %c : f32
    %y = arith.select %visible, %scaled, %ninf : f32
    linalg.yield %y : f32
  } -> tensor<1x4x32x96xf32>
  %p_init = tensor.empty() : tensor<1x4x32x96xf32>
  %p = linalg.softmax dimension(3) ins(%t : tensor<1x4x32x96xf32>) outs(%p_init : tensor<1x4x32x96xf32>) -> tensor<1x4x32x96xf32>
  %o_init = tensor.empty() : tensor<1x4x32x64xf32>
  %o_zero = linalg.fill ins(%zero : f32) outs(%o_init : tensor<1x4x32x64xf32>) -> tensor<1x4x32x64xf32>
  %o = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<1x4x32x96xf32>, tensor<1x4x96x64xf32>) outs(%o_zero : tensor<1x4x32x64xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x4x32x64xf32>
  return %o : tensor<1x4x32x64xf32>
}

#x = affine_map<(b, i, j) -> (b, i, j)>
#row = affine_map<(b, i, j) -> (b, i)>

// B*H=3 Nq=16 Nk=40 d=16, scale 0.25 folded into the exp, the softmax written out between
// batch_matmuls (K transposed by linalg.transpose).
func.func @written_out(%q: tensor<3x16x16xf32> {qattn.name = "q"}, %k: tensor<3x40x16xf32> {qattn.name = "k"}, %v: tensor<3x40x16xf32> {qattn.name = "v"}) -> (tensor<3x16x16xf32> {qattn.name = "o"}) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %scale = arith.constant 0.25 : f32
  %kt_init = tensor.empty() : tensor<3x16x40xf32>
  %kt = linalg.transpose ins(%k : tensor<3x40x16xf32>) outs(%kt_init : tensor<3x16x40xf32>) permutation = [0, 2, 1]
  %s_init = tensor.empty() : tensor<3x16x40xf32>
  %s_zero = linalg.fill ins(%zero : f32) outs(%s_init : tensor<3x16x40xf32>) -> tensor<3x16x40xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<3x16x16xf32>, tensor<3x16x40xf32>) outs(%s_zero : tensor<3x16x40xf32>) -> tensor<3x16x40xf32>
  %r_init = tensor.empty() : tensor<3x16xf32>
  %m_init = linalg.fill ins(%ninf : f32) outs(%r_init : tensor<3x16xf32>) -> tensor<3x16xf32>
  %m = linalg.generic {indexing_maps = [#x, #row], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%s : tensor<3x16x40xf32>) outs(%m_init : tensor<3x16xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.maximumf %x, %acc : f32
    linalg.yield %y : f32
  } -> tensor<3x16xf32>
  %e_init = tensor.empty() : tensor<3x16x40xf32>
  %e = linalg.generic {indexing_maps = [#x, #row, #x], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s, %m : tensor<3x16x40xf32>, tensor<3x16xf32>) outs(%e_init : tensor<3x16x40xf32>) {
  ^bb0(%x: f32, %max: f32, %out: f32):
    %d = arith.subf %x, %max : f32
    %ds = arith.mulf %d, %scale : f32
    %y = math.exp %ds : f32
    linalg.yield %y : f32
  } -> tensor<3x16x40xf32>
  %l_init = linalg.fill ins(%zero : f32) outs(%r_init : tensor<3x16xf32>) -> tensor<3x16xf32>
  %l = linalg.generic {indexing_maps = [#x, #row], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%e : tensor<3x16x40xf32>) outs(%l_init : tensor<3x16xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.addf %x, %acc : f32
    linalg.yield %y : f32
  } -> tensor<3x16xf32>
  %p_init = tensor.empty() : tensor<3x16x40xf32>
  %p = linalg.generic {indexing_maps = [#x, #row, #x], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%e, %l : tensor<3x16x40xf32>, tensor<3x16xf32>) outs(%p_init : tensor<3x16x40xf32>) {
  ^bb0(%x: f32, %sum: f32, %out: f32):
    %y = arith.divf %x, %sum : f32
    linalg.yield %y : f32
  } -> tensor<3x16x40xf32>
  %o_init = tensor.empty() : tensor<3x16x16xf32>
  %o_zero = linalg.fill ins(%zero : f32) outs(%o_init : tensor<3x16x16xf32>) -> tensor<3x16x16xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<3x16x40xf32>, tensor<3x40x16xf32>) outs(%o_zero : tensor<3x16x16xf32>) -> tensor<3x16x16xf32>
  return %o : tensor<3x16x16xf32>
}
