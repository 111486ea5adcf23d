// RUN: qattn-opt %s | qattn-opt | FileCheck %s
// RUN: qattn-opt %s --mlir-print-op-generic | qattn-opt | FileCheck %s

// CHECK-LABEL: func.func @stage1
// CHECK: qattn.quantize %{{.*}} {scheme = #qattn.stage1<block = 64>} : tensor<2x8x100x128xf16> -> tensor<2x8x100x128xi8>, tensor<2x8x2xf32>
// CHECK: qattn.quantize %{{.*}} {scheme = #qattn.stage1<block = 32, scale = f16, granularity = channel>} : tensor<1x2x33x64xbf16> -> tensor<1x2x33x64xi8>, tensor<1x2x2x64xf16>
// CHECK: qattn.dequantize %{{.*}}, %{{.*}} {scheme = #qattn.stage1<block = 64>} : tensor<2x8x100x128xi8>, tensor<2x8x2xf32> -> tensor<2x8x100x128xf32>
func.func @stage1(%x: tensor<2x8x100x128xf16>, %y: tensor<1x2x33x64xbf16>) -> tensor<2x8x100x128xf32> {
  %q, %s = qattn.quantize %x {scheme = #qattn.stage1<block = 64>} : tensor<2x8x100x128xf16> -> tensor<2x8x100x128xi8>, tensor<2x8x2xf32>
  %q2, %s2 = qattn.quantize %y {scheme = #qattn.stage1<block = 32, scale = f16, granularity = channel>} : tensor<1x2x33x64xbf16> -> tensor<1x2x33x64xi8>, tensor<1x2x2x64xf16>
  %d = qattn.dequantize %q, %s {scheme = #qattn.stage1<block = 64>} : tensor<2x8x100x128xi8>, tensor<2x8x2xf32> -> tensor<2x8x100x128xf32>
  return %d : tensor<2x8x100x128xf32>
}

// CHECK-LABEL: func.func @stage2
// CHECK: qattn.progressive_quantize %{{.*}} {scheme = #qattn.stage2<bits = [4], group = 16>} : tensor<1x8x100x128xi8> -> tensor<1x100x512xi8>, tensor<1x8x7x128xi8>, tensor<1x8x7x128xi8>
// CHECK: qattn.progressive_quantize %{{.*}} {scheme = #qattn.stage2<bits = [4, 2, 3, 4], group = 32, order = msb_first>} : tensor<1x4x100x64xi8> -> tensor<1x100x104xi8>, tensor<1x4x4x64xi8>, tensor<1x4x4x64xi8>
// CHECK: qattn.progressive_dequantize %{{.*}}, %{{.*}}, %{{.*}} {scheme = #qattn.stage2<bits = [4], group = 16>} : tensor<1x100x512xi8>, tensor<1x8x7x128xi8>, tensor<1x8x7x128xi8> -> tensor<1x8x100x128xi8>
func.func @stage2(%q8: tensor<1x8x100x128xi8>, %m8: tensor<1x4x100x64xi8>) -> tensor<1x8x100x128xi8> {
  %p, %s, %z = qattn.progressive_quantize %q8 {scheme = #qattn.stage2<bits = [4], group = 16>} : tensor<1x8x100x128xi8> -> tensor<1x100x512xi8>, tensor<1x8x7x128xi8>, tensor<1x8x7x128xi8>
  %p2, %s2, %z2 = qattn.progressive_quantize %m8 {scheme = #qattn.stage2<bits = [4, 2, 3, 4], group = 32, order = msb_first>} : tensor<1x4x100x64xi8> -> tensor<1x100x104xi8>, tensor<1x4x4x64xi8>, tensor<1x4x4x64xi8>
  %d = qattn.progressive_dequantize %p, %s, %z {scheme = #qattn.stage2<bits = [4], group = 16>} : tensor<1x100x512xi8>, tensor<1x8x7x128xi8>, tensor<1x8x7x128xi8> -> tensor<1x8x100x128xi8>
  return %d : tensor<1x8x100x128xi8>
}

// CHECK-LABEL: func.func @decode_buffer
// CHECK: qattn.buffer_append %{{.*}}, %{{.*}} into %{{.*}}[%{{.*}}] : tensor<1x8x1x128xf16>, tensor<1x8xf32> into tensor<1x8x64x128xi8>
// CHECK: qattn.buffer_flush %{{.*}}, %{{.*}} into %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}[%{{.*}}] {stage1 = #qattn.stage1<block = 64>, stage2 = #qattn.stage2<bits = [4], group = 16>} : tensor<1x8x64x128xi8>, tensor<1x8xf32> into tensor<1x256x512xi8>, tensor<1x8x4xf32>, tensor<1x8x16x128xi8>, tensor<1x8x16x128xi8>
func.func @decode_buffer(%x: tensor<1x8x1x128xf16>, %s: tensor<1x8xf32>, %buf: tensor<1x8x64x128xi8>, %pos: index,
                         %p: tensor<1x256x512xi8>, %s1: tensor<1x8x4xf32>, %s2: tensor<1x8x16x128xi8>, %z2: tensor<1x8x16x128xi8>, %at: index)
    -> (tensor<1x256x512xi8>, tensor<1x8x4xf32>, tensor<1x8x16x128xi8>, tensor<1x8x16x128xi8>) {
  %b = qattn.buffer_append %x, %s into %buf[%pos] : tensor<1x8x1x128xf16>, tensor<1x8xf32> into tensor<1x8x64x128xi8>
  %p1, %s11, %s21, %z21 = qattn.buffer_flush %b, %s into %p, %s1, %s2, %z2[%at] {stage1 = #qattn.stage1<block = 64>, stage2 = #qattn.stage2<bits = [4], group = 16>} : tensor<1x8x64x128xi8>, tensor<1x8xf32> into tensor<1x256x512xi8>, tensor<1x8x4xf32>, tensor<1x8x16x128xi8>, tensor<1x8x16x128xi8>
  return %p1, %s11, %s21, %z21 : tensor<1x256x512xi8>, tensor<1x8x4xf32>, tensor<1x8x16x128xi8>, tensor<1x8x16x128xi8>
}

// CHECK-LABEL: func.func @attention_float_q_int8_kv
// CHECK: qattn.attention %{{.*}} keys(%{{.*}}, %{{.*}}) values(%{{.*}}, %{{.*}}) {k_stage1 = #qattn.stage1<block = 64>, scale = 1.250000e-01 : f32, v_stage1 = #qattn.stage1<block = 64>} : (tensor<2x32x1x64xbf16>, tensor<2x8x300x64xi8>, tensor<2x8x5xf32>, tensor<2x8x300x64xi8>, tensor<2x8x5xf32>) -> tensor<2x32x1x64xbf16>
func.func @attention_float_q_int8_kv(%q: tensor<2x32x1x64xbf16>, %k: tensor<2x8x300x64xi8>, %ks: tensor<2x8x5xf32>, %v: tensor<2x8x300x64xi8>, %vs: tensor<2x8x5xf32>) -> tensor<2x32x1x64xbf16> {
  %o = qattn.attention %q keys(%k, %ks) values(%v, %vs) {k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>, scale = 0.125 : f32}
      : (tensor<2x32x1x64xbf16>, tensor<2x8x300x64xi8>, tensor<2x8x5xf32>, tensor<2x8x300x64xi8>, tensor<2x8x5xf32>) -> tensor<2x32x1x64xbf16>
  return %o : tensor<2x32x1x64xbf16>
}

// CHECK-LABEL: func.func @attention_bpq_with_buffers
// CHECK: qattn.attention %{{[a-z0-9_]+}}[%{{[a-z0-9_]+}}] keys(%{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}) values(%{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}) buffers(%{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}) {
// CHECK-SAME: causal
// CHECK-SAME: softmax = #qattn.softmax<sas, threshold = -6.000000e+00, degree = 3>
// CHECK-SAME: v_stage2 = #qattn.stage2<bits = [4, 2], group = 16>
func.func @attention_bpq_with_buffers(%q: tensor<1x8x4x64xi8>, %qs: tensor<1x8x1xf32>,
    %kp: tensor<1x128x64xi8>, %ks1: tensor<1x2x2xf32>, %ks2: tensor<1x2x8x64xi8>, %kz2: tensor<1x2x8x64xi8>,
    %vp: tensor<1x128x48xi8>, %vs1: tensor<1x2x2xf32>, %vs2: tensor<1x2x8x64xi8>, %vz2: tensor<1x2x8x64xi8>,
    %kb: tensor<1x2x64x64xi8>, %kbs: tensor<1x2xf32>, %vb: tensor<1x2x64x64xi8>, %vbs: tensor<1x2xf32>) -> tensor<1x8x4x64xf32> {
  %o = qattn.attention %q [%qs] keys(%kp, %ks1, %ks2, %kz2) values(%vp, %vs1, %vs2, %vz2) buffers(%kb, %kbs, %vb, %vbs)
      {q_stage1 = #qattn.stage1<block = 64>,
       k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4], group = 16>,
       v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [4, 2], group = 16>,
       causal, softmax = #qattn.softmax<sas, threshold = -6.0, degree = 3>}
      : (tensor<1x8x4x64xi8>, tensor<1x8x1xf32>, tensor<1x128x64xi8>, tensor<1x2x2xf32>, tensor<1x2x8x64xi8>, tensor<1x2x8x64xi8>,
         tensor<1x128x48xi8>, tensor<1x2x2xf32>, tensor<1x2x8x64xi8>, tensor<1x2x8x64xi8>,
         tensor<1x2x64x64xi8>, tensor<1x2xf32>, tensor<1x2x64x64xi8>, tensor<1x2xf32>) -> tensor<1x8x4x64xf32>
  return %o : tensor<1x8x4x64xf32>
}

// CHECK-LABEL: func.func @softmax_exact
// CHECK: softmax = #qattn.softmax<exact>
func.func @softmax_exact(%q: tensor<1x1x1x16xf32>, %k: tensor<1x1x8x16xi8>, %ks: tensor<1x1x1xf32>) -> tensor<1x1x1x16xf32> {
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) {k_stage1 = #qattn.stage1<block = 8>, v_stage1 = #qattn.stage1<block = 8>, softmax = #qattn.softmax<exact>}
      : (tensor<1x1x1x16xf32>, tensor<1x1x8x16xi8>, tensor<1x1x1xf32>, tensor<1x1x8x16xi8>, tensor<1x1x1xf32>) -> tensor<1x1x1x16xf32>
  return %o : tensor<1x1x1x16xf32>
}

// CHECK-LABEL: func.func @tilings
// CHECK-SAME: a = #qattn.gpu_tiling<warps = 4, splits = 16>
// CHECK-SAME: b = #qattn.gpu_tiling<warps = 2, splits = 3, keys_per_step = 4, stages = 2>
// CHECK-SAME: c = #qattn.gpu_tiling<warps = 4, splits = 1, kernel = mma>
// CHECK-SAME: d = #qattn.gpu_tiling<warps = 4, splits = 1, kernel = wgmma, stages = 3>
// CHECK-SAME: e = #qattn.gpu_tiling<warps = 12, splits = 1, kernel = wgmma, stages = 2, pv = e4m3>
// CHECK-SAME: f = #qattn.gpu_tiling<warps = 8, splits = 1, kernel = wgmma, stages = 3, pv = e4m3, producer = warpgroup>
func.func @tilings() attributes {f = #qattn.gpu_tiling<warps = 8, splits = 1, kernel = wgmma, stages = 3, pv = e4m3, producer = warpgroup>, a = #qattn.gpu_tiling<warps = 4, splits = 16>, b = #qattn.gpu_tiling<warps = 2, splits = 3, keys_per_step = 4, stages = 2>, c = #qattn.gpu_tiling<warps = 4, splits = 1, kernel = mma>, d = #qattn.gpu_tiling<warps = 4, splits = 1, kernel = wgmma, stages = 3>, e = #qattn.gpu_tiling<warps = 12, splits = 1, kernel = wgmma, stages = 2, pv = e4m3>} { return }

// CHECK-LABEL: func.func @smooth_keys
// CHECK: %[[KS:.*]], %[[MU:.*]] = qattn.smooth_keys %{{.*}} {calibration = array<i64: 0, 64>} : tensor<1x8x100x128xf16> -> tensor<1x8x100x128xf32>, tensor<1x8x128xf32>
// CHECK: qattn.smooth_keys %{{.*}} using(%[[MU]]) : tensor<1x8x1x128xbf16>, tensor<1x8x128xf32> -> tensor<1x8x1x128xf32>, tensor<1x8x128xf32>
func.func @smooth_keys(%k: tensor<1x8x100x128xf16>, %knew: tensor<1x8x1x128xbf16>) -> (tensor<1x8x100x128xf32>, tensor<1x8x1x128xf32>) {
  %ks, %mu = qattn.smooth_keys %k {calibration = array<i64: 0, 64>} : tensor<1x8x100x128xf16> -> tensor<1x8x100x128xf32>, tensor<1x8x128xf32>
  %ks1, %mu1 = qattn.smooth_keys %knew using(%mu) : tensor<1x8x1x128xbf16>, tensor<1x8x128xf32> -> tensor<1x8x1x128xf32>, tensor<1x8x128xf32>
  return %ks, %ks1 : tensor<1x8x100x128xf32>, tensor<1x8x1x128xf32>
}

// CHECK-LABEL: func.func @stage2_fit
// CHECK: qattn.progressive_quantize %{{.*}} {fit = #qattn.fit<mse>, scheme = #qattn.stage2<bits = [3], group = 16>} : tensor<1x8x100x128xi8> -> tensor<1x100x384xi8>, tensor<1x8x7x128xi8>, tensor<1x8x7x128xi8>
// CHECK: qattn.progressive_quantize %{{.*}} {fit = #qattn.fit<minmax>, scheme = #qattn.stage2<bits = [4], group = 16>}
// CHECK: qattn.buffer_flush %{{.*}} {fit = #qattn.fit<mse>, stage1 = #qattn.stage1<block = 64>, stage2 = #qattn.stage2<bits = [4], group = 16>}
func.func @stage2_fit(%q8: tensor<1x8x100x128xi8>, %b: tensor<1x8x64x128xi8>, %s: tensor<1x8xf32>, %p: tensor<1x256x512xi8>, %s1: tensor<1x8x4xf32>, %s2: tensor<1x8x16x128xi8>, %z2: tensor<1x8x16x128xi8>, %at: index) -> tensor<1x256x512xi8> {
  %p0, %g0, %z0 = qattn.progressive_quantize %q8 {scheme = #qattn.stage2<bits = [3], group = 16>, fit = #qattn.fit<mse>} : tensor<1x8x100x128xi8> -> tensor<1x100x384xi8>, tensor<1x8x7x128xi8>, tensor<1x8x7x128xi8>
  %p1, %g1, %z1 = qattn.progressive_quantize %q8 {scheme = #qattn.stage2<bits = [4], group = 16>, fit = #qattn.fit<minmax>} : tensor<1x8x100x128xi8> -> tensor<1x100x512xi8>, tensor<1x8x7x128xi8>, tensor<1x8x7x128xi8>
  %p2, %s12, %s22, %z22 = qattn.buffer_flush %b, %s into %p, %s1, %s2, %z2[%at] {stage1 = #qattn.stage1<block = 64>, stage2 = #qattn.stage2<bits = [4], group = 16>, fit = #qattn.fit<mse>} : tensor<1x8x64x128xi8>, tensor<1x8xf32> into tensor<1x256x512xi8>, tensor<1x8x4xf32>, tensor<1x8x16x128xi8>, tensor<1x8x16x128xi8>
  return %p2 : tensor<1x256x512xi8>
}

// CHECK-LABEL: func.func @stage2_min_anchor
// CHECK: qattn.progressive_quantize %{{.*}} {scheme = #qattn.stage2<bits = [4], group = 16, anchor = min>}
// CHECK: qattn.attention {{.*}} k_stage2 = #qattn.stage2<bits = [4], group = 16, anchor = min>
func.func @stage2_min_anchor(%q: tensor<1x2x4x16xf32>, %q8: tensor<1x2x32x16xi8>, %ks: tensor<1x2x1xf32>) -> tensor<1x2x4x16xf32> {
  %p, %s, %z = qattn.progressive_quantize %q8 {scheme = #qattn.stage2<bits = [4], group = 16, anchor = min>} : tensor<1x2x32x16xi8> -> tensor<1x32x16xi8>, tensor<1x2x2x16xi8>, tensor<1x2x2x16xi8>
  %o = qattn.attention %q keys(%p, %ks, %s, %z) values(%q8, %ks) {k_stage1 = #qattn.stage1<block = 32>, k_stage2 = #qattn.stage2<bits = [4], group = 16, anchor = min>, v_stage1 = #qattn.stage1<block = 32>} : (tensor<1x2x4x16xf32>, tensor<1x32x16xi8>, tensor<1x2x1xf32>, tensor<1x2x2x16xi8>, tensor<1x2x2x16xi8>, tensor<1x2x32x16xi8>, tensor<1x2x1xf32>) -> tensor<1x2x4x16xf32>
  return %o : tensor<1x2x4x16xf32>
}

// The serving forms: per-sequence lengths over a contiguous cache of dynamic
// batch and capacity; a paged pool (64-token pages, page table) with the int8
// tail page; dynamic dequantization.
// CHECK-LABEL: func.func @varlen
// CHECK: qattn.attention %{{.*}} keys(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) values(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) lengths(%{{.*}}) {{{.*}}causal{{.*}}} : (tensor<?x8x4x64xf16>, tensor<?x?x64xi8>, tensor<?x2x?xf32>, tensor<?x2x?x64xi8>, tensor<?x2x?x64xi8>, tensor<?x?x64xi8>, tensor<?x2x?xf32>, tensor<?x2x?x64xi8>, tensor<?x2x?x64xi8>, tensor<?xi32>) -> tensor<?x8x4x64xf16>
func.func @varlen(%q: tensor<?x8x4x64xf16>, %kp: tensor<?x?x64xi8>, %ks: tensor<?x2x?xf32>, %ks2: tensor<?x2x?x64xi8>, %kz2: tensor<?x2x?x64xi8>, %lens: tensor<?xi32>) -> tensor<?x8x4x64xf16> {
  %o = qattn.attention %q keys(%kp, %ks, %ks2, %kz2) values(%kp, %ks, %ks2, %kz2) lengths(%lens)
      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4], group = 16>, v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [4], group = 16>, causal}
      : (tensor<?x8x4x64xf16>, tensor<?x?x64xi8>, tensor<?x2x?xf32>, tensor<?x2x?x64xi8>, tensor<?x2x?x64xi8>, tensor<?x?x64xi8>, tensor<?x2x?xf32>, tensor<?x2x?x64xi8>, tensor<?x2x?x64xi8>, tensor<?xi32>) -> tensor<?x8x4x64xf16>
  return %o : tensor<?x8x4x64xf16>
}

// CHECK-LABEL: func.func @paged
// CHECK: qattn.attention %{{.*}} keys({{.*}}) values({{.*}}) buffers({{.*}}) lengths(%{{.*}}) pages(%{{.*}}) {{{.*}}} : (tensor<?x8x1x64xf16>, tensor<?x64x64xi8>, tensor<?x2x1xf32>, tensor<?x2x4x64xi8>, tensor<?x2x4x64xi8>, tensor<?x64x32xi8>, tensor<?x2x1xf32>, tensor<?x2x4x64xi8>, tensor<?x2x4x64xi8>, tensor<?x2x64x64xi8>, tensor<?x2xf32>, tensor<?x2x64x64xi8>, tensor<?x2xf32>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x8x1x64xf16>
func.func @paged(%q: tensor<?x8x1x64xf16>, %kp: tensor<?x64x64xi8>, %ks: tensor<?x2x1xf32>, %ks2: tensor<?x2x4x64xi8>, %kz2: tensor<?x2x4x64xi8>,
                 %vp: tensor<?x64x32xi8>, %vs: tensor<?x2x1xf32>, %vs2: tensor<?x2x4x64xi8>, %vz2: tensor<?x2x4x64xi8>,
                 %kb: tensor<?x2x64x64xi8>, %kbs: tensor<?x2xf32>, %vb: tensor<?x2x64x64xi8>, %vbs: tensor<?x2xf32>,
                 %lens: tensor<?xi32>, %table: tensor<?x?xi32>) -> tensor<?x8x1x64xf16> {
  %o = qattn.attention %q keys(%kp, %ks, %ks2, %kz2) values(%vp, %vs, %vs2, %vz2) buffers(%kb, %kbs, %vb, %vbs) lengths(%lens) pages(%table)
      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4], group = 16>, v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [2], group = 16>}
      : (tensor<?x8x1x64xf16>, tensor<?x64x64xi8>, tensor<?x2x1xf32>, tensor<?x2x4x64xi8>, tensor<?x2x4x64xi8>, tensor<?x64x32xi8>, tensor<?x2x1xf32>, tensor<?x2x4x64xi8>, tensor<?x2x4x64xi8>, tensor<?x2x64x64xi8>, tensor<?x2xf32>, tensor<?x2x64x64xi8>, tensor<?x2xf32>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x8x1x64xf16>
  return %o : tensor<?x8x1x64xf16>
}

// CHECK-LABEL: func.func @dynamic_dequantize
// CHECK: qattn.progressive_dequantize %{{.*}} : tensor<?x?x64xi8>, tensor<?x2x?x64xi8>, tensor<?x2x?x64xi8> -> tensor<?x2x?x64xi8>
// CHECK: qattn.dequantize %{{.*}} : tensor<?x2x?x64xi8>, tensor<?x2x?xf32> -> tensor<?x2x?x64xf32>
func.func @dynamic_dequantize(%p: tensor<?x?x64xi8>, %s2: tensor<?x2x?x64xi8>, %z2: tensor<?x2x?x64xi8>, %s1: tensor<?x2x?xf32>) -> tensor<?x2x?x64xf32> {
  %q8 = qattn.progressive_dequantize %p, %s2, %z2 {scheme = #qattn.stage2<bits = [4], group = 16>} : tensor<?x?x64xi8>, tensor<?x2x?x64xi8>, tensor<?x2x?x64xi8> -> tensor<?x2x?x64xi8>
  %x = qattn.dequantize %q8, %s1 {scheme = #qattn.stage1<block = 64>} : tensor<?x2x?x64xi8>, tensor<?x2x?xf32> -> tensor<?x2x?x64xf32>
  return %x : tensor<?x2x?x64xf32>
}
