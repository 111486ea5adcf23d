// Key smoothing (qattn.smooth_keys, with a calibration range and with a given mean), stage 1 of
// the smoothed keys, and stage 2 with fit = mse (qattn.progressive_quantize), compiled for the
// CPU against the NumPy model of docs/FORMAT.md: every result bit-exact. f32 and bf16 keys,
// outlier-channel and uniform data, 3-bit lsb and mixed 4/2-bit msb, ragged token counts; and
// the min-anchored stage 2 (anchor = min) with the min/max and the mse fit.

// REQUIRES: numpy
// RUN: rm -rf %t && qattn-compile %s -o %t/art
// RUN: qattn-run %t/art --function smooth_b3 --seed 41 --dist outlier --output-dir %t/a
// RUN: %python %S/Inputs/check_smooth_fit.py --case smooth_b3 --art %t/art --function smooth_b3 --out %t/a --calibration 3,35 --block 32 --stage2 bits=3,group=8 | FileCheck %s --check-prefix=A
// RUN: qattn-run %t/art --function smooth_mixed_msb --seed 42 --dist uniform --output-dir %t/b
// RUN: %python %S/Inputs/check_smooth_fit.py --case smooth_mixed_msb --art %t/art --function smooth_mixed_msb --out %t/b --calibration 0,37 --block 16 --stage2 bits=4-2,group=16,order=msb | FileCheck %s --check-prefix=B
// RUN: qattn-run %t/art --function min_b4 --seed 43 --dist outlier --output-dir %t/c
// RUN: %python %S/Inputs/check_smooth_fit.py --case min_b4 --art %t/art --function min_b4 --out %t/c --calibration 0,16 --block 32 --stage2 bits=4,group=16 --anchor min --fit minmax | FileCheck %s --check-prefix=C
// RUN: qattn-run %t/art --function min_mse_mixed --seed 44 --dist normal --output-dir %t/d
// RUN: %python %S/Inputs/check_smooth_fit.py --case min_mse_mixed --art %t/art --function min_mse_mixed --out %t/d --calibration 5,40 --block 16 --stage2 bits=3-2-4,group=8,order=msb --anchor min | FileCheck %s --check-prefix=D

// A: smooth_b3: smooth_keys mean OK
// A: smooth_b3: smooth_keys K - mean OK
// A: smooth_b3: smooth_keys using the mean OK
// A: smooth_b3: stage1 of the smoothed keys q8 OK
// A: smooth_b3: stage1 scales s1 OK
// A: smooth_b3: fit=mse scales s2 OK
// A: smooth_b3: fit=mse zero points z2 OK
// A: smooth_b3: fit=mse packed codes OK
// A: smooth_b3: progressive_dequantize q8d OK
// A: smooth_b3: fit=mse never worse than minmax per group OK
// A: smooth_b3: all checks passed
func.func @smooth_b3(%k: tensor<2x3x70x16xf32> {qattn.name = "k"}, %kn: tensor<2x3x5x16xf32> {qattn.name = "kn"})
    -> (tensor<2x3x70x16xf32> {qattn.name = "ks"}, tensor<2x3x16xf32> {qattn.name = "mu"},
        tensor<2x3x5x16xf32> {qattn.name = "ksn"}, tensor<2x3x70x16xi8> {qattn.name = "q8"},
        tensor<2x3x3xf32> {qattn.name = "s1"}, tensor<2x70x18xi8> {qattn.name = "codes"},
        tensor<2x3x9x16xi8> {qattn.name = "s2"}, tensor<2x3x9x16xi8> {qattn.name = "z2"},
        tensor<2x3x70x16xi8> {qattn.name = "q8d"}) {
  %ks, %mu = qattn.smooth_keys %k {calibration = array<i64: 3, 35>}
      : tensor<2x3x70x16xf32> -> tensor<2x3x70x16xf32>, tensor<2x3x16xf32>
  %ksn, %mu1 = qattn.smooth_keys %kn using(%mu)
      : tensor<2x3x5x16xf32>, tensor<2x3x16xf32> -> tensor<2x3x5x16xf32>, tensor<2x3x16xf32>
  %q8, %s1 = qattn.quantize %ks {scheme = #qattn.stage1<block = 32>}
      : tensor<2x3x70x16xf32> -> tensor<2x3x70x16xi8>, tensor<2x3x3xf32>
  %p, %s2, %z2 = qattn.progressive_quantize %q8 {scheme = #qattn.stage2<bits = [3], group = 8>, fit = #qattn.fit<mse>}
      : tensor<2x3x70x16xi8> -> tensor<2x70x18xi8>, tensor<2x3x9x16xi8>, tensor<2x3x9x16xi8>
  %q8d = qattn.progressive_dequantize %p, %s2, %z2 {scheme = #qattn.stage2<bits = [3], group = 8>}
      : tensor<2x70x18xi8>, tensor<2x3x9x16xi8>, tensor<2x3x9x16xi8> -> tensor<2x3x70x16xi8>
  return %ks, %mu, %ksn, %q8, %s1, %p, %s2, %z2, %q8d
      : tensor<2x3x70x16xf32>, tensor<2x3x16xf32>, tensor<2x3x5x16xf32>, tensor<2x3x70x16xi8>,
        tensor<2x3x3xf32>, tensor<2x70x18xi8>, tensor<2x3x9x16xi8>, tensor<2x3x9x16xi8>,
        tensor<2x3x70x16xi8>
}

// B: smooth_mixed_msb: smooth_keys mean OK
// B: smooth_mixed_msb: smooth_keys K - mean OK
// B: smooth_mixed_msb: smooth_keys using the mean OK
// B: smooth_mixed_msb: stage1 of the smoothed keys q8 OK
// B: smooth_mixed_msb: stage1 scales s1 OK
// B: smooth_mixed_msb: fit=mse scales s2 OK
// B: smooth_mixed_msb: fit=mse zero points z2 OK
// B: smooth_mixed_msb: fit=mse packed codes OK
// B: smooth_mixed_msb: progressive_dequantize q8d OK
// B: smooth_mixed_msb: fit=mse never worse than minmax per group OK
// B: smooth_mixed_msb: all checks passed
func.func @smooth_mixed_msb(%k: tensor<1x2x37x8xbf16> {qattn.name = "k"}, %kn: tensor<1x2x3x8xf16> {qattn.name = "kn"})
    -> (tensor<1x2x37x8xf32> {qattn.name = "ks"}, tensor<1x2x8xf32> {qattn.name = "mu"},
        tensor<1x2x3x8xf32> {qattn.name = "ksn"}, tensor<1x2x37x8xi8> {qattn.name = "q8"},
        tensor<1x2x3xf32> {qattn.name = "s1"}, tensor<1x37x6xi8> {qattn.name = "codes"},
        tensor<1x2x3x8xi8> {qattn.name = "s2"}, tensor<1x2x3x8xi8> {qattn.name = "z2"},
        tensor<1x2x37x8xi8> {qattn.name = "q8d"}) {
  %ks, %mu = qattn.smooth_keys %k {calibration = array<i64: 0, 37>}
      : tensor<1x2x37x8xbf16> -> tensor<1x2x37x8xf32>, tensor<1x2x8xf32>
  %ksn, %mu1 = qattn.smooth_keys %kn using(%mu)
      : tensor<1x2x3x8xf16>, tensor<1x2x8xf32> -> tensor<1x2x3x8xf32>, tensor<1x2x8xf32>
  %q8, %s1 = qattn.quantize %ks {scheme = #qattn.stage1<block = 16>}
      : tensor<1x2x37x8xf32> -> tensor<1x2x37x8xi8>, tensor<1x2x3xf32>
  %p, %s2, %z2 = qattn.progressive_quantize %q8 {scheme = #qattn.stage2<bits = [4, 2], group = 16, order = msb_first>, fit = #qattn.fit<mse>}
      : tensor<1x2x37x8xi8> -> tensor<1x37x6xi8>, tensor<1x2x3x8xi8>, tensor<1x2x3x8xi8>
  %q8d = qattn.progressive_dequantize %p, %s2, %z2 {scheme = #qattn.stage2<bits = [4, 2], group = 16, order = msb_first>}
      : tensor<1x37x6xi8>, tensor<1x2x3x8xi8>, tensor<1x2x3x8xi8> -> tensor<1x2x37x8xi8>
  return %ks, %mu, %ksn, %q8, %s1, %p, %s2, %z2, %q8d
      : tensor<1x2x37x8xf32>, tensor<1x2x8xf32>, tensor<1x2x3x8xf32>, tensor<1x2x37x8xi8>,
        tensor<1x2x3xf32>, tensor<1x37x6xi8>, tensor<1x2x3x8xi8>, tensor<1x2x3x8xi8>,
        tensor<1x2x37x8xi8>
}

// C: min_b4: smooth_keys mean OK
// C: min_b4: smooth_keys K - mean OK
// C: min_b4: smooth_keys using the mean OK
// C: min_b4: stage1 of the smoothed keys q8 OK
// C: min_b4: stage1 scales s1 OK
// C: min_b4: fit=minmax anchor=min scales s2 OK
// C: min_b4: fit=minmax anchor=min zero points z2 OK
// C: min_b4: fit=minmax anchor=min packed codes OK
// C: min_b4: progressive_dequantize q8d OK
// C: min_b4: all checks passed
func.func @min_b4(%k: tensor<1x4x100x16xf32> {qattn.name = "k"}, %kn: tensor<1x4x2x16xf32> {qattn.name = "kn"})
    -> (tensor<1x4x100x16xf32> {qattn.name = "ks"}, tensor<1x4x16xf32> {qattn.name = "mu"},
        tensor<1x4x2x16xf32> {qattn.name = "ksn"}, tensor<1x4x100x16xi8> {qattn.name = "q8"},
        tensor<1x4x4xf32> {qattn.name = "s1"}, tensor<1x100x32xi8> {qattn.name = "codes"},
        tensor<1x4x7x16xi8> {qattn.name = "s2"}, tensor<1x4x7x16xi8> {qattn.name = "z2"},
        tensor<1x4x100x16xi8> {qattn.name = "q8d"}) {
  %ks, %mu = qattn.smooth_keys %k {calibration = array<i64: 0, 16>}
      : tensor<1x4x100x16xf32> -> tensor<1x4x100x16xf32>, tensor<1x4x16xf32>
  %ksn, %mu1 = qattn.smooth_keys %kn using(%mu)
      : tensor<1x4x2x16xf32>, tensor<1x4x16xf32> -> tensor<1x4x2x16xf32>, tensor<1x4x16xf32>
  %q8, %s1 = qattn.quantize %ks {scheme = #qattn.stage1<block = 32>}
      : tensor<1x4x100x16xf32> -> tensor<1x4x100x16xi8>, tensor<1x4x4xf32>
  %p, %s2, %z2 = qattn.progressive_quantize %q8 {scheme = #qattn.stage2<bits = [4], group = 16, anchor = min>}
      : tensor<1x4x100x16xi8> -> tensor<1x100x32xi8>, tensor<1x4x7x16xi8>, tensor<1x4x7x16xi8>
  %q8d = qattn.progressive_dequantize %p, %s2, %z2 {scheme = #qattn.stage2<bits = [4], group = 16, anchor = min>}
      : tensor<1x100x32xi8>, tensor<1x4x7x16xi8>, tensor<1x4x7x16xi8> -> tensor<1x4x100x16xi8>
  return %ks, %mu, %ksn, %q8, %s1, %p, %s2, %z2, %q8d
      : tensor<1x4x100x16xf32>, tensor<1x4x16xf32>, tensor<1x4x2x16xf32>, tensor<1x4x100x16xi8>, tensor<1x4x4xf32>, tensor<1x100x32xi8>, tensor<1x4x7x16xi8>, tensor<1x4x7x16xi8>, tensor<1x4x100x16xi8>
}

// D: min_mse_mixed: smooth_keys mean OK
// D: min_mse_mixed: smooth_keys K - mean OK
// D: min_mse_mixed: smooth_keys using the mean OK
// D: min_mse_mixed: stage1 of the smoothed keys q8 OK
// D: min_mse_mixed: stage1 scales s1 OK
// D: min_mse_mixed: fit=mse anchor=min scales s2 OK
// D: min_mse_mixed: fit=mse anchor=min zero points z2 OK
// D: min_mse_mixed: fit=mse anchor=min packed codes OK
// D: min_mse_mixed: progressive_dequantize q8d OK
// D: min_mse_mixed: fit=mse never worse than minmax per group OK
// D: min_mse_mixed: all checks passed
func.func @min_mse_mixed(%k: tensor<2x3x45x8xf32> {qattn.name = "k"}, %kn: tensor<2x3x1x8xf32> {qattn.name = "kn"})
    -> (tensor<2x3x45x8xf32> {qattn.name = "ks"}, tensor<2x3x8xf32> {qattn.name = "mu"},
        tensor<2x3x1x8xf32> {qattn.name = "ksn"}, tensor<2x3x45x8xi8> {qattn.name = "q8"},
        tensor<2x3x3xf32> {qattn.name = "s1"}, tensor<2x45x9xi8> {qattn.name = "codes"},
        tensor<2x3x6x8xi8> {qattn.name = "s2"}, tensor<2x3x6x8xi8> {qattn.name = "z2"},
        tensor<2x3x45x8xi8> {qattn.name = "q8d"}) {
  %ks, %mu = qattn.smooth_keys %k {calibration = array<i64: 5, 40>}
      : tensor<2x3x45x8xf32> -> tensor<2x3x45x8xf32>, tensor<2x3x8xf32>
  %ksn, %mu1 = qattn.smooth_keys %kn using(%mu)
      : tensor<2x3x1x8xf32>, tensor<2x3x8xf32> -> tensor<2x3x1x8xf32>, tensor<2x3x8xf32>
  %q8, %s1 = qattn.quantize %ks {scheme = #qattn.stage1<block = 16>}
      : tensor<2x3x45x8xf32> -> tensor<2x3x45x8xi8>, tensor<2x3x3xf32>
  %p, %s2, %z2 = qattn.progressive_quantize %q8 {scheme = #qattn.stage2<bits = [3, 2, 4], group = 8, order = msb_first, anchor = min>, fit = #qattn.fit<mse>}
      : tensor<2x3x45x8xi8> -> tensor<2x45x9xi8>, tensor<2x3x6x8xi8>, tensor<2x3x6x8xi8>
  %q8d = qattn.progressive_dequantize %p, %s2, %z2 {scheme = #qattn.stage2<bits = [3, 2, 4], group = 8, order = msb_first, anchor = min>}
      : tensor<2x45x9xi8>, tensor<2x3x6x8xi8>, tensor<2x3x6x8xi8> -> tensor<2x3x45x8xi8>
  return %ks, %mu, %ksn, %q8, %s1, %p, %s2, %z2, %q8d
      : tensor<2x3x45x8xf32>, tensor<2x3x8xf32>, tensor<2x3x1x8xf32>, tensor<2x3x45x8xi8>, tensor<2x3x3xf32>, tensor<2x45x9xi8>, tensor<2x3x6x8xi8>, tensor<2x3x6x8xi8>, tensor<2x3x45x8xi8>
}
