// Stage 2 (qattn.progressive_quantize, qattn.progressive_dequantize) compiled for the CPU
// against the NumPy model of docs/FORMAT.md: packed codes, s2 and z2 bit-exact, the dequantized
// int8 bit-exact and inside FORMAT.md's bound. Inputs are realistic stage-1 int8 (outlier-channel
// float data through the model's stage 1) with injected corner groups (constant, full range,
// one-sided, lone extremes), written by make_inputs.py. 2, 3, 4 bits and per-head mixed widths,
// both bit orders, groups of 8, 16 and 32 tokens, ragged token counts (short last group).

// REQUIRES: numpy
// RUN: rm -rf %t && qattn-compile %s -o %t/art
// RUN: %python %S/Inputs/make_inputs.py stage2 --seed 21 --shape 1,2,301,64 --block 64 --gran block --group 16 --out %t/s2_b4-in
// RUN: qattn-run %t/art --function s2_b4 --input q8=%t/s2_b4-in/q8.npy --output-dir %t/s2_b4
// RUN: %python %S/Inputs/check_stage2.py --case s2_b4 --in %t/s2_b4-in --out %t/s2_b4 --stage2 bits=4,group=16,order=lsb | FileCheck %s --check-prefix=C0
// RUN: %python %S/Inputs/make_inputs.py stage2 --seed 22 --shape 1,2,100,64 --block 32 --gran channel --group 32 --out %t/s2_b2_msb-in
// RUN: qattn-run %t/art --function s2_b2_msb --input q8=%t/s2_b2_msb-in/q8.npy --output-dir %t/s2_b2_msb
// RUN: %python %S/Inputs/check_stage2.py --case s2_b2_msb --in %t/s2_b2_msb-in --out %t/s2_b2_msb --stage2 bits=2,group=32,order=msb | FileCheck %s --check-prefix=C1
// RUN: %python %S/Inputs/make_inputs.py stage2 --seed 23 --shape 1,3,37,64 --block 16 --gran block --group 8 --out %t/s2_b3-in
// RUN: qattn-run %t/art --function s2_b3 --input q8=%t/s2_b3-in/q8.npy --output-dir %t/s2_b3
// RUN: %python %S/Inputs/check_stage2.py --case s2_b3 --in %t/s2_b3-in --out %t/s2_b3 --stage2 bits=3,group=8,order=lsb | FileCheck %s --check-prefix=C2
// RUN: %python %S/Inputs/make_inputs.py stage2 --seed 24 --shape 1,2,100,128 --block 64 --gran channel --group 32 --out %t/s2_b3_msb-in
// RUN: qattn-run %t/art --function s2_b3_msb --input q8=%t/s2_b3_msb-in/q8.npy --output-dir %t/s2_b3_msb
// RUN: %python %S/Inputs/check_stage2.py --case s2_b3_msb --in %t/s2_b3_msb-in --out %t/s2_b3_msb --stage2 bits=3,group=32,order=msb | FileCheck %s --check-prefix=C3
// RUN: %python %S/Inputs/make_inputs.py stage2 --seed 25 --shape 2,4,100,32 --block 32 --gran block --group 16 --out %t/s2_mixed_msb-in
// RUN: qattn-run %t/art --function s2_mixed_msb --input q8=%t/s2_mixed_msb-in/q8.npy --output-dir %t/s2_mixed_msb
// RUN: %python %S/Inputs/check_stage2.py --case s2_mixed_msb --in %t/s2_mixed_msb-in --out %t/s2_mixed_msb --stage2 bits=4-2-3-4,group=16,order=msb | FileCheck %s --check-prefix=C4
// RUN: %python %S/Inputs/make_inputs.py stage2 --seed 26 --shape 1,6,37,16 --block 16 --gran channel --group 8 --out %t/s2_mixed_lsb-in
// RUN: qattn-run %t/art --function s2_mixed_lsb --input q8=%t/s2_mixed_lsb-in/q8.npy --output-dir %t/s2_mixed_lsb
// RUN: %python %S/Inputs/check_stage2.py --case s2_mixed_lsb --in %t/s2_mixed_lsb-in --out %t/s2_mixed_lsb --stage2 bits=2-3-4-4-3-2,group=8,order=lsb | FileCheck %s --check-prefix=C5

// C0: s2_b4: stage2 scales s2 OK
// C0: s2_b4: stage2 zero points z2 OK
// C0: s2_b4: stage2 packed codes OK
// C0: s2_b4: progressive_dequantize q8d OK
// C0: s2_b4: |q8 - q8d| < s2 OK
// C0: s2_b4: |q8 - q8d| <= s2/2 where unclamped OK
// C0: s2_b4: coverage: clamped codes and s2 = 1 groups present OK
// C0: s2_b4: all checks passed
func.func @s2_b4(%q8: tensor<1x2x301x64xi8> {qattn.name = "q8"})
    -> (tensor<1x301x64xi8> {qattn.name = "codes"}, tensor<1x2x19x64xi8> {qattn.name = "s2"},
        tensor<1x2x19x64xi8> {qattn.name = "z2"}, tensor<1x2x301x64xi8> {qattn.name = "q8d"}) {
  %p, %s2, %z2 = qattn.progressive_quantize %q8 {scheme = #qattn.stage2<bits = [4], group = 16>}
      : tensor<1x2x301x64xi8> -> tensor<1x301x64xi8>, tensor<1x2x19x64xi8>, tensor<1x2x19x64xi8>
  %q8d = qattn.progressive_dequantize %p, %s2, %z2 {scheme = #qattn.stage2<bits = [4], group = 16>}
      : tensor<1x301x64xi8>, tensor<1x2x19x64xi8>, tensor<1x2x19x64xi8> -> tensor<1x2x301x64xi8>
  return %p, %s2, %z2, %q8d : tensor<1x301x64xi8>, tensor<1x2x19x64xi8>, tensor<1x2x19x64xi8>, tensor<1x2x301x64xi8>
}

// C1: s2_b2_msb: stage2 scales s2 OK
// C1: s2_b2_msb: stage2 zero points z2 OK
// C1: s2_b2_msb: stage2 packed codes OK
// C1: s2_b2_msb: progressive_dequantize q8d OK
// C1: s2_b2_msb: |q8 - q8d| < s2 OK
// C1: s2_b2_msb: |q8 - q8d| <= s2/2 where unclamped OK
// C1: s2_b2_msb: coverage: clamped codes and s2 = 1 groups present OK
// C1: s2_b2_msb: all checks passed
func.func @s2_b2_msb(%q8: tensor<1x2x100x64xi8> {qattn.name = "q8"})
    -> (tensor<1x100x32xi8> {qattn.name = "codes"}, tensor<1x2x4x64xi8> {qattn.name = "s2"},
        tensor<1x2x4x64xi8> {qattn.name = "z2"}, tensor<1x2x100x64xi8> {qattn.name = "q8d"}) {
  %p, %s2, %z2 = qattn.progressive_quantize %q8 {scheme = #qattn.stage2<bits = [2], group = 32, order = msb_first>}
      : tensor<1x2x100x64xi8> -> tensor<1x100x32xi8>, tensor<1x2x4x64xi8>, tensor<1x2x4x64xi8>
  %q8d = qattn.progressive_dequantize %p, %s2, %z2 {scheme = #qattn.stage2<bits = [2], group = 32, order = msb_first>}
      : tensor<1x100x32xi8>, tensor<1x2x4x64xi8>, tensor<1x2x4x64xi8> -> tensor<1x2x100x64xi8>
  return %p, %s2, %z2, %q8d : tensor<1x100x32xi8>, tensor<1x2x4x64xi8>, tensor<1x2x4x64xi8>, tensor<1x2x100x64xi8>
}

// C2: s2_b3: stage2 scales s2 OK
// C2: s2_b3: stage2 zero points z2 OK
// C2: s2_b3: stage2 packed codes OK
// C2: s2_b3: progressive_dequantize q8d OK
// C2: s2_b3: |q8 - q8d| < s2 OK
// C2: s2_b3: |q8 - q8d| <= s2/2 where unclamped OK
// C2: s2_b3: coverage: clamped codes and s2 = 1 groups present OK
// C2: s2_b3: all checks passed
func.func @s2_b3(%q8: tensor<1x3x37x64xi8> {qattn.name = "q8"})
    -> (tensor<1x37x72xi8> {qattn.name = "codes"}, tensor<1x3x5x64xi8> {qattn.name = "s2"},
        tensor<1x3x5x64xi8> {qattn.name = "z2"}, tensor<1x3x37x64xi8> {qattn.name = "q8d"}) {
  %p, %s2, %z2 = qattn.progressive_quantize %q8 {scheme = #qattn.stage2<bits = [3], group = 8>}
      : tensor<1x3x37x64xi8> -> tensor<1x37x72xi8>, tensor<1x3x5x64xi8>, tensor<1x3x5x64xi8>
  %q8d = qattn.progressive_dequantize %p, %s2, %z2 {scheme = #qattn.stage2<bits = [3], group = 8>}
      : tensor<1x37x72xi8>, tensor<1x3x5x64xi8>, tensor<1x3x5x64xi8> -> tensor<1x3x37x64xi8>
  return %p, %s2, %z2, %q8d : tensor<1x37x72xi8>, tensor<1x3x5x64xi8>, tensor<1x3x5x64xi8>, tensor<1x3x37x64xi8>
}

// C3: s2_b3_msb: stage2 scales s2 OK
// C3: s2_b3_msb: stage2 zero points z2 OK
// C3: s2_b3_msb: stage2 packed codes OK
// C3: s2_b3_msb: progressive_dequantize q8d OK
// C3: s2_b3_msb: |q8 - q8d| < s2 OK
// C3: s2_b3_msb: |q8 - q8d| <= s2/2 where unclamped OK
// C3: s2_b3_msb: coverage: clamped codes and s2 = 1 groups present OK
// C3: s2_b3_msb: all checks passed
func.func @s2_b3_msb(%q8: tensor<1x2x100x128xi8> {qattn.name = "q8"})
    -> (tensor<1x100x96xi8> {qattn.name = "codes"}, tensor<1x2x4x128xi8> {qattn.name = "s2"},
        tensor<1x2x4x128xi8> {qattn.name = "z2"}, tensor<1x2x100x128xi8> {qattn.name = "q8d"}) {
  %p, %s2, %z2 = qattn.progressive_quantize %q8 {scheme = #qattn.stage2<bits = [3], group = 32, order = msb_first>}
      : tensor<1x2x100x128xi8> -> tensor<1x100x96xi8>, tensor<1x2x4x128xi8>, tensor<1x2x4x128xi8>
  %q8d = qattn.progressive_dequantize %p, %s2, %z2 {scheme = #qattn.stage2<bits = [3], group = 32, order = msb_first>}
      : tensor<1x100x96xi8>, tensor<1x2x4x128xi8>, tensor<1x2x4x128xi8> -> tensor<1x2x100x128xi8>
  return %p, %s2, %z2, %q8d : tensor<1x100x96xi8>, tensor<1x2x4x128xi8>, tensor<1x2x4x128xi8>, tensor<1x2x100x128xi8>
}

// C4: s2_mixed_msb: stage2 scales s2 OK
// C4: s2_mixed_msb: stage2 zero points z2 OK
// C4: s2_mixed_msb: stage2 packed codes OK
// C4: s2_mixed_msb: progressive_dequantize q8d OK
// C4: s2_mixed_msb: |q8 - q8d| < s2 OK
// C4: s2_mixed_msb: |q8 - q8d| <= s2/2 where unclamped OK
// C4: s2_mixed_msb: coverage: clamped codes and s2 = 1 groups present OK
// C4: s2_mixed_msb: all checks passed
func.func @s2_mixed_msb(%q8: tensor<2x4x100x32xi8> {qattn.name = "q8"})
    -> (tensor<2x100x52xi8> {qattn.name = "codes"}, tensor<2x4x7x32xi8> {qattn.name = "s2"},
        tensor<2x4x7x32xi8> {qattn.name = "z2"}, tensor<2x4x100x32xi8> {qattn.name = "q8d"}) {
  %p, %s2, %z2 = qattn.progressive_quantize %q8 {scheme = #qattn.stage2<bits = [4, 2, 3, 4], group = 16, order = msb_first>}
      : tensor<2x4x100x32xi8> -> tensor<2x100x52xi8>, tensor<2x4x7x32xi8>, tensor<2x4x7x32xi8>
  %q8d = qattn.progressive_dequantize %p, %s2, %z2 {scheme = #qattn.stage2<bits = [4, 2, 3, 4], group = 16, order = msb_first>}
      : tensor<2x100x52xi8>, tensor<2x4x7x32xi8>, tensor<2x4x7x32xi8> -> tensor<2x4x100x32xi8>
  return %p, %s2, %z2, %q8d : tensor<2x100x52xi8>, tensor<2x4x7x32xi8>, tensor<2x4x7x32xi8>, tensor<2x4x100x32xi8>
}

// C5: s2_mixed_lsb: stage2 scales s2 OK
// C5: s2_mixed_lsb: stage2 zero points z2 OK
// C5: s2_mixed_lsb: stage2 packed codes OK
// C5: s2_mixed_lsb: progressive_dequantize q8d OK
// C5: s2_mixed_lsb: |q8 - q8d| < s2 OK
// C5: s2_mixed_lsb: |q8 - q8d| <= s2/2 where unclamped OK
// C5: s2_mixed_lsb: coverage: clamped codes and s2 = 1 groups present OK
// C5: s2_mixed_lsb: all checks passed
func.func @s2_mixed_lsb(%q8: tensor<1x6x37x16xi8> {qattn.name = "q8"})
    -> (tensor<1x37x36xi8> {qattn.name = "codes"}, tensor<1x6x5x16xi8> {qattn.name = "s2"},
        tensor<1x6x5x16xi8> {qattn.name = "z2"}, tensor<1x6x37x16xi8> {qattn.name = "q8d"}) {
  %p, %s2, %z2 = qattn.progressive_quantize %q8 {scheme = #qattn.stage2<bits = [2, 3, 4, 4, 3, 2], group = 8>}
      : tensor<1x6x37x16xi8> -> tensor<1x37x36xi8>, tensor<1x6x5x16xi8>, tensor<1x6x5x16xi8>
  %q8d = qattn.progressive_dequantize %p, %s2, %z2 {scheme = #qattn.stage2<bits = [2, 3, 4, 4, 3, 2], group = 8>}
      : tensor<1x37x36xi8>, tensor<1x6x5x16xi8>, tensor<1x6x5x16xi8> -> tensor<1x6x37x16xi8>
  return %p, %s2, %z2, %q8d : tensor<1x37x36xi8>, tensor<1x6x5x16xi8>, tensor<1x6x5x16xi8>, tensor<1x6x37x16xi8>
}
