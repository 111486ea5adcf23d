// Stage 1 (qattn.quantize, qattn.dequantize) compiled for the CPU against the NumPy model of
// docs/FORMAT.md (python/qattn/format.py): q8 and the scales bit-exact, the dequantized values
// bit-exact and inside FORMAT.md's bound. Ragged token counts (37, 100, 301) leave a short last
// block; f32 / f16 / bf16 inputs and results, f32 / f16 scales, block and channel granularity.

// REQUIRES: numpy
// RUN: rm -rf %t && qattn-compile %s -o %t/art
// RUN: qattn-run %t/art --function s1_f32_block --seed 11 --dist outlier --output-dir %t/a
// RUN: %python %S/Inputs/check_stage1.py --case s1_f32_block --art %t/art --function s1_f32_block --out %t/a --stage1 block=16 | FileCheck %s --check-prefix=A
// RUN: qattn-run %t/art --function s1_f16scale_channel --seed 12 --dist normal --output-dir %t/b
// RUN: %python %S/Inputs/check_stage1.py --case s1_f16scale_channel --art %t/art --function s1_f16scale_channel --out %t/b --stage1 block=32,scale=f16,gran=channel | FileCheck %s --check-prefix=B
// RUN: qattn-run %t/art --function s1_f16in_bf16out --seed 13 --dist outlier --output-dir %t/c
// RUN: %python %S/Inputs/check_stage1.py --case s1_f16in_bf16out --art %t/art --function s1_f16in_bf16out --out %t/c --stage1 block=64 | FileCheck %s --check-prefix=C
// RUN: qattn-run %t/art --function s1_bf16in_f16scale --seed 14 --dist uniform --output-dir %t/d
// RUN: %python %S/Inputs/check_stage1.py --case s1_bf16in_f16scale --art %t/art --function s1_bf16in_f16scale --out %t/d --stage1 block=16,scale=f16,gran=channel | FileCheck %s --check-prefix=D
// RUN: qattn-run %t/art --function s1_f16_block_f16scale --seed 15 --dist outlier --output-dir %t/e
// RUN: %python %S/Inputs/check_stage1.py --case s1_f16_block_f16scale --art %t/art --function s1_f16_block_f16scale --out %t/e --stage1 block=64,scale=f16 | FileCheck %s --check-prefix=E

// A: s1_f32_block: stage1 scales s1 OK
// A: s1_f32_block: stage1 data q8 OK
// A: s1_f32_block: q8 avoids -128 OK
// A: s1_f32_block: dequantized xd (f32) OK
// A: s1_f32_block: |x - xd| <= s/2 (+ rounding) OK
// A: s1_f32_block: all checks passed
func.func @s1_f32_block(%x: tensor<2x3x37x16xf32> {qattn.name = "x"})
    -> (tensor<2x3x37x16xi8> {qattn.name = "q8"}, tensor<2x3x3xf32> {qattn.name = "s1"},
        tensor<2x3x37x16xf32> {qattn.name = "xd"}) {
  %q8, %s1 = qattn.quantize %x {scheme = #qattn.stage1<block = 16>}
      : tensor<2x3x37x16xf32> -> tensor<2x3x37x16xi8>, tensor<2x3x3xf32>
  %xd = qattn.dequantize %q8, %s1 {scheme = #qattn.stage1<block = 16>}
      : tensor<2x3x37x16xi8>, tensor<2x3x3xf32> -> tensor<2x3x37x16xf32>
  return %q8, %s1, %xd : tensor<2x3x37x16xi8>, tensor<2x3x3xf32>, tensor<2x3x37x16xf32>
}

// B: s1_f16scale_channel: stage1 scales s1 OK
// B: s1_f16scale_channel: stage1 data q8 OK
// B: s1_f16scale_channel: q8 avoids -128 OK
// B: s1_f16scale_channel: dequantized xd (f16) OK
// B: s1_f16scale_channel: |x - xd| <= s/2 (+ rounding) OK
// B: s1_f16scale_channel: all checks passed
func.func @s1_f16scale_channel(%x: tensor<1x2x100x64xf32> {qattn.name = "x"})
    -> (tensor<1x2x100x64xi8> {qattn.name = "q8"}, tensor<1x2x4x64xf16> {qattn.name = "s1"},
        tensor<1x2x100x64xf16> {qattn.name = "xd"}) {
  %q8, %s1 = qattn.quantize %x {scheme = #qattn.stage1<block = 32, scale = f16, granularity = channel>}
      : tensor<1x2x100x64xf32> -> tensor<1x2x100x64xi8>, tensor<1x2x4x64xf16>
  %xd = qattn.dequantize %q8, %s1 {scheme = #qattn.stage1<block = 32, scale = f16, granularity = channel>}
      : tensor<1x2x100x64xi8>, tensor<1x2x4x64xf16> -> tensor<1x2x100x64xf16>
  return %q8, %s1, %xd : tensor<1x2x100x64xi8>, tensor<1x2x4x64xf16>, tensor<1x2x100x64xf16>
}

// C: s1_f16in_bf16out: stage1 scales s1 OK
// C: s1_f16in_bf16out: stage1 data q8 OK
// C: s1_f16in_bf16out: q8 avoids -128 OK
// C: s1_f16in_bf16out: dequantized xd (bf16) OK
// C: s1_f16in_bf16out: |x - xd| <= s/2 (+ rounding) OK
// C: s1_f16in_bf16out: all checks passed
func.func @s1_f16in_bf16out(%x: tensor<1x4x301x64xf16> {qattn.name = "x"})
    -> (tensor<1x4x301x64xi8> {qattn.name = "q8"}, tensor<1x4x5xf32> {qattn.name = "s1"},
        tensor<1x4x301x64xbf16> {qattn.name = "xd"}) {
  %q8, %s1 = qattn.quantize %x {scheme = #qattn.stage1<block = 64>}
      : tensor<1x4x301x64xf16> -> tensor<1x4x301x64xi8>, tensor<1x4x5xf32>
  %xd = qattn.dequantize %q8, %s1 {scheme = #qattn.stage1<block = 64>}
      : tensor<1x4x301x64xi8>, tensor<1x4x5xf32> -> tensor<1x4x301x64xbf16>
  return %q8, %s1, %xd : tensor<1x4x301x64xi8>, tensor<1x4x5xf32>, tensor<1x4x301x64xbf16>
}

// D: s1_bf16in_f16scale: stage1 scales s1 OK
// D: s1_bf16in_f16scale: stage1 data q8 OK
// D: s1_bf16in_f16scale: q8 avoids -128 OK
// D: s1_bf16in_f16scale: dequantized xd (f32) OK
// D: s1_bf16in_f16scale: |x - xd| <= s/2 (+ rounding) OK
// D: s1_bf16in_f16scale: all checks passed
func.func @s1_bf16in_f16scale(%x: tensor<1x2x37x128xbf16> {qattn.name = "x"})
    -> (tensor<1x2x37x128xi8> {qattn.name = "q8"}, tensor<1x2x3x128xf16> {qattn.name = "s1"},
        tensor<1x2x37x128xf32> {qattn.name = "xd"}) {
  %q8, %s1 = qattn.quantize %x {scheme = #qattn.stage1<block = 16, scale = f16, granularity = channel>}
      : tensor<1x2x37x128xbf16> -> tensor<1x2x37x128xi8>, tensor<1x2x3x128xf16>
  %xd = qattn.dequantize %q8, %s1 {scheme = #qattn.stage1<block = 16, scale = f16, granularity = channel>}
      : tensor<1x2x37x128xi8>, tensor<1x2x3x128xf16> -> tensor<1x2x37x128xf32>
  return %q8, %s1, %xd : tensor<1x2x37x128xi8>, tensor<1x2x3x128xf16>, tensor<1x2x37x128xf32>
}

// E: s1_f16_block_f16scale: stage1 scales s1 OK
// E: s1_f16_block_f16scale: stage1 data q8 OK
// E: s1_f16_block_f16scale: q8 avoids -128 OK
// E: s1_f16_block_f16scale: dequantized xd (f16) OK
// E: s1_f16_block_f16scale: |x - xd| <= s/2 (+ rounding) OK
// E: s1_f16_block_f16scale: all checks passed
func.func @s1_f16_block_f16scale(%x: tensor<1x1x100x32xf16> {qattn.name = "x"})
    -> (tensor<1x1x100x32xi8> {qattn.name = "q8"}, tensor<1x1x2xf16> {qattn.name = "s1"},
        tensor<1x1x100x32xf16> {qattn.name = "xd"}) {
  %q8, %s1 = qattn.quantize %x {scheme = #qattn.stage1<block = 64, scale = f16>}
      : tensor<1x1x100x32xf16> -> tensor<1x1x100x32xi8>, tensor<1x1x2xf16>
  %xd = qattn.dequantize %q8, %s1 {scheme = #qattn.stage1<block = 64, scale = f16>}
      : tensor<1x1x100x32xi8>, tensor<1x1x2xf16> -> tensor<1x1x100x32xf16>
  return %q8, %s1, %xd : tensor<1x1x100x32xi8>, tensor<1x1x2xf16>, tensor<1x1x100x32xf16>
}

// Corner blocks from make_inputs.py stage1-edges (block 16, 37 tokens, f32 input): all zeros
// (s = 0), exact halfway quotients of both signs (round away from zero), -0.0, a block whose f16
// scale underflows to 0 and one where it is subnormal, one where it overflows to inf (q8 = 0,
// dequantized NaN, as FORMAT.md says). Once with f16 scales, once with f32 scales.
// RUN: %python %S/Inputs/make_inputs.py stage1-edges --seed 16 --shape 1,2,37,16 --out %t/edges-in
// The inf scale makes 256 dequantized values NaN, which qattn-run reports (exit 2) after writing
// its files:
// RUN: not qattn-run %t/art --function s1_edges_f16scale --input x=%t/edges-in/x.npy --output-dir %t/f | FileCheck %s --check-prefix=FNAN
// FNAN: FAIL: result xd holds 256 NaN values of 1184
// RUN: %python %S/Inputs/check_stage1.py --case s1_edges_f16scale --art %t/art --function s1_edges_f16scale --out %t/f --in %t/edges-in --stage1 block=16,scale=f16 | FileCheck %s --check-prefix=F
// RUN: qattn-run %t/art --function s1_edges_f32scale --input x=%t/edges-in/x.npy --output-dir %t/g
// RUN: %python %S/Inputs/check_stage1.py --case s1_edges_f32scale --art %t/art --function s1_edges_f32scale --out %t/g --in %t/edges-in --stage1 block=16 | FileCheck %s --check-prefix=G

// F: s1_edges_f16scale: stage1 scales s1 OK
// F: s1_edges_f16scale: stage1 data q8 OK
// F: s1_edges_f16scale: q8 avoids -128 OK
// F: s1_edges_f16scale: dequantized xd NaN where the model's is OK
// F: s1_edges_f16scale: dequantized xd (f32) OK
// F: s1_edges_f16scale: |x - xd| <= s/2 (+ rounding) OK
// F: s1_edges_f16scale: all checks passed
func.func @s1_edges_f16scale(%x: tensor<1x2x37x16xf32> {qattn.name = "x"})
    -> (tensor<1x2x37x16xi8> {qattn.name = "q8"}, tensor<1x2x3xf16> {qattn.name = "s1"},
        tensor<1x2x37x16xf32> {qattn.name = "xd"}) {
  %q8, %s1 = qattn.quantize %x {scheme = #qattn.stage1<block = 16, scale = f16>}
      : tensor<1x2x37x16xf32> -> tensor<1x2x37x16xi8>, tensor<1x2x3xf16>
  %xd = qattn.dequantize %q8, %s1 {scheme = #qattn.stage1<block = 16, scale = f16>}
      : tensor<1x2x37x16xi8>, tensor<1x2x3xf16> -> tensor<1x2x37x16xf32>
  return %q8, %s1, %xd : tensor<1x2x37x16xi8>, tensor<1x2x3xf16>, tensor<1x2x37x16xf32>
}

// G: s1_edges_f32scale: stage1 scales s1 OK
// G: s1_edges_f32scale: stage1 data q8 OK
// G: s1_edges_f32scale: q8 avoids -128 OK
// G: s1_edges_f32scale: dequantized xd (f32) OK
// G: s1_edges_f32scale: |x - xd| <= s/2 (+ rounding) OK
// G: s1_edges_f32scale: all checks passed
func.func @s1_edges_f32scale(%x: tensor<1x2x37x16xf32> {qattn.name = "x"})
    -> (tensor<1x2x37x16xi8> {qattn.name = "q8"}, tensor<1x2x3xf32> {qattn.name = "s1"},
        tensor<1x2x37x16xf32> {qattn.name = "xd"}) {
  %q8, %s1 = qattn.quantize %x {scheme = #qattn.stage1<block = 16>}
      : tensor<1x2x37x16xf32> -> tensor<1x2x37x16xi8>, tensor<1x2x3xf32>
  %xd = qattn.dequantize %q8, %s1 {scheme = #qattn.stage1<block = 16>}
      : tensor<1x2x37x16xi8>, tensor<1x2x3xf32> -> tensor<1x2x37x16xf32>
  return %q8, %s1, %xd : tensor<1x2x37x16xi8>, tensor<1x2x3xf32>, tensor<1x2x37x16xf32>
}
