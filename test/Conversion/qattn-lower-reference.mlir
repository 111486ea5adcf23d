// RUN: qattn-opt %s -split-input-file --qattn-lower-reference | FileCheck %s

// Stage 1: a block max over tokens x channels, the scale m / 127, then
// round-half-away, clamp to +-127 and a zero-scale guard per element.
// CHECK-LABEL: func.func @quantize
// CHECK-DAG: %[[C127:.*]] = arith.constant 1.270000e+02 : f32
// CHECK-NOT: qattn.
// CHECK: bufferization.to_buffer %{{.*}} read_only
// CHECK: scf.for
// CHECK: math.absf
// CHECK: arith.maximumf
// CHECK: %[[S:.*]] = arith.divf %{{.*}}, %[[C127]] : f32
// CHECK: %[[R:.*]] = math.round
// CHECK: arith.maximumf %[[R]]
// CHECK: arith.minimumf
// CHECK: arith.fptosi %{{.*}} : f32 to i8
// CHECK: arith.cmpf oeq, %[[S]]
// CHECK: arith.select
// CHECK: bufferization.to_tensor %{{.*}} restrict writable
func.func @quantize(%x: tensor<1x2x37x16xf32>) -> (tensor<1x2x37x16xi8>, tensor<1x2x3xf32>) {
  %q, %s = qattn.quantize %x {scheme = #qattn.stage1<block = 16>} : tensor<1x2x37x16xf32> -> tensor<1x2x37x16xi8>, tensor<1x2x3xf32>
  return %q, %s : tensor<1x2x37x16xi8>, tensor<1x2x3xf32>
}

// -----

// f16 scales: the quantizer divides by the stored (rounded) scale.
// CHECK-LABEL: func.func @quantize_f16_scale
// CHECK: %[[S:.*]] = arith.truncf %{{.*}} : f32 to f16
// CHECK: %[[SR:.*]] = arith.extf %[[S]] : f16 to f32
// CHECK: memref.store %[[S]]
// CHECK: arith.divf %{{.*}}, %[[SR]] : f32
func.func @quantize_f16_scale(%x: tensor<1x1x8x16xf32>) -> tensor<1x1x1x16xf16> {
  %q, %s = qattn.quantize %x {scheme = #qattn.stage1<block = 8, scale = f16, granularity = channel>} : tensor<1x1x8x16xf32> -> tensor<1x1x8x16xi8>, tensor<1x1x1x16xf16>
  return %s : tensor<1x1x1x16xf16>
}

// -----

// Stage 2: integer scale ceil(range / 15), zero point, the int8-safe code
// clamp, and codes OR-ed bit by bit into zeroed rows.
// CHECK-LABEL: func.func @progressive_quantize
// CHECK-DAG: %[[C15:.*]] = arith.constant 15 : i32
// CHECK: scf.for
// CHECK: arith.minsi
// CHECK: arith.maxsi
// CHECK: %[[RANGE:.*]] = arith.subi
// CHECK: arith.ceildivsi %[[RANGE]], %[[C15]] : i32
// CHECK: arith.ceildivsi %{{.*}}, %{{.*}} : i32
// CHECK: arith.floordivsi
// CHECK: arith.ori
func.func @progressive_quantize(%q: tensor<1x2x37x16xi8>) -> tensor<1x37x16xi8> {
  %p, %s, %z = qattn.progressive_quantize %q {scheme = #qattn.stage2<bits = [4], group = 8>} : tensor<1x2x37x16xi8> -> tensor<1x37x16xi8>, tensor<1x2x5x16xi8>, tensor<1x2x5x16xi8>
  return %p : tensor<1x37x16xi8>
}

// -----

// Mixed per-head widths unroll the head loop: head 1 (2 bits) starts at byte 8.
// CHECK-LABEL: func.func @progressive_dequantize_mixed
// CHECK-DAG: %[[C8:.*]] = arith.constant 8 : index
// CHECK: arith.addi %{{.*}}, %[[C8]] : index
// CHECK: arith.shrui
// CHECK: arith.subi
// CHECK: arith.muli %{{.*}}, %{{.*}} : i32
// CHECK: arith.trunci %{{.*}} : i32 to i8
func.func @progressive_dequantize_mixed(%p: tensor<1x37x12xi8>, %s: tensor<1x2x5x16xi8>, %z: tensor<1x2x5x16xi8>) -> tensor<1x2x37x16xi8> {
  %q = qattn.progressive_dequantize %p, %s, %z {scheme = #qattn.stage2<bits = [4, 2], group = 8>} : tensor<1x37x12xi8>, tensor<1x2x5x16xi8>, tensor<1x2x5x16xi8> -> tensor<1x2x37x16xi8>
  return %q : tensor<1x2x37x16xi8>
}

// -----

// Attention dequantizes its operands with the dialect's own lowerings, then
// runs a two-pass softmax per row; causal rows stop at i + (Nk - Nq) + 1,
// clamped to [0, Nk]; a row without keys is 0.
// CHECK-LABEL: func.func @attention
// CHECK-DAG: %[[NK:.*]] = arith.constant 37 : index
// CHECK-DAG: %[[NQ1:.*]] = arith.constant 4 : index
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0 : index
// CHECK-NOT: qattn.
// CHECK: memref.alloca() : memref<16xf32>
// CHECK: %[[I:.*]] = arith.addi %{{.*}}, %[[NK]] : index
// CHECK: %[[LAST:.*]] = arith.subi %[[I]], %[[NQ1]] : index
// CHECK: %[[LO:.*]] = arith.maxsi %[[LAST]], %[[ZERO]] : index
// CHECK: %[[END:.*]] = arith.minsi %[[LO]], %[[NK]] : index
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: %[[SEES:.*]] = arith.cmpi ne, %[[END]], %[[ZERO]] : index
// CHECK: arith.divf
// CHECK: arith.select %[[SEES]]
func.func @attention(%q: tensor<1x4x5x16xf32>, %k: tensor<1x2x37x16xi8>, %ks: tensor<1x2x3xf32>) -> tensor<1x4x5x16xf32> {
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) {k_stage1 = #qattn.stage1<block = 16>, v_stage1 = #qattn.stage1<block = 16>, causal}
      : (tensor<1x4x5x16xf32>, tensor<1x2x37x16xi8>, tensor<1x2x3xf32>, tensor<1x2x37x16xi8>, tensor<1x2x3xf32>) -> tensor<1x4x5x16xf32>
  return %o : tensor<1x4x5x16xf32>
}

// -----

// SAS: floor / fraction split, a select-chain LUT and Horner, zero below -6.
// CHECK-LABEL: func.func @attention_sas
// CHECK-NOT: math.exp
// CHECK: math.floor
// CHECK: arith.cmpf olt, %{{.*}}, %{{.*}} : f32
func.func @attention_sas(%q: tensor<1x1x1x16xf32>, %k: tensor<1x1x8x16xi8>, %ks: tensor<1x1x1xf32>) -> tensor<1x1x1x16xf32> {
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) {k_stage1 = #qattn.stage1<block = 8>, v_stage1 = #qattn.stage1<block = 8>, softmax = #qattn.softmax<sas, threshold = -6.0, degree = 2>}
      : (tensor<1x1x1x16xf32>, tensor<1x1x8x16xi8>, tensor<1x1x1xf32>, tensor<1x1x8x16xi8>, tensor<1x1x1xf32>) -> tensor<1x1x1x16xf32>
  return %o : tensor<1x1x1x16xf32>
}

// -----

// The decode buffer: a run-time bounds check, then clamped fixed-scale int8.
// CHECK-LABEL: func.func @buffer_append
// CHECK: cf.assert %{{.*}}, "qattn.buffer_append: tokens past the buffer's end"
// CHECK: memref.copy
// CHECK: math.round
func.func @buffer_append(%x: tensor<1x2x1x16xf32>, %s: tensor<1x2xf32>, %b: tensor<1x2x8x16xi8>, %i: index) -> tensor<1x2x8x16xi8> {
  %r = qattn.buffer_append %x, %s into %b[%i] : tensor<1x2x1x16xf32>, tensor<1x2xf32> into tensor<1x2x8x16xi8>
  return %r : tensor<1x2x8x16xi8>
}

// -----

// A flush is stage 2 of the buffer inserted into the cache at the position.
// CHECK-LABEL: func.func @buffer_flush
// CHECK: cf.assert %{{.*}}, "qattn.buffer_flush: position not a multiple of the block"
// CHECK: cf.assert %{{.*}}, "qattn.buffer_flush: tokens past the cache's end"
// CHECK: %[[CODES:.*]] = memref.alloc() : memref<1x64x16xi8>
// CHECK: memref.copy %{{.*}}, %[[CODES]]
// CHECK: arith.addi %{{.*}}, %[[POS:.*]] : index
// CHECK: memref.store %{{.*}}, %[[CODES]]
func.func @buffer_flush(%b: tensor<1x2x16x16xi8>, %s: tensor<1x2xf32>, %p: tensor<1x64x16xi8>, %s1: tensor<1x2x4xf32>, %s2: tensor<1x2x8x16xi8>, %z2: tensor<1x2x8x16xi8>, %i: index) -> tensor<1x64x16xi8> {
  %r:4 = qattn.buffer_flush %b, %s into %p, %s1, %s2, %z2[%i] {stage1 = #qattn.stage1<block = 16>, stage2 = #qattn.stage2<bits = [4], group = 8>} : tensor<1x2x16x16xi8>, tensor<1x2xf32> into tensor<1x64x16xi8>, tensor<1x2x4xf32>, tensor<1x2x8x16xi8>, tensor<1x2x8x16xi8>
  return %r#0 : tensor<1x64x16xi8>
}

// -----

// Key smoothing with calibration: an f32 sum over tokens [4, 12) in order,
// one division by the count 8, then one subtraction per element.
// CHECK-LABEL: func.func @smooth_keys
// CHECK-DAG: %[[C4:.*]] = arith.constant 4 : index
// CHECK-DAG: %[[C12:.*]] = arith.constant 12 : index
// CHECK-DAG: %[[COUNT:.*]] = arith.constant 8.000000e+00 : f32
// CHECK-NOT: qattn.
// CHECK: %[[MEAN:.*]] = memref.alloc() : memref<1x2x16xf32>
// CHECK: scf.for %{{.*}} = %[[C4]] to %[[C12]]
// CHECK: arith.extf %{{.*}} : f16 to f32
// CHECK: arith.addf
// CHECK: %[[M:.*]] = arith.divf %{{.*}}, %[[COUNT]] : f32
// CHECK: memref.store %[[M]], %[[MEAN]]
// CHECK: arith.subf
// CHECK: bufferization.to_tensor %{{.*}} restrict writable : memref<1x2x40x16xf32>
func.func @smooth_keys(%k: tensor<1x2x40x16xf16>) -> (tensor<1x2x40x16xf32>, tensor<1x2x16xf32>) {
  %ks, %mu = qattn.smooth_keys %k {calibration = array<i64: 4, 12>} : tensor<1x2x40x16xf16> -> tensor<1x2x40x16xf32>, tensor<1x2x16xf32>
  return %ks, %mu : tensor<1x2x40x16xf32>, tensor<1x2x16xf32>
}

// -----

// Key smoothing with a given mean: no reduction, the mean passes through.
// CHECK-LABEL: func.func @smooth_keys_using
// CHECK-SAME: %[[K:.*]]: tensor<1x2x3x16xf32>, %[[MU:.*]]: tensor<1x2x16xf32>
// CHECK-NOT: arith.divf
// CHECK: arith.subf
// CHECK-NOT: arith.divf
// CHECK: return %{{.*}}, %[[MU]]
func.func @smooth_keys_using(%k: tensor<1x2x3x16xf32>, %m: tensor<1x2x16xf32>) -> (tensor<1x2x3x16xf32>, tensor<1x2x16xf32>) {
  %ks, %mu = qattn.smooth_keys %k using(%m) : tensor<1x2x3x16xf32>, tensor<1x2x16xf32> -> tensor<1x2x3x16xf32>, tensor<1x2x16xf32>
  return %ks, %mu : tensor<1x2x3x16xf32>, tensor<1x2x16xf32>
}

// -----

// fit = mse: after the min/max fit, 8 more candidates, each with an i64
// squared-error pass over the group and a strict-improvement select.
// CHECK-LABEL: func.func @progressive_quantize_mse
// CHECK: arith.ceildivsi
// CHECK-COUNT-9: arith.muli %{{.*}}, %{{.*}} : i64
// CHECK: arith.cmpi slt, %{{.*}}, %{{.*}} : i64
// CHECK: arith.select
// CHECK: arith.ori
func.func @progressive_quantize_mse(%q: tensor<1x2x37x16xi8>) -> tensor<1x37x16xi8> {
  %p, %s, %z = qattn.progressive_quantize %q {scheme = #qattn.stage2<bits = [4], group = 8>, fit = #qattn.fit<mse>} : tensor<1x2x37x16xi8> -> tensor<1x37x16xi8>, tensor<1x2x5x16xi8>, tensor<1x2x5x16xi8>
  return %p : tensor<1x37x16xi8>
}

// -----

// anchor = min: z2 is the group minimum, codes count steps up from it
// (round((q8 - z2) / s2), clamped to floor((127 - z2) / s2)), and decode is
// z2 + code * s2.
// CHECK-LABEL: func.func @stage2_min_anchor
// CHECK-DAG: %[[C127:.*]] = arith.constant 127 : i32
// CHECK: %[[MIN:.*]]:2 = scf.for
// CHECK: %[[CEIL:.*]] = arith.ceildivsi
// CHECK: %[[S:.*]] = arith.maxsi %[[CEIL]], %{{.*}} : i32
// CHECK: %[[TOP:.*]] = arith.subi %[[C127]], %[[MIN]]#0 : i32
// CHECK: arith.floordivsi %[[TOP]], %[[S]] : i32
// CHECK: arith.subi %{{.*}}, %[[MIN]]#0 : i32
// CHECK: %[[MUL:.*]] = arith.muli %{{.*}}, %{{.*}} : i32
// CHECK: arith.addi %{{.*}}, %[[MUL]] : i32
func.func @stage2_min_anchor(%q: tensor<1x2x32x16xi8>) -> tensor<1x2x32x16xi8> {
  %p, %s, %z = qattn.progressive_quantize %q {scheme = #qattn.stage2<bits = [4], group = 16, anchor = min>} : tensor<1x2x32x16xi8> -> tensor<1x32x16xi8>, tensor<1x2x2x16xi8>, tensor<1x2x2x16xi8>
  %d = qattn.progressive_dequantize %p, %s, %z {scheme = #qattn.stage2<bits = [4], group = 16, anchor = min>} : tensor<1x32x16xi8>, tensor<1x2x2x16xi8>, tensor<1x2x2x16xi8> -> tensor<1x2x32x16xi8>
  return %d : tensor<1x2x32x16xi8>
}

// -----

// buffer_flush with fit = mse compresses the buffer with the mse encoder.
// CHECK-LABEL: func.func @buffer_flush_mse
// CHECK-NOT: qattn.progressive_quantize
// CHECK: arith.cmpi slt, %{{.*}}, %{{.*}} : i64
func.func @buffer_flush_mse(%buf: tensor<1x2x16x16xi8>, %s: tensor<1x2xf32>, %p: tensor<1x64x16xi8>, %s1: tensor<1x2x4xf32>, %s2: tensor<1x2x8x16xi8>, %z2: tensor<1x2x8x16xi8>, %pos: index) -> tensor<1x64x16xi8> {
  %p1, %s11, %s21, %z21 = qattn.buffer_flush %buf, %s into %p, %s1, %s2, %z2[%pos] {stage1 = #qattn.stage1<block = 16>, stage2 = #qattn.stage2<bits = [4], group = 8>, fit = #qattn.fit<mse>} : tensor<1x2x16x16xi8>, tensor<1x2xf32> into tensor<1x64x16xi8>, tensor<1x2x4xf32>, tensor<1x2x8x16xi8>, tensor<1x2x8x16xi8>
  return %p1 : tensor<1x64x16xi8>
}

// -----

// Per-sequence lengths and a page table: the pool dequantizes once at its
// dynamic size; kv_lens and the pages a sequence reads are checked at run
// time; key j of sequence b is row j mod 16 of page table[b, j / 16] below
// the last whole buffer (L - L mod 16), then a buffer row.
// CHECK-LABEL: func.func @paged
// CHECK: %[[POOL:.*]] = memref.alloc(%{{.*}}) : memref<?x2x16x16xf32>
// CHECK: cf.assert %{{.*}}, "qattn.attention: negative kv_lens entry"
// CHECK: cf.assert %{{.*}}, "qattn.attention: kv_lens entry past the cache capacity"
// CHECK: cf.assert %{{.*}}, "qattn.attention: page table entry outside the pool"
// CHECK: %[[OUT:.*]] = memref.alloc(%{{.*}}) : memref<?x4x2x16xf32>
// CHECK: %[[LEN:.*]] = arith.index_cast %{{.*}} : i32 to index
// CHECK: %[[TAIL:.*]] = arith.remui %[[LEN]], %[[C16:.*]] : index
// CHECK: %[[CACHED:.*]] = arith.subi %[[LEN]], %[[TAIL]] : index
// CHECK: %[[SLOT:.*]] = arith.divui %[[J:.*]], %[[C16]] : index
// CHECK: %[[ENTRY:.*]] = memref.load %{{.*}}[%{{.*}}, %[[SLOT]]] : memref<?x?xi32>
// CHECK: %[[PAGE:.*]] = arith.index_castui %[[ENTRY]] : i32 to index
// CHECK: %[[ROW:.*]] = arith.remui %[[J]], %[[C16]] : index
// CHECK: memref.load %[[POOL]][%[[PAGE]], %{{.*}}, %[[ROW]], %{{.*}}] : memref<?x2x16x16xf32>
// CHECK: arith.subi %{{.*}}, %[[CACHED]] : index
// CHECK: memref.load %{{.*}} : memref<?x2x16x16xi8>
func.func @paged(%q: tensor<?x4x2x16xf32>, %k: tensor<?x2x16x16xi8>, %ks: tensor<?x2x2xf32>, %b: tensor<?x2x16x16xi8>, %bs: tensor<?x2xf32>, %l: tensor<?xi32>, %t: tensor<?x?xi32>) -> tensor<?x4x2x16xf32> {
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) buffers(%b, %bs, %b, %bs) lengths(%l) pages(%t) {k_stage1 = #qattn.stage1<block = 8>, v_stage1 = #qattn.stage1<block = 8>, causal}
      : (tensor<?x4x2x16xf32>, tensor<?x2x16x16xi8>, tensor<?x2x2xf32>, tensor<?x2x16x16xi8>, tensor<?x2x2xf32>, tensor<?x2x16x16xi8>, tensor<?x2xf32>, tensor<?x2x16x16xi8>, tensor<?x2xf32>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x4x2x16xf32>
  return %o : tensor<?x4x2x16xf32>
}
