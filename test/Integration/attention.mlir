// qattn.attention compiled for the CPU against the NumPy model of docs/FORMAT.md. Each function
// takes float q, k, v, quantizes them with qattn.quantize / qattn.progressive_quantize and runs
// qattn.attention; check_attention.py recomputes the quantized operands with the model and
// compares the output (a) with the model's float64 attention on the same dequantized operands
// (tight: per query row |o - model| <= (8 A + 64) u max|V'| + half an ulp of o's type, u = 2^-24,
// A = max |scale| |Q'| . |K'| of the row; only the f32 summation order and expf differ) and
// (b) with float64 exact-softmax attention on the unquantized inputs (rel_fro / SQNR bounds
// measured on these seeds, with margin; every bound is below 1, the rel_fro of a zero output).
// qattn-run also prints its own float64 comparison, and checks --max-rel-error / --min-sqnr on
// one case.
//
// Covered: 4-bit, 2-bit, 3-bit (also min-anchored), per-head mixed and int8-only K/V (K and V independently), float
// (f32, f16) and int8 Q (block and channel scales), d = 64 and 128, Hq/Hkv = 4/1, 4/4, 1/1,
// causal and not, ragged Nq < Nk (1..64 queries, 100 / 301 keys), exact and SAS softmax, f32,
// f16 and bf16 output, the default and an explicit softmax scale.

// REQUIRES: numpy
// RUN: rm -rf %t && qattn-compile %s -o %t/art
// RUN: qattn-run %t/art --function a4_d64_gqa --seed 31 --dist normal --output-dir %t/a4_d64_gqa | FileCheck %s --check-prefix=RUN0
// RUN: %python %S/Inputs/check_attention.py --case a4_d64_gqa --art %t/art --function a4_d64_gqa --out %t/a4_d64_gqa --q '' --k block=64,bits=4,group=16 --v block=64,bits=4,group=16 --causal --max-rel-fro 0.15 --min-sqnr 16.5 | FileCheck %s --check-prefix=CHECK0
// RUN: qattn-run %t/art --function a2_d128_sas_f16 --seed 32 --dist normal --output-dir %t/a2_d128_sas_f16 | FileCheck %s --check-prefix=RUN1
// RUN: %python %S/Inputs/check_attention.py --case a2_d128_sas_f16 --art %t/art --function a2_d128_sas_f16 --out %t/a2_d128_sas_f16 --q 'block=16' --k block=32,scale=f16,gran=channel,bits=2,group=32 --v block=32,scale=f16,bits=2,group=8,order=msb --softmax sas:-6.0:3 --max-rel-fro 0.65 --min-sqnr 3.7 | FileCheck %s --check-prefix=CHECK1
// RUN: qattn-run %t/art --function amixed_d64 --seed 33 --dist normal --random k=outlier --random q=uniform --output-dir %t/amixed_d64 | FileCheck %s --check-prefix=RUN2
// RUN: %python %S/Inputs/check_attention.py --case amixed_d64 --art %t/art --function amixed_d64 --out %t/amixed_d64 --q '' --k block=64,bits=4-2-3-4,group=16 --v block=64,bits=2-4-4-3,group=32,order=msb --causal --softmax sas:-8.0:2 --scale 0.1 --max-rel-fro 0.55 --min-sqnr 5.2 | FileCheck %s --check-prefix=CHECK2
// RUN: qattn-run %t/art --function a8_d128_bf16 --seed 34 --dist normal --output-dir %t/a8_d128_bf16 --max-rel-error 0.02 --min-sqnr 34 | FileCheck %s --check-prefix=RUN3
// RUN: %python %S/Inputs/check_attention.py --case a8_d128_bf16 --art %t/art --function a8_d128_bf16 --out %t/a8_d128_bf16 --q 'block=16,scale=f16' --k block=16,gran=channel --v block=32 --causal --max-rel-fro 0.02 --min-sqnr 34 | FileCheck %s --check-prefix=CHECK3
// RUN: qattn-run %t/art --function a4k8v_decode --seed 35 --dist uniform --output-dir %t/a4k8v_decode | FileCheck %s --check-prefix=RUN4
// RUN: %python %S/Inputs/check_attention.py --case a4k8v_decode --art %t/art --function a4k8v_decode --out %t/a4k8v_decode --q '' --k block=32,bits=4,group=8 --v block=32 --max-rel-fro 0.03 --min-sqnr 30.4 | FileCheck %s --check-prefix=CHECK4
// RUN: qattn-run %t/art --function a42_d128_int8q --seed 36 --dist outlier --random q=normal --random v=normal --output-dir %t/a42_d128_int8q | FileCheck %s --check-prefix=RUN5
// RUN: %python %S/Inputs/check_attention.py --case a42_d128_int8q --art %t/art --function a42_d128_int8q --out %t/a42_d128_int8q --q 'block=64,gran=channel' --k block=64,bits=4,group=16 --v block=64,bits=2,group=16 --causal --max-rel-fro 0.5 --min-sqnr 6.0 | FileCheck %s --check-prefix=CHECK5

// RUN: qattn-run %t/art --function a3min_decode --seed 37 --dist normal --output-dir %t/a3min_decode | FileCheck %s --check-prefix=RUN6
// RUN: %python %S/Inputs/check_attention.py --case a3min_decode --art %t/art --function a3min_decode --out %t/a3min_decode --q '' --k block=32,bits=3,group=8,anchor=min --v block=32,bits=2,group=16,order=msb,anchor=min --max-rel-fro 0.5 --min-sqnr 6.0 | FileCheck %s --check-prefix=CHECK6
// a4_d64_gqa: B=1 Hq=4 Hkv=1 Nq=37 Nk=301 d=64, Q f32, K block=64,bits=4,group=16, V block=64,bits=4,group=16, causal, softmax exact, f32 output, data normal
// RUN0: result o vs float64 attention: max_abs={{.*}} rel_fro={{.*}} sqnr={{.*}} dB
// RUN0-NOT: FAIL
// CHECK0: a4_d64_gqa: vs model on dequantized operands {{.*}} OK
// CHECK0: a4_d64_gqa: vs float64 attention {{.*}} OK
// CHECK0: a4_d64_gqa: all checks passed
func.func @a4_d64_gqa(%q: tensor<1x4x37x64xf32> {qattn.name = "q"}, %k: tensor<1x1x301x64xf32> {qattn.name = "k"},
    %v: tensor<1x1x301x64xf32> {qattn.name = "v"}) -> (tensor<1x4x37x64xf32> {qattn.name = "o"}) {
  %k8, %ks = qattn.quantize %k {scheme = #qattn.stage1<block = 64>} : tensor<1x1x301x64xf32> -> tensor<1x1x301x64xi8>, tensor<1x1x5xf32>
  %kp, %ks2, %kz2 = qattn.progressive_quantize %k8 {scheme = #qattn.stage2<bits = [4], group = 16>} : tensor<1x1x301x64xi8> -> tensor<1x301x32xi8>, tensor<1x1x19x64xi8>, tensor<1x1x19x64xi8>
  %v8, %vs = qattn.quantize %v {scheme = #qattn.stage1<block = 64>} : tensor<1x1x301x64xf32> -> tensor<1x1x301x64xi8>, tensor<1x1x5xf32>
  %vp, %vs2, %vz2 = qattn.progressive_quantize %v8 {scheme = #qattn.stage2<bits = [4], group = 16>} : tensor<1x1x301x64xi8> -> tensor<1x301x32xi8>, tensor<1x1x19x64xi8>, tensor<1x1x19x64xi8>
  %o = qattn.attention %q keys(%kp, %ks, %ks2, %kz2) values(%vp, %vs, %vs2, %vz2)
      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4], group = 16>, v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [4], group = 16>, causal}
      : (tensor<1x4x37x64xf32>, tensor<1x301x32xi8>, tensor<1x1x5xf32>, tensor<1x1x19x64xi8>, tensor<1x1x19x64xi8>, tensor<1x301x32xi8>, tensor<1x1x5xf32>, tensor<1x1x19x64xi8>, tensor<1x1x19x64xi8>) -> tensor<1x4x37x64xf32>
  return %o : tensor<1x4x37x64xf32>
}

// a2_d128_sas_f16: B=1 Hq=4 Hkv=4 Nq=19 Nk=100 d=128, Q int8 block=16, K block=32,scale=f16,gran=channel,bits=2,group=32, V block=32,scale=f16,bits=2,group=8,order=msb, not causal, softmax sas -6.0/3, f16 output, data normal
// RUN1: result o vs float64 attention: max_abs={{.*}} rel_fro={{.*}} sqnr={{.*}} dB
// RUN1-NOT: FAIL
// CHECK1: a2_d128_sas_f16: vs model on dequantized operands {{.*}} OK
// CHECK1: a2_d128_sas_f16: vs float64 attention {{.*}} OK
// CHECK1: a2_d128_sas_f16: all checks passed
func.func @a2_d128_sas_f16(%q: tensor<1x4x19x128xf32> {qattn.name = "q"}, %k: tensor<1x4x100x128xf32> {qattn.name = "k"},
    %v: tensor<1x4x100x128xf32> {qattn.name = "v"}) -> (tensor<1x4x19x128xf16> {qattn.name = "o"}) {
  %q8, %qs = qattn.quantize %q {scheme = #qattn.stage1<block = 16>} : tensor<1x4x19x128xf32> -> tensor<1x4x19x128xi8>, tensor<1x4x2xf32>
  %k8, %ks = qattn.quantize %k {scheme = #qattn.stage1<block = 32, scale = f16, granularity = channel>} : tensor<1x4x100x128xf32> -> tensor<1x4x100x128xi8>, tensor<1x4x4x128xf16>
  %kp, %ks2, %kz2 = qattn.progressive_quantize %k8 {scheme = #qattn.stage2<bits = [2], group = 32>} : tensor<1x4x100x128xi8> -> tensor<1x100x128xi8>, tensor<1x4x4x128xi8>, tensor<1x4x4x128xi8>
  %v8, %vs = qattn.quantize %v {scheme = #qattn.stage1<block = 32, scale = f16>} : tensor<1x4x100x128xf32> -> tensor<1x4x100x128xi8>, tensor<1x4x4xf16>
  %vp, %vs2, %vz2 = qattn.progressive_quantize %v8 {scheme = #qattn.stage2<bits = [2], group = 8, order = msb_first>} : tensor<1x4x100x128xi8> -> tensor<1x100x128xi8>, tensor<1x4x13x128xi8>, tensor<1x4x13x128xi8>
  %o = qattn.attention %q8 [%qs] keys(%kp, %ks, %ks2, %kz2) values(%vp, %vs, %vs2, %vz2)
      {q_stage1 = #qattn.stage1<block = 16>, k_stage1 = #qattn.stage1<block = 32, scale = f16, granularity = channel>, k_stage2 = #qattn.stage2<bits = [2], group = 32>, v_stage1 = #qattn.stage1<block = 32, scale = f16>, v_stage2 = #qattn.stage2<bits = [2], group = 8, order = msb_first>, softmax = #qattn.softmax<sas, threshold = -6.0, degree = 3>}
      : (tensor<1x4x19x128xi8>, tensor<1x4x2xf32>, tensor<1x100x128xi8>, tensor<1x4x4x128xf16>, tensor<1x4x4x128xi8>, tensor<1x4x4x128xi8>, tensor<1x100x128xi8>, tensor<1x4x4xf16>, tensor<1x4x13x128xi8>, tensor<1x4x13x128xi8>) -> tensor<1x4x19x128xf16>
  return %o : tensor<1x4x19x128xf16>
}

// amixed_d64: B=2 Hq=4 Hkv=4 Nq=50 Nk=301 d=64, Q f16, K block=64,bits=4-2-3-4,group=16, V block=64,bits=2-4-4-3,group=32,order=msb, causal, softmax sas -8.0/2, f32 output, data normal k=outlier q=uniform
// RUN2: result o vs float64 attention: max_abs={{.*}} rel_fro={{.*}} sqnr={{.*}} dB
// RUN2-NOT: FAIL
// CHECK2: amixed_d64: vs model on dequantized operands {{.*}} OK
// CHECK2: amixed_d64: vs float64 attention {{.*}} OK
// CHECK2: amixed_d64: all checks passed
func.func @amixed_d64(%q: tensor<2x4x50x64xf16> {qattn.name = "q"}, %k: tensor<2x4x301x64xf32> {qattn.name = "k"},
    %v: tensor<2x4x301x64xf32> {qattn.name = "v"}) -> (tensor<2x4x50x64xf32> {qattn.name = "o"}) {
  %k8, %ks = qattn.quantize %k {scheme = #qattn.stage1<block = 64>} : tensor<2x4x301x64xf32> -> tensor<2x4x301x64xi8>, tensor<2x4x5xf32>
  %kp, %ks2, %kz2 = qattn.progressive_quantize %k8 {scheme = #qattn.stage2<bits = [4, 2, 3, 4], group = 16>} : tensor<2x4x301x64xi8> -> tensor<2x301x104xi8>, tensor<2x4x19x64xi8>, tensor<2x4x19x64xi8>
  %v8, %vs = qattn.quantize %v {scheme = #qattn.stage1<block = 64>} : tensor<2x4x301x64xf32> -> tensor<2x4x301x64xi8>, tensor<2x4x5xf32>
  %vp, %vs2, %vz2 = qattn.progressive_quantize %v8 {scheme = #qattn.stage2<bits = [2, 4, 4, 3], group = 32, order = msb_first>} : tensor<2x4x301x64xi8> -> tensor<2x301x104xi8>, tensor<2x4x10x64xi8>, tensor<2x4x10x64xi8>
  %o = qattn.attention %q keys(%kp, %ks, %ks2, %kz2) values(%vp, %vs, %vs2, %vz2)
      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4, 2, 3, 4], group = 16>, v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [2, 4, 4, 3], group = 32, order = msb_first>, causal, softmax = #qattn.softmax<sas, threshold = -8.0, degree = 2>, scale = 0.1 : f32}
      : (tensor<2x4x50x64xf16>, tensor<2x301x104xi8>, tensor<2x4x5xf32>, tensor<2x4x19x64xi8>, tensor<2x4x19x64xi8>, tensor<2x301x104xi8>, tensor<2x4x5xf32>, tensor<2x4x10x64xi8>, tensor<2x4x10x64xi8>) -> tensor<2x4x50x64xf32>
  return %o : tensor<2x4x50x64xf32>
}

// a8_d128_bf16: B=1 Hq=4 Hkv=1 Nq=37 Nk=100 d=128, Q int8 block=16,scale=f16, K block=16,gran=channel, V block=32, causal, softmax exact, bf16 output, data normal
// RUN3: result o vs float64 attention: max_abs={{.*}} rel_fro={{.*}} sqnr={{.*}} dB
// RUN3-NOT: FAIL
// CHECK3: a8_d128_bf16: vs model on dequantized operands {{.*}} OK
// CHECK3: a8_d128_bf16: vs float64 attention {{.*}} OK
// CHECK3: a8_d128_bf16: all checks passed
func.func @a8_d128_bf16(%q: tensor<1x4x37x128xf32> {qattn.name = "q"}, %k: tensor<1x1x100x128xf32> {qattn.name = "k"},
    %v: tensor<1x1x100x128xf32> {qattn.name = "v"}) -> (tensor<1x4x37x128xbf16> {qattn.name = "o"}) {
  %q8, %qs = qattn.quantize %q {scheme = #qattn.stage1<block = 16, scale = f16>} : tensor<1x4x37x128xf32> -> tensor<1x4x37x128xi8>, tensor<1x4x3xf16>
  %k8, %ks = qattn.quantize %k {scheme = #qattn.stage1<block = 16, granularity = channel>} : tensor<1x1x100x128xf32> -> tensor<1x1x100x128xi8>, tensor<1x1x7x128xf32>
  %v8, %vs = qattn.quantize %v {scheme = #qattn.stage1<block = 32>} : tensor<1x1x100x128xf32> -> tensor<1x1x100x128xi8>, tensor<1x1x4xf32>
  %o = qattn.attention %q8 [%qs] keys(%k8, %ks) values(%v8, %vs)
      {q_stage1 = #qattn.stage1<block = 16, scale = f16>, k_stage1 = #qattn.stage1<block = 16, granularity = channel>, v_stage1 = #qattn.stage1<block = 32>, causal}
      : (tensor<1x4x37x128xi8>, tensor<1x4x3xf16>, tensor<1x1x100x128xi8>, tensor<1x1x7x128xf32>, tensor<1x1x100x128xi8>, tensor<1x1x4xf32>) -> tensor<1x4x37x128xbf16>
  return %o : tensor<1x4x37x128xbf16>
}

// a4k8v_decode: B=1 Hq=1 Hkv=1 Nq=1 Nk=301 d=64, Q f32, K block=32,bits=4,group=8, V block=32, not causal, softmax exact, f16 output, data uniform
// RUN4: result o vs float64 attention: max_abs={{.*}} rel_fro={{.*}} sqnr={{.*}} dB
// RUN4-NOT: FAIL
// CHECK4: a4k8v_decode: vs model on dequantized operands {{.*}} OK
// CHECK4: a4k8v_decode: vs float64 attention {{.*}} OK
// CHECK4: a4k8v_decode: all checks passed
func.func @a4k8v_decode(%q: tensor<1x1x1x64xf32> {qattn.name = "q"}, %k: tensor<1x1x301x64xf32> {qattn.name = "k"},
    %v: tensor<1x1x301x64xf32> {qattn.name = "v"}) -> (tensor<1x1x1x64xf16> {qattn.name = "o"}) {
  %k8, %ks = qattn.quantize %k {scheme = #qattn.stage1<block = 32>} : tensor<1x1x301x64xf32> -> tensor<1x1x301x64xi8>, tensor<1x1x10xf32>
  %kp, %ks2, %kz2 = qattn.progressive_quantize %k8 {scheme = #qattn.stage2<bits = [4], group = 8>} : tensor<1x1x301x64xi8> -> tensor<1x301x32xi8>, tensor<1x1x38x64xi8>, tensor<1x1x38x64xi8>
  %v8, %vs = qattn.quantize %v {scheme = #qattn.stage1<block = 32>} : tensor<1x1x301x64xf32> -> tensor<1x1x301x64xi8>, tensor<1x1x10xf32>
  %o = qattn.attention %q keys(%kp, %ks, %ks2, %kz2) values(%v8, %vs)
      {k_stage1 = #qattn.stage1<block = 32>, k_stage2 = #qattn.stage2<bits = [4], group = 8>, v_stage1 = #qattn.stage1<block = 32>}
      : (tensor<1x1x1x64xf32>, tensor<1x301x32xi8>, tensor<1x1x10xf32>, tensor<1x1x38x64xi8>, tensor<1x1x38x64xi8>, tensor<1x1x301x64xi8>, tensor<1x1x10xf32>) -> tensor<1x1x1x64xf16>
  return %o : tensor<1x1x1x64xf16>
}

// a42_d128_int8q: B=1 Hq=4 Hkv=4 Nq=64 Nk=100 d=128, Q int8 block=64,gran=channel, K block=64,bits=4,group=16, V block=64,bits=2,group=16, causal, softmax exact, f32 output, data outlier q=normal v=normal
// RUN5: result o vs float64 attention: max_abs={{.*}} rel_fro={{.*}} sqnr={{.*}} dB
// RUN5-NOT: FAIL
// CHECK5: a42_d128_int8q: vs model on dequantized operands {{.*}} OK
// CHECK5: a42_d128_int8q: vs float64 attention {{.*}} OK
// CHECK5: a42_d128_int8q: all checks passed
func.func @a42_d128_int8q(%q: tensor<1x4x64x128xf32> {qattn.name = "q"}, %k: tensor<1x4x100x128xf32> {qattn.name = "k"},
    %v: tensor<1x4x100x128xf32> {qattn.name = "v"}) -> (tensor<1x4x64x128xf32> {qattn.name = "o"}) {
  %q8, %qs = qattn.quantize %q {scheme = #qattn.stage1<block = 64, granularity = channel>} : tensor<1x4x64x128xf32> -> tensor<1x4x64x128xi8>, tensor<1x4x1x128xf32>
  %k8, %ks = qattn.quantize %k {scheme = #qattn.stage1<block = 64>} : tensor<1x4x100x128xf32> -> tensor<1x4x100x128xi8>, tensor<1x4x2xf32>
  %kp, %ks2, %kz2 = qattn.progressive_quantize %k8 {scheme = #qattn.stage2<bits = [4], group = 16>} : tensor<1x4x100x128xi8> -> tensor<1x100x256xi8>, tensor<1x4x7x128xi8>, tensor<1x4x7x128xi8>
  %v8, %vs = qattn.quantize %v {scheme = #qattn.stage1<block = 64>} : tensor<1x4x100x128xf32> -> tensor<1x4x100x128xi8>, tensor<1x4x2xf32>
  %vp, %vs2, %vz2 = qattn.progressive_quantize %v8 {scheme = #qattn.stage2<bits = [2], group = 16>} : tensor<1x4x100x128xi8> -> tensor<1x100x128xi8>, tensor<1x4x7x128xi8>, tensor<1x4x7x128xi8>
  %o = qattn.attention %q8 [%qs] keys(%kp, %ks, %ks2, %kz2) values(%vp, %vs, %vs2, %vz2)
      {q_stage1 = #qattn.stage1<block = 64, granularity = channel>, k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4], group = 16>, v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [2], group = 16>, causal}
      : (tensor<1x4x64x128xi8>, tensor<1x4x1x128xf32>, tensor<1x100x256xi8>, tensor<1x4x2xf32>, tensor<1x4x7x128xi8>, tensor<1x4x7x128xi8>, tensor<1x100x128xi8>, tensor<1x4x2xf32>, tensor<1x4x7x128xi8>, tensor<1x4x7x128xi8>) -> tensor<1x4x64x128xf32>
  return %o : tensor<1x4x64x128xf32>
}

// a3min_decode: B=1 Hq=2 Hkv=1 Nq=1 Nk=301 d=64, Q f32, K block=32,bits=3,group=8,anchor=min, V block=32,bits=2,group=16,order=msb,anchor=min (the min-anchored grid through the checker's model), not causal, softmax exact, f32 output, data normal
// RUN6: result o vs float64 attention: max_abs={{.*}} rel_fro={{.*}} sqnr={{.*}} dB
// RUN6-NOT: FAIL
// CHECK6: a3min_decode: vs model on dequantized operands {{.*}} OK
// CHECK6: a3min_decode: all checks passed
func.func @a3min_decode(%q: tensor<1x2x1x64xf32> {qattn.name = "q"}, %k: tensor<1x1x301x64xf32> {qattn.name = "k"},
    %v: tensor<1x1x301x64xf32> {qattn.name = "v"}) -> (tensor<1x2x1x64xf32> {qattn.name = "o"}) {
  %k8, %ks = qattn.quantize %k {scheme = #qattn.stage1<block = 32>} : tensor<1x1x301x64xf32> -> tensor<1x1x301x64xi8>, tensor<1x1x10xf32>
  %kp, %ks2, %kz2 = qattn.progressive_quantize %k8 {scheme = #qattn.stage2<bits = [3], group = 8, anchor = min>} : tensor<1x1x301x64xi8> -> tensor<1x301x24xi8>, tensor<1x1x38x64xi8>, tensor<1x1x38x64xi8>
  %v8, %vs = qattn.quantize %v {scheme = #qattn.stage1<block = 32>} : tensor<1x1x301x64xf32> -> tensor<1x1x301x64xi8>, tensor<1x1x10xf32>
  %vp, %vs2, %vz2 = qattn.progressive_quantize %v8 {scheme = #qattn.stage2<bits = [2], group = 16, order = msb_first, anchor = min>} : tensor<1x1x301x64xi8> -> tensor<1x301x16xi8>, tensor<1x1x19x64xi8>, tensor<1x1x19x64xi8>
  %o = qattn.attention %q keys(%kp, %ks, %ks2, %kz2) values(%vp, %vs, %vs2, %vz2)
      {k_stage1 = #qattn.stage1<block = 32>, k_stage2 = #qattn.stage2<bits = [3], group = 8, anchor = min>, v_stage1 = #qattn.stage1<block = 32>, v_stage2 = #qattn.stage2<bits = [2], group = 16, order = msb_first, anchor = min>}
      : (tensor<1x2x1x64xf32>, tensor<1x301x24xi8>, tensor<1x1x10xf32>, tensor<1x1x38x64xi8>, tensor<1x1x38x64xi8>, tensor<1x301x16xi8>, tensor<1x1x10xf32>, tensor<1x1x19x64xi8>, tensor<1x1x19x64xi8>) -> tensor<1x2x1x64xf32>
  return %o : tensor<1x2x1x64xf32>
}
