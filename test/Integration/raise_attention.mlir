// qattn-raise-attention end to end: three attentions written in plain linalg (QK^T and P.V as
// linalg.generic contractions, scale and causal mask as elementwise ops, linalg.softmax) are
// compiled twice for the CPU: as written (the softmax decomposed by upstream's transform into
// linalg.generic, f32 throughout, no quantization: qattn-compile --allow-unquantized) and after
// the pass with two schemes. qattn-run runs each on the same fresh random data (one seed per
// function); check_raise.py compares the raised output with the original program's output and
// with a float64 NumPy attention written from the program's own semantics (and checks that the
// original agrees with it to 1e-5).
// Tolerances, measured on seeds 51-53 with margin: the default scheme (4-bit K and V, block 64,
// group 16; measured rel_fro 0.095-0.111, SQNR 19.1-20.5 dB) rel_fro <= 0.14, SQNR >= 17 dB;
// int8 Q, K and V (rel_fro 0.013-0.016, SQNR 36.2-38.0 dB) rel_fro <= 0.025, SQNR >= 32 dB.
// A wrong scale or a lost mask moves the output far past these (prefill_causal: every query
// but the last loses keys to the mask).

// REQUIRES: numpy
// RUN: rm -rf %t && mkdir -p %t
// RUN: qattn-opt %s --transform-preload-library="transform-library-paths=%S/Inputs/decompose_softmax.mlir" --transform-interpreter -o %t/original.mlir
// RUN: qattn-compile %t/original.mlir -o %t/original --allow-unquantized
// RUN: qattn-opt %s --qattn-raise-attention=strict=true -o %t/int4.mlir
// RUN: FileCheck %s --check-prefix=IR --input-file %t/int4.mlir
// RUN: qattn-compile %t/int4.mlir -o %t/int4
// RUN: qattn-opt %s --qattn-raise-attention="k-bits=8 v-bits=8 quantize-q=true strict=true" -o %t/int8.mlir
// RUN: qattn-compile %t/int8.mlir -o %t/int8
// RUN: qattn-run %t/original --function gqa_causal --seed 61 --quiet --output-dir %t/gqa_causal.original
// RUN: qattn-run %t/int4 --function gqa_causal --seed 61 --quiet --output-dir %t/gqa_causal.int4
// RUN: %python %S/Inputs/check_raise.py --case gqa_causal.int4 --original %t/gqa_causal.original --raised %t/gqa_causal.int4 --scale 0.125 --causal-offset 984 --max-rel-fro 0.14 --min-sqnr 17 | FileCheck %s --check-prefix=GQA_CAUSAL-INT4
// RUN: qattn-run %t/int8 --function gqa_causal --seed 61 --quiet --output-dir %t/gqa_causal.int8
// RUN: %python %S/Inputs/check_raise.py --case gqa_causal.int8 --original %t/gqa_causal.original --raised %t/gqa_causal.int8 --scale 0.125 --causal-offset 984 --max-rel-fro 0.025 --min-sqnr 32 | FileCheck %s --check-prefix=GQA_CAUSAL-INT8
// RUN: qattn-run %t/original --function mha_d128 --seed 62 --quiet --output-dir %t/mha_d128.original
// RUN: qattn-run %t/int4 --function mha_d128 --seed 62 --quiet --output-dir %t/mha_d128.int4
// RUN: %python %S/Inputs/check_raise.py --case mha_d128.int4 --original %t/mha_d128.original --raised %t/mha_d128.int4 --scale 0.08838834764831845  --max-rel-fro 0.14 --min-sqnr 17 | FileCheck %s --check-prefix=MHA_D128-INT4
// RUN: qattn-run %t/int8 --function mha_d128 --seed 62 --quiet --output-dir %t/mha_d128.int8
// RUN: %python %S/Inputs/check_raise.py --case mha_d128.int8 --original %t/mha_d128.original --raised %t/mha_d128.int8 --scale 0.08838834764831845  --max-rel-fro 0.025 --min-sqnr 32 | FileCheck %s --check-prefix=MHA_D128-INT8
// RUN: qattn-run %t/original --function prefill_causal --seed 63 --quiet --output-dir %t/prefill_causal.original
// RUN: qattn-run %t/int4 --function prefill_causal --seed 63 --quiet --output-dir %t/prefill_causal.int4
// RUN: %python %S/Inputs/check_raise.py --case prefill_causal.int4 --original %t/prefill_causal.original --raised %t/prefill_causal.int4 --scale 0.125 --causal-offset 0 --max-rel-fro 0.14 --min-sqnr 17 | FileCheck %s --check-prefix=PREFILL_CAUSAL-INT4
// RUN: qattn-run %t/int8 --function prefill_causal --seed 63 --quiet --output-dir %t/prefill_causal.int8
// RUN: %python %S/Inputs/check_raise.py --case prefill_causal.int8 --original %t/prefill_causal.original --raised %t/prefill_causal.int8 --scale 0.125 --causal-offset 0 --max-rel-fro 0.025 --min-sqnr 32 | FileCheck %s --check-prefix=PREFILL_CAUSAL-INT8

// IR-LABEL: func.func @gqa_causal(
// IR-NOT:     linalg.
// IR:         qattn.quantize %{{.+}} : tensor<1x2x1000x64xf32>
// IR:         qattn.quantize %{{.+}} : tensor<1x2x1000x64xf32>
// IR:         qattn.attention
// IR-SAME:      {causal, {{.*}}scale = 1.250000e-01 : f32
// IR-LABEL: func.func @mha_d128(
// IR:         qattn.attention
// IR-SAME:      {k_stage1 = {{.*}}scale = 0.0883883461 : f32
// IR-LABEL: func.func @prefill_causal(
// IR:         qattn.attention
// IR-SAME:      {causal, {{.*}}scale = 1.250000e-01 : f32
// IR-NOT:     linalg.

// GQA_CAUSAL-INT4: gqa_causal.int4: original program vs float64 attention OK
// GQA_CAUSAL-INT4: gqa_causal.int4: raised vs original program OK
// GQA_CAUSAL-INT4: gqa_causal.int4: raised vs float64 attention OK
// GQA_CAUSAL-INT4: gqa_causal.int4: all checks passed
// GQA_CAUSAL-INT8: gqa_causal.int8: original program vs float64 attention OK
// GQA_CAUSAL-INT8: gqa_causal.int8: raised vs original program OK
// GQA_CAUSAL-INT8: gqa_causal.int8: raised vs float64 attention OK
// GQA_CAUSAL-INT8: gqa_causal.int8: all checks passed
// MHA_D128-INT4: mha_d128.int4: original program vs float64 attention OK
// MHA_D128-INT4: mha_d128.int4: raised vs original program OK
// MHA_D128-INT4: mha_d128.int4: raised vs float64 attention OK
// MHA_D128-INT4: mha_d128.int4: all checks passed
// MHA_D128-INT8: mha_d128.int8: original program vs float64 attention OK
// MHA_D128-INT8: mha_d128.int8: raised vs original program OK
// MHA_D128-INT8: mha_d128.int8: raised vs float64 attention OK
// MHA_D128-INT8: mha_d128.int8: all checks passed
// PREFILL_CAUSAL-INT4: prefill_causal.int4: original program vs float64 attention OK
// PREFILL_CAUSAL-INT4: prefill_causal.int4: raised vs original program OK
// PREFILL_CAUSAL-INT4: prefill_causal.int4: raised vs float64 attention OK
// PREFILL_CAUSAL-INT4: prefill_causal.int4: all checks passed
// PREFILL_CAUSAL-INT8: prefill_causal.int8: original program vs float64 attention OK
// PREFILL_CAUSAL-INT8: prefill_causal.int8: raised vs original program OK
// PREFILL_CAUSAL-INT8: prefill_causal.int8: raised vs float64 attention OK
// PREFILL_CAUSAL-INT8: prefill_causal.int8: all checks passed

#q = affine_map<(b, h, i, j, c) -> (b, h, i, c)>
#k = affine_map<(b, h, i, j, c) -> (b, h, j, c)>
#s = affine_map<(b, h, i, j, c) -> (b, h, i, j)>
#p = affine_map<(b, h, i, c, j) -> (b, h, i, j)>
#v = affine_map<(b, h, i, c, j) -> (b, h, j, c)>
#o = affine_map<(b, h, i, c, j) -> (b, h, i, c)>
#e = affine_map<(b, h, i, j) -> (b, h, i, j)>

// gqa_causal: B=1 Hq=8 Hkv=2 Nq=16 Nk=1000 d=64, K/V broadcast to the query heads, scale 0.125
// and the causal mask (query i sees keys j <= i + 984) in one elementwise op.
func.func @gqa_causal(%q: tensor<1x8x16x64xf32> {qattn.name = "q"}, %k: tensor<1x2x1000x64xf32> {qattn.name = "k"}, %v: tensor<1x2x1000x64xf32> {qattn.name = "v"}) -> (tensor<1x8x16x64xf32> {qattn.name = "o"}) {
  %zero = arith.constant 0.0 : f32
  %kr_init = tensor.empty() : tensor<1x2x4x1000x64xf32>
  %kr_b = linalg.broadcast ins(%k : tensor<1x2x1000x64xf32>) outs(%kr_init : tensor<1x2x4x1000x64xf32>) dimensions = [2]
  %kr = tensor.collapse_shape %kr_b [[0], [1, 2], [3], [4]] : tensor<1x2x4x1000x64xf32> into tensor<1x8x1000x64xf32>
  %vr_init = tensor.empty() : tensor<1x2x4x1000x64xf32>
  %vr_b = linalg.broadcast ins(%v : tensor<1x2x1000x64xf32>) outs(%vr_init : tensor<1x2x4x1000x64xf32>) dimensions = [2]
  %vr = tensor.collapse_shape %vr_b [[0], [1, 2], [3], [4]] : tensor<1x2x4x1000x64xf32> into tensor<1x8x1000x64xf32>
  %s_init = tensor.empty() : tensor<1x8x16x1000xf32>
  %s_zero = linalg.fill ins(%zero : f32) outs(%s_init : tensor<1x8x16x1000xf32>) -> tensor<1x8x16x1000xf32>
  %s = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %kr : tensor<1x8x16x64xf32>, tensor<1x8x1000x64xf32>) outs(%s_zero : tensor<1x8x16x1000xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x8x16x1000xf32>
  %ninf = arith.constant 0xFF800000 : f32
  %c = arith.constant 0.125 : f32
  %offset = arith.constant 984 : index
  %t_init = tensor.empty() : tensor<1x8x16x1000xf32>
  %t = linalg.generic {indexing_maps = [#e, #e], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s : tensor<1x8x16x1000xf32>) outs(%t_init : tensor<1x8x16x1000xf32>) {
  ^bb0(%x: f32, %out: f32):
    %i = linalg.index 2 : index
    %j = linalg.index 3 : index
    %last = arith.addi %i, %offset : index
    %visible = arith.cmpi ule, %j, %last : index
    %scaled = arith.mulf %x, %c : f32
    %y = arith.select %visible, %scaled, %ninf : f32
    linalg.yield %y : f32
  } -> tensor<1x8x16x1000xf32>
  %p_init = tensor.empty() : tensor<1x8x16x1000xf32>
  %p = linalg.softmax dimension(3) ins(%t : tensor<1x8x16x1000xf32>) outs(%p_init : tensor<1x8x16x1000xf32>) -> tensor<1x8x16x1000xf32>
  %o_init = tensor.empty() : tensor<1x8x16x64xf32>
  %o_zero = linalg.fill ins(%zero : f32) outs(%o_init : tensor<1x8x16x64xf32>) -> tensor<1x8x16x64xf32>
  %o = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %vr : tensor<1x8x16x1000xf32>, tensor<1x8x1000x64xf32>) outs(%o_zero : tensor<1x8x16x64xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x8x16x64xf32>
  return %o : tensor<1x8x16x64xf32>
}

// mha_d128: B=2 H=2 Nq=37 Nk=301 d=128, no mask, the scale folded into QK^T as a division by
// sqrt(128) = 11.3137085.
func.func @mha_d128(%q: tensor<2x2x37x128xf32> {qattn.name = "q"}, %k: tensor<2x2x301x128xf32> {qattn.name = "k"}, %v: tensor<2x2x301x128xf32> {qattn.name = "v"}) -> (tensor<2x2x37x128xf32> {qattn.name = "o"}) {
  %zero = arith.constant 0.0 : f32
  %s_init = tensor.empty() : tensor<2x2x37x301xf32>
  %s_zero = linalg.fill ins(%zero : f32) outs(%s_init : tensor<2x2x37x301xf32>) -> tensor<2x2x37x301xf32>
  %s = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<2x2x37x128xf32>, tensor<2x2x301x128xf32>) outs(%s_zero : tensor<2x2x37x301xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %c = arith.constant 11.3137085 : f32
    %m = arith.mulf %a, %b : f32
    %ms = arith.divf %m, %c : f32
    %r = arith.addf %acc, %ms : f32
    linalg.yield %r : f32
  } -> tensor<2x2x37x301xf32>
  %p_init = tensor.empty() : tensor<2x2x37x301xf32>
  %p = linalg.softmax dimension(3) ins(%s : tensor<2x2x37x301xf32>) outs(%p_init : tensor<2x2x37x301xf32>) -> tensor<2x2x37x301xf32>
  %o_init = tensor.empty() : tensor<2x2x37x128xf32>
  %o_zero = linalg.fill ins(%zero : f32) outs(%o_init : tensor<2x2x37x128xf32>) -> tensor<2x2x37x128xf32>
  %o = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<2x2x37x301xf32>, tensor<2x2x301x128xf32>) outs(%o_zero : tensor<2x2x37x128xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x2x37x128xf32>
  return %o : tensor<2x2x37x128xf32>
}

// prefill_causal: B=1 H=4 Nq=Nk=128 d=64, scale 0.125, future keys set to -1e9 (query i sees j <= i).
func.func @prefill_causal(%q: tensor<1x4x128x64xf32> {qattn.name = "q"}, %k: tensor<1x4x128x64xf32> {qattn.name = "k"}, %v: tensor<1x4x128x64xf32> {qattn.name = "v"}) -> (tensor<1x4x128x64xf32> {qattn.name = "o"}) {
  %zero = arith.constant 0.0 : f32
  %s_init = tensor.empty() : tensor<1x4x128x128xf32>
  %s_zero = linalg.fill ins(%zero : f32) outs(%s_init : tensor<1x4x128x128xf32>) -> tensor<1x4x128x128xf32>
  %s = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<1x4x128x64xf32>, tensor<1x4x128x64xf32>) outs(%s_zero : tensor<1x4x128x128xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x4x128x128xf32>
  %ninf = arith.constant -1.0e9 : f32
  %c = arith.constant 0.125 : f32
  %t_init = tensor.empty() : tensor<1x4x128x128xf32>
  %t = linalg.generic {indexing_maps = [#e, #e], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s : tensor<1x4x128x128xf32>) outs(%t_init : tensor<1x4x128x128xf32>) {
  ^bb0(%x: f32, %out: f32):
    %i = linalg.index 2 : index
    %j = linalg.index 3 : index
    %future = arith.cmpi sgt, %j, %i : index
    %scaled = arith.mulf %x, %c : f32
    %y = arith.select %future, %ninf, %scaled : f32
    linalg.yield %y : f32
  } -> tensor<1x4x128x128xf32>
  %p_init = tensor.empty() : tensor<1x4x128x128xf32>
  %p = linalg.softmax dimension(3) ins(%t : tensor<1x4x128x128xf32>) outs(%p_init : tensor<1x4x128x128xf32>) -> tensor<1x4x128x128xf32>
  %o_init = tensor.empty() : tensor<1x4x128x64xf32>
  %o_zero = linalg.fill ins(%zero : f32) outs(%o_init : tensor<1x4x128x64xf32>) -> tensor<1x4x128x64xf32>
  %o = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<1x4x128x128xf32>, tensor<1x4x128x64xf32>) outs(%o_zero : tensor<1x4x128x64xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x4x128x64xf32>
  return %o : tensor<1x4x128x64xf32>
}
