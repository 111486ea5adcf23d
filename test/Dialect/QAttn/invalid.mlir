// RUN: qattn-opt %s -split-input-file -verify-diagnostics

// expected-error@+1 {{expected a positive stage-1 block size, got 0}}
func.func @f() attributes {s = #qattn.stage1<block = 0>} { return }

// -----

// expected-error@+1 {{expected at least one stage-2 bit width}}
func.func @f() attributes {s = #qattn.stage2<bits = [], group = 8>} { return }

// -----

// expected-error@+1 {{expected stage-2 bit widths in {2, 3, 4}, got 5}}
func.func @f() attributes {s = #qattn.stage2<bits = [4, 5], group = 8>} { return }

// -----

// expected-error@+1 {{expected a positive stage-2 group size, got 0}}
func.func @f() attributes {s = #qattn.stage2<bits = [4], group = 0>} { return }

// -----

// expected-error@+1 {{expected a SAS threshold in [-32, 0), got 1}}
func.func @f() attributes {s = #qattn.softmax<sas, threshold = 1.0>} { return }

// -----

// expected-error@+1 {{expected a SAS polynomial degree in [1, 6], got 9}}
func.func @f() attributes {s = #qattn.softmax<sas, degree = 9>} { return }

// -----

// expected-error@+1 {{expected softmax mode 'exact' or 'sas', got 'fast'}}
func.func @f() attributes {s = #qattn.softmax<fast>} { return }

// -----

// expected-error@+1 {{unknown softmax parameter 'temperature'}}
func.func @f() attributes {s = #qattn.softmax<sas, temperature = 2>} { return }

// -----

func.func @f(%x: tensor<2x16x16xf32>) {
  // expected-error@+1 {{expected data to have rank 4 [B, H, N, d], got 'tensor<2x16x16xi8>'}}
  %q, %s = qattn.quantize %x {scheme = #qattn.stage1<block = 8>} : tensor<2x16x16xf32> -> tensor<2x16x16xi8>, tensor<2x16x2xf32>
  return
}

// -----

func.func @f(%x: tensor<1x2x16x16xf32>) {
  // expected-error@+1 {{expected float tensor of shape [1, 2, 15, 16], got 'tensor<1x2x16x16xf32>'}}
  %q, %s = qattn.quantize %x {scheme = #qattn.stage1<block = 8>} : tensor<1x2x16x16xf32> -> tensor<1x2x15x16xi8>, tensor<1x2x2xf32>
  return
}

// -----

func.func @f(%x: tensor<1x2x17x16xf32>) {
  // expected-error@+1 {{expected scales of shape [1, 2, 3], got 'tensor<1x2x2xf32>'}}
  %q, %s = qattn.quantize %x {scheme = #qattn.stage1<block = 8>} : tensor<1x2x17x16xf32> -> tensor<1x2x17x16xi8>, tensor<1x2x2xf32>
  return
}

// -----

func.func @f(%x: tensor<1x2x16x16xf32>) {
  // expected-error@+1 {{expected scales with element type 'f16', got 'tensor<1x2x2x16xf32>'}}
  %q, %s = qattn.quantize %x {scheme = #qattn.stage1<block = 8, scale = f16, granularity = channel>} : tensor<1x2x16x16xf32> -> tensor<1x2x16x16xi8>, tensor<1x2x2x16xf32>
  return
}

// -----

func.func @f(%q: tensor<1x2x16x16xi8>, %s: tensor<1x2x1xf32>) {
  // expected-error@+1 {{expected scales of shape [1, 2, 2], got 'tensor<1x2x1xf32>'}}
  %x = qattn.dequantize %q, %s {scheme = #qattn.stage1<block = 8>} : tensor<1x2x16x16xi8>, tensor<1x2x1xf32> -> tensor<1x2x16x16xf32>
  return
}

// -----

func.func @f(%q: tensor<1x4x16x16xi8>) {
  // expected-error@+1 {{expected one stage-2 bit width or one per head (4), got 2}}
  %p, %s, %z = qattn.progressive_quantize %q {scheme = #qattn.stage2<bits = [4, 2], group = 8>} : tensor<1x4x16x16xi8> -> tensor<1x16x24xi8>, tensor<1x4x2x16xi8>, tensor<1x4x2x16xi8>
  return
}

// -----

func.func @f(%q: tensor<1x2x16x12xi8>) {
  // expected-error@+1 {{expected the head dimension 12 to be a multiple of 8 for packed codes}}
  %p, %s, %z = qattn.progressive_quantize %q {scheme = #qattn.stage2<bits = [4], group = 8>} : tensor<1x2x16x12xi8> -> tensor<1x16x12xi8>, tensor<1x2x2x12xi8>, tensor<1x2x2x12xi8>
  return
}

// -----

func.func @f(%q: tensor<1x2x16x16xi8>) {
  // expected-error@+1 {{expected codes of shape [1, 16, 12], got 'tensor<1x16x16xi8>'}}
  %p, %s, %z = qattn.progressive_quantize %q {scheme = #qattn.stage2<bits = [4, 2], group = 8>} : tensor<1x2x16x16xi8> -> tensor<1x16x16xi8>, tensor<1x2x2x16xi8>, tensor<1x2x2x16xi8>
  return
}

// -----

func.func @f(%q: tensor<1x2x17x16xi8>) {
  // expected-error@+1 {{expected group scales of shape [1, 2, 3, 16], got 'tensor<1x2x2x16xi8>'}}
  %p, %s, %z = qattn.progressive_quantize %q {scheme = #qattn.stage2<bits = [4], group = 8>} : tensor<1x2x17x16xi8> -> tensor<1x17x16xi8>, tensor<1x2x2x16xi8>, tensor<1x2x3x16xi8>
  return
}

// -----

func.func @f(%p: tensor<1x16x16xi8>, %s: tensor<1x2x2x16xi8>, %z: tensor<1x2x1x16xi8>) {
  // expected-error@+1 {{expected zero points of shape [1, 2, 2, 16], got 'tensor<1x2x1x16xi8>'}}
  %q = qattn.progressive_dequantize %p, %s, %z {scheme = #qattn.stage2<bits = [4], group = 8>} : tensor<1x16x16xi8>, tensor<1x2x2x16xi8>, tensor<1x2x1x16xi8> -> tensor<1x2x16x16xi8>
  return
}

// -----

func.func @f(%x: tensor<1x2x1x32xf32>, %s: tensor<1x2xf32>, %b: tensor<1x2x8x16xi8>, %i: index) {
  // expected-error@+1 {{expected input 'tensor<1x2x1x32xf32>' to match the buffer 'tensor<1x2x8x16xi8>' in batch, heads and head dimension}}
  %r = qattn.buffer_append %x, %s into %b[%i] : tensor<1x2x1x32xf32>, tensor<1x2xf32> into tensor<1x2x8x16xi8>
  return
}

// -----

func.func @f(%x: tensor<1x2x9x16xf32>, %s: tensor<1x2xf32>, %b: tensor<1x2x8x16xi8>, %i: index) {
  // expected-error@+1 {{expected at most 8 new tokens (the buffer size), got 9}}
  %r = qattn.buffer_append %x, %s into %b[%i] : tensor<1x2x9x16xf32>, tensor<1x2xf32> into tensor<1x2x8x16xi8>
  return
}

// -----

func.func @f(%x: tensor<1x2x1x16xf32>, %s: tensor<2x1xf32>, %b: tensor<1x2x8x16xi8>, %i: index) {
  // expected-error@+1 {{expected scale of shape [1, 2], got 'tensor<2x1xf32>'}}
  %r = qattn.buffer_append %x, %s into %b[%i] : tensor<1x2x1x16xf32>, tensor<2x1xf32> into tensor<1x2x8x16xi8>
  return
}

// -----

func.func @f(%b: tensor<1x2x16x16xi8>, %s: tensor<1x2xf32>, %p: tensor<1x64x16xi8>, %s1: tensor<1x2x4xf32>, %s2: tensor<1x2x8x16xi8>, %z2: tensor<1x2x8x16xi8>, %i: index) {
  // expected-error@+1 {{expected stage-2 group size 12 to divide the stage-1 block size 16}}
  %r:4 = qattn.buffer_flush %b, %s into %p, %s1, %s2, %z2[%i] {stage1 = #qattn.stage1<block = 16>, stage2 = #qattn.stage2<bits = [4], group = 12>} : tensor<1x2x16x16xi8>, tensor<1x2xf32> into tensor<1x64x16xi8>, tensor<1x2x4xf32>, tensor<1x2x8x16xi8>, tensor<1x2x8x16xi8>
  return
}

// -----

func.func @f(%b: tensor<1x2x8x16xi8>, %s: tensor<1x2xf32>, %p: tensor<1x64x16xi8>, %s1: tensor<1x2x4xf32>, %s2: tensor<1x2x8x16xi8>, %z2: tensor<1x2x8x16xi8>, %i: index) {
  // expected-error@+1 {{expected the buffer size 8 to be a multiple of the stage-1 block size 16}}
  %r:4 = qattn.buffer_flush %b, %s into %p, %s1, %s2, %z2[%i] {stage1 = #qattn.stage1<block = 16>, stage2 = #qattn.stage2<bits = [4], group = 8>} : tensor<1x2x8x16xi8>, tensor<1x2xf32> into tensor<1x64x16xi8>, tensor<1x2x4xf32>, tensor<1x2x8x16xi8>, tensor<1x2x8x16xi8>
  return
}

// -----

func.func @f(%b: tensor<1x2x16x16xi8>, %s: tensor<1x2xf32>, %p: tensor<1x2x64x8xi8>, %s1: tensor<1x2x4xf32>, %s2: tensor<1x2x8x16xi8>, %z2: tensor<1x2x8x16xi8>, %i: index) {
  // expected-error@+1 {{expected codes of rank 3 [B, N, R], got 'tensor<1x2x64x8xi8>'}}
  %r:4 = qattn.buffer_flush %b, %s into %p, %s1, %s2, %z2[%i] {stage1 = #qattn.stage1<block = 16>, stage2 = #qattn.stage2<bits = [4], group = 8>} : tensor<1x2x16x16xi8>, tensor<1x2xf32> into tensor<1x2x64x8xi8>, tensor<1x2x4xf32>, tensor<1x2x8x16xi8>, tensor<1x2x8x16xi8>
  return
}

// -----

func.func @f(%b: tensor<1x2x16x16xi8>, %s: tensor<1x2xf32>, %p: tensor<1x8x16xi8>, %s1: tensor<1x2x1xf32>, %s2: tensor<1x2x1x16xi8>, %z2: tensor<1x2x1x16xi8>, %i: index) {
  // expected-error@+1 {{expected a cache of at least 16 tokens (the buffer size), got 8}}
  %r:4 = qattn.buffer_flush %b, %s into %p, %s1, %s2, %z2[%i] {stage1 = #qattn.stage1<block = 16>, stage2 = #qattn.stage2<bits = [4], group = 8>} : tensor<1x2x16x16xi8>, tensor<1x2xf32> into tensor<1x8x16xi8>, tensor<1x2x1xf32>, tensor<1x2x1x16xi8>, tensor<1x2x1x16xi8>
  return
}

// -----

func.func @f(%b: tensor<1x2x16x16xi8>, %s: tensor<1x2xf32>, %p: tensor<1x64x16xi8>, %s1: tensor<1x2x8xf32>, %s2: tensor<1x2x8x16xi8>, %z2: tensor<1x2x8x16xi8>, %i: index) {
  // expected-error@+1 {{expected block scales of shape [1, 2, 4], got 'tensor<1x2x8xf32>'}}
  %r:4 = qattn.buffer_flush %b, %s into %p, %s1, %s2, %z2[%i] {stage1 = #qattn.stage1<block = 16>, stage2 = #qattn.stage2<bits = [4], group = 8>} : tensor<1x2x16x16xi8>, tensor<1x2xf32> into tensor<1x64x16xi8>, tensor<1x2x8xf32>, tensor<1x2x8x16xi8>, tensor<1x2x8x16xi8>
  return
}

// -----

func.func @f(%q: tensor<1x0x4x16xf32>, %k: tensor<1x2x8x16xi8>, %ks: tensor<1x2x1xf32>) {
  // expected-error@+1 {{expected static, positive query heads, queries and head dimension, got 'tensor<1x0x4x16xf32>'}}
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) {k_stage1 = #qattn.stage1<block = 8>, v_stage1 = #qattn.stage1<block = 8>} : (tensor<1x0x4x16xf32>, tensor<1x2x8x16xi8>, tensor<1x2x1xf32>, tensor<1x2x8x16xi8>, tensor<1x2x1xf32>) -> tensor<1x0x4x16xf32>
  return
}

// -----

func.func @f(%q: tensor<1x2x5x16xf32>, %k: tensor<1x2x8x16xi8>, %ks: tensor<1x2x1xf32>) {
  // expected-error@+1 {{expected query of shape [1, 2, 4, 16], got 'tensor<1x2x5x16xf32>'}}
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) {k_stage1 = #qattn.stage1<block = 8>, v_stage1 = #qattn.stage1<block = 8>} : (tensor<1x2x5x16xf32>, tensor<1x2x8x16xi8>, tensor<1x2x1xf32>, tensor<1x2x8x16xi8>, tensor<1x2x1xf32>) -> tensor<1x2x4x16xf32>
  return
}

// -----

func.func @f(%q: tensor<1x2x4x16xi8>, %k: tensor<1x2x8x16xi8>, %ks: tensor<1x2x1xf32>) {
  // expected-error@+1 {{expected query scales and a q_stage1 scheme exactly when the query is int8, got 'tensor<1x2x4x16xi8>'}}
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) {k_stage1 = #qattn.stage1<block = 8>, v_stage1 = #qattn.stage1<block = 8>} : (tensor<1x2x4x16xi8>, tensor<1x2x8x16xi8>, tensor<1x2x1xf32>, tensor<1x2x8x16xi8>, tensor<1x2x1xf32>) -> tensor<1x2x4x16xf32>
  return
}

// -----

func.func @f(%q: tensor<1x2x4x16xi8>, %qs: tensor<1x2x2xf32>, %k: tensor<1x2x8x16xi8>, %ks: tensor<1x2x1xf32>) {
  // expected-error@+1 {{expected query scales of shape [1, 2, 1], got 'tensor<1x2x2xf32>'}}
  %o = qattn.attention %q [%qs] keys(%k, %ks) values(%k, %ks) {q_stage1 = #qattn.stage1<block = 8>, k_stage1 = #qattn.stage1<block = 8>, v_stage1 = #qattn.stage1<block = 8>} : (tensor<1x2x4x16xi8>, tensor<1x2x2xf32>, tensor<1x2x8x16xi8>, tensor<1x2x1xf32>, tensor<1x2x8x16xi8>, tensor<1x2x1xf32>) -> tensor<1x2x4x16xf32>
  return
}

// -----

func.func @f(%q: tensor<1x2x4x16xf32>, %k: tensor<1x2x8x16xi8>, %ks: tensor<2xf32>, %vs: tensor<1x2x1xf32>) {
  // expected-error@+1 {{expected key scales of rank 3 or 4, got 'tensor<2xf32>'}}
  %o = qattn.attention %q keys(%k, %ks) values(%k, %vs) {k_stage1 = #qattn.stage1<block = 8>, v_stage1 = #qattn.stage1<block = 8>} : (tensor<1x2x4x16xf32>, tensor<1x2x8x16xi8>, tensor<2xf32>, tensor<1x2x8x16xi8>, tensor<1x2x1xf32>) -> tensor<1x2x4x16xf32>
  return
}

// -----

func.func @f(%q: tensor<1x2x4x16xf32>, %k: tensor<1x2x8x16xi8>, %ks: tensor<1x2x1xf32>) {
  // expected-error@+1 {{expected key group scales and zero points exactly when its stage-2 scheme is given}}
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) {k_stage1 = #qattn.stage1<block = 8>, k_stage2 = #qattn.stage2<bits = [4], group = 8>, v_stage1 = #qattn.stage1<block = 8>} : (tensor<1x2x4x16xf32>, tensor<1x2x8x16xi8>, tensor<1x2x1xf32>, tensor<1x2x8x16xi8>, tensor<1x2x1xf32>) -> tensor<1x2x4x16xf32>
  return
}

// -----

func.func @f(%q: tensor<1x2x4x16xf32>, %k: tensor<1x2x8x16xi8>, %ks: tensor<1x2x1xf32>, %g: tensor<1x2x1x16xi8>) {
  // expected-error@+1 {{expected key codes of rank 3 [B, N, R], got 'tensor<1x2x8x16xi8>'}}
  %o = qattn.attention %q keys(%k, %ks, %g, %g) values(%k, %ks) {k_stage1 = #qattn.stage1<block = 8>, k_stage2 = #qattn.stage2<bits = [4], group = 8>, v_stage1 = #qattn.stage1<block = 8>} : (tensor<1x2x4x16xf32>, tensor<1x2x8x16xi8>, tensor<1x2x1xf32>, tensor<1x2x1x16xi8>, tensor<1x2x1x16xi8>, tensor<1x2x8x16xi8>, tensor<1x2x1xf32>) -> tensor<1x2x4x16xf32>
  return
}

// -----

func.func @f(%q: tensor<1x2x4x16xf32>, %k: tensor<1x8x16xi8>, %ks: tensor<1x2x1xf32>) {
  // expected-error@+1 {{expected key data of rank 4 [B, H, N, d], got 'tensor<1x8x16xi8>'}}
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) {k_stage1 = #qattn.stage1<block = 8>, v_stage1 = #qattn.stage1<block = 8>} : (tensor<1x2x4x16xf32>, tensor<1x8x16xi8>, tensor<1x2x1xf32>, tensor<1x8x16xi8>, tensor<1x2x1xf32>) -> tensor<1x2x4x16xf32>
  return
}

// -----

func.func @f(%q: tensor<1x2x4x16xf32>, %k: tensor<1x2x8x32xi8>, %ks: tensor<1x2x1xf32>) {
  // expected-error@+1 {{expected key data of shape [1, 2, 8, 16], got 'tensor<1x2x8x32xi8>'}}
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) {k_stage1 = #qattn.stage1<block = 8>, v_stage1 = #qattn.stage1<block = 8>} : (tensor<1x2x4x16xf32>, tensor<1x2x8x32xi8>, tensor<1x2x1xf32>, tensor<1x2x8x32xi8>, tensor<1x2x1xf32>) -> tensor<1x2x4x16xf32>
  return
}

// -----

func.func @f(%q: tensor<1x2x4x16xf32>, %k: tensor<1x2x8x16xi8>, %ks: tensor<1x2x2xf32>) {
  // expected-error@+1 {{expected key scales of shape [1, 2, 1], got 'tensor<1x2x2xf32>'}}
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) {k_stage1 = #qattn.stage1<block = 8>, v_stage1 = #qattn.stage1<block = 8>} : (tensor<1x2x4x16xf32>, tensor<1x2x8x16xi8>, tensor<1x2x2xf32>, tensor<1x2x8x16xi8>, tensor<1x2x2xf32>) -> tensor<1x2x4x16xf32>
  return
}

// -----

func.func @f(%q: tensor<1x2x4x16xf32>, %k: tensor<1x2x8x16xi8>, %ks: tensor<1x2x1xf32>, %v: tensor<1x2x16x16xi8>, %vs: tensor<1x2x2xf32>) {
  // expected-error@+1 {{expected keys and values with equal heads and tokens, got [1, 2, 8, 16] and [1, 2, 16, 16]}}
  %o = qattn.attention %q keys(%k, %ks) values(%v, %vs) {k_stage1 = #qattn.stage1<block = 8>, v_stage1 = #qattn.stage1<block = 8>} : (tensor<1x2x4x16xf32>, tensor<1x2x8x16xi8>, tensor<1x2x1xf32>, tensor<1x2x16x16xi8>, tensor<1x2x2xf32>) -> tensor<1x2x4x16xf32>
  return
}

// -----

func.func @f(%q: tensor<1x6x4x16xf32>, %k: tensor<1x4x8x16xi8>, %ks: tensor<1x4x1xf32>) {
  // expected-error@+1 {{expected the query heads 6 to be a multiple of the KV heads 4}}
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) {k_stage1 = #qattn.stage1<block = 8>, v_stage1 = #qattn.stage1<block = 8>} : (tensor<1x6x4x16xf32>, tensor<1x4x8x16xi8>, tensor<1x4x1xf32>, tensor<1x4x8x16xi8>, tensor<1x4x1xf32>) -> tensor<1x6x4x16xf32>
  return
}

// -----

func.func @f(%q: tensor<1x2x4x16xf32>, %k: tensor<1x2x8x16xi8>, %ks: tensor<1x2x1xf32>) {
  // expected-error@+1 {{expected key and value buffers with their scales, or no buffers}}
  %o = "qattn.attention"(%q, %k, %ks, %k, %ks, %k) <{k_stage1 = #qattn.stage1<block = 8>, v_stage1 = #qattn.stage1<block = 8>, operandSegmentSizes = array<i32: 1, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 0, 0, 0, 0, 0>}> : (tensor<1x2x4x16xf32>, tensor<1x2x8x16xi8>, tensor<1x2x1xf32>, tensor<1x2x8x16xi8>, tensor<1x2x1xf32>, tensor<1x2x8x16xi8>) -> tensor<1x2x4x16xf32>
  return
}

// -----

func.func @f(%q: tensor<1x2x4x16xf32>, %k: tensor<1x2x8x16xi8>, %ks: tensor<1x2x1xf32>, %b: tensor<1x1x4x16xi8>, %bs: tensor<1x2xf32>) {
  // expected-error@+1 {{expected key buffer of shape [1, 2, 4, 16], got 'tensor<1x1x4x16xi8>'}}
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) buffers(%b, %bs, %b, %bs) {k_stage1 = #qattn.stage1<block = 8>, v_stage1 = #qattn.stage1<block = 8>} : (tensor<1x2x4x16xf32>, tensor<1x2x8x16xi8>, tensor<1x2x1xf32>, tensor<1x2x8x16xi8>, tensor<1x2x1xf32>, tensor<1x1x4x16xi8>, tensor<1x2xf32>, tensor<1x1x4x16xi8>, tensor<1x2xf32>) -> tensor<1x2x4x16xf32>
  return
}

// -----

func.func @f(%q: tensor<1x2x4x16xf32>, %k: tensor<1x2x8x16xi8>, %ks: tensor<1x2x1xf32>, %b: tensor<1x2x4x16xi8>, %bs: tensor<1x1xf32>) {
  // expected-error@+1 {{expected key buffer scale of shape [1, 2], got 'tensor<1x1xf32>'}}
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) buffers(%b, %bs, %b, %bs) {k_stage1 = #qattn.stage1<block = 8>, v_stage1 = #qattn.stage1<block = 8>} : (tensor<1x2x4x16xf32>, tensor<1x2x8x16xi8>, tensor<1x2x1xf32>, tensor<1x2x8x16xi8>, tensor<1x2x1xf32>, tensor<1x2x4x16xi8>, tensor<1x1xf32>, tensor<1x2x4x16xi8>, tensor<1x1xf32>) -> tensor<1x2x4x16xf32>
  return
}

// -----

func.func @f(%q: tensor<1x2x9x16xf32>, %k: tensor<1x2x8x16xi8>, %ks: tensor<1x2x1xf32>) {
  // expected-error@+1 {{expected at most as many queries (9) as keys (8) for causal attention}}
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) {k_stage1 = #qattn.stage1<block = 8>, v_stage1 = #qattn.stage1<block = 8>, causal} : (tensor<1x2x9x16xf32>, tensor<1x2x8x16xi8>, tensor<1x2x1xf32>, tensor<1x2x8x16xi8>, tensor<1x2x1xf32>) -> tensor<1x2x9x16xf32>
  return
}

// -----

func.func @f(%q: tensor<1x2x4x16xf32>, %k: tensor<1x2x8x16xi8>, %ks: tensor<1x2x1xf32>) {
  // expected-error@+1 {{expected a finite non-zero softmax scale, got 0}}
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) {k_stage1 = #qattn.stage1<block = 8>, v_stage1 = #qattn.stage1<block = 8>, scale = 0.0 : f32} : (tensor<1x2x4x16xf32>, tensor<1x2x8x16xi8>, tensor<1x2x1xf32>, tensor<1x2x8x16xi8>, tensor<1x2x1xf32>) -> tensor<1x2x4x16xf32>
  return
}

// -----

func.func @f(%q: tensor<1x2x4x16xf32>, %kp: tensor<1x16x16xi8>, %ks: tensor<1x2x1xf32>, %g: tensor<1x2x2x16xi8>) {
  // expected-error@+1 {{expected stage-2 group size 16 to divide the stage-1 block size 24}}
  %o = qattn.attention %q keys(%kp, %ks, %g, %g) values(%kp, %ks, %g, %g) {k_stage1 = #qattn.stage1<block = 24>, k_stage2 = #qattn.stage2<bits = [4], group = 16>, v_stage1 = #qattn.stage1<block = 24>, v_stage2 = #qattn.stage2<bits = [4], group = 16>} : (tensor<1x2x4x16xf32>, tensor<1x16x16xi8>, tensor<1x2x1xf32>, tensor<1x2x2x16xi8>, tensor<1x2x2x16xi8>, tensor<1x16x16xi8>, tensor<1x2x1xf32>, tensor<1x2x2x16xi8>, tensor<1x2x2x16xi8>) -> tensor<1x2x4x16xf32>
  return
}

// -----

// expected-error@+1 {{expected 1 to 4 stages for the mma kernel, got 5}}
func.func @f() attributes {s = #qattn.gpu_tiling<warps = 8, splits = 1, kernel = mma, stages = 5>} { return }

// -----

// expected-error@+1 {{expected whole warpgroups (4, 8, 12 or 16 warps) for the wgmma kernel, got 6}}
func.func @f() attributes {s = #qattn.gpu_tiling<warps = 6, splits = 1, kernel = wgmma, stages = 2>} { return }

// -----

// expected-error@+1 {{expected whole warpgroups (4, 8, 12 or 16 warps) for the wgmma kernel, got 20}}
func.func @f() attributes {s = #qattn.gpu_tiling<warps = 20, splits = 1, kernel = wgmma, stages = 2>} { return }

// -----

// expected-error@+1 {{expected kernel = wgmma for pv = e4m3, got kernel = mma}}
func.func @f() attributes {s = #qattn.gpu_tiling<warps = 4, splits = 1, kernel = mma, stages = 2, pv = e4m3>} { return }

// -----

// The producer's register split is sized for two warpgroups that compute.
// expected-error@+1 {{expected kernel = wgmma, 8 warps and 3 or 4 stages for producer = warpgroup, got kernel = wgmma, 4 warps and 4 stages}}
func.func @f() attributes {s = #qattn.gpu_tiling<warps = 4, splits = 1, kernel = wgmma, stages = 4, producer = warpgroup>} { return }

// -----

// expected-error@+1 {{expected kernel = wgmma, 8 warps and 3 or 4 stages for producer = warpgroup, got kernel = mma, 8 warps and 2 stages}}
func.func @f() attributes {s = #qattn.gpu_tiling<warps = 8, splits = 1, kernel = mma, stages = 2, producer = warpgroup>} { return }

// -----

// expected-error@+2 {{expected ::mlir::qattn::TileProducer to be one of: none, warpgroup}}
// expected-error@+1 {{failed to parse QAttn_GpuTilingAttr parameter 'producer'}}
func.func @f() attributes {s = #qattn.gpu_tiling<warps = 8, splits = 1, kernel = wgmma, stages = 4, producer = warp>} { return }

// -----

// expected-error@+1 {{expected 1 to 32 warps per CTA, got 0}}
func.func @f() attributes {s = #qattn.gpu_tiling<warps = 0, splits = 1>} { return }

// -----

// expected-error@+1 {{expected at least one key split, got 0}}
func.func @f() attributes {s = #qattn.gpu_tiling<warps = 4, splits = 0>} { return }

// -----

// expected-error@+1 {{expected 1 to 32 keys per step, got 64}}
func.func @f() attributes {s = #qattn.gpu_tiling<warps = 4, splits = 1, keys_per_step = 64>} { return }

// -----

func.func @f(%k: tensor<1x2x40x16xf32>) {
  // expected-error@+1 {{expected either a calibration token range or a given mean (using), not neither}}
  %ks, %mu = qattn.smooth_keys %k : tensor<1x2x40x16xf32> -> tensor<1x2x40x16xf32>, tensor<1x2x16xf32>
  return
}

// -----

func.func @f(%k: tensor<1x2x40x16xf32>, %m: tensor<1x2x16xf32>) {
  // expected-error@+1 {{expected either a calibration token range or a given mean (using), not both}}
  %ks, %mu = qattn.smooth_keys %k using(%m) {calibration = array<i64: 0, 8>} : tensor<1x2x40x16xf32>, tensor<1x2x16xf32> -> tensor<1x2x40x16xf32>, tensor<1x2x16xf32>
  return
}

// -----

func.func @f(%k: tensor<1x2x40x16xf32>) {
  // expected-error@+1 {{expected a non-empty calibration range [8, 41) inside the 40 input tokens}}
  %ks, %mu = qattn.smooth_keys %k {calibration = array<i64: 8, 41>} : tensor<1x2x40x16xf32> -> tensor<1x2x40x16xf32>, tensor<1x2x16xf32>
  return
}

// -----

func.func @f(%k: tensor<1x2x40x16xf32>) {
  // expected-error@+1 {{expected a non-empty calibration range [8, 8) inside the 40 input tokens}}
  %ks, %mu = qattn.smooth_keys %k {calibration = array<i64: 8, 8>} : tensor<1x2x40x16xf32> -> tensor<1x2x40x16xf32>, tensor<1x2x16xf32>
  return
}

// -----

func.func @f(%k: tensor<1x2x40x16xf32>) {
  // expected-error@+1 {{expected a calibration range [start, end) of 2 tokens, got 3 values}}
  %ks, %mu = qattn.smooth_keys %k {calibration = array<i64: 0, 8, 16>} : tensor<1x2x40x16xf32> -> tensor<1x2x40x16xf32>, tensor<1x2x16xf32>
  return
}

// -----

func.func @f(%k: tensor<1x2x40x16xf32>) {
  // expected-error@+1 {{expected mean of shape [1, 2, 16], got 'tensor<1x2x8xf32>'}}
  %ks, %mu = qattn.smooth_keys %k {calibration = array<i64: 0, 8>} : tensor<1x2x40x16xf32> -> tensor<1x2x40x16xf32>, tensor<1x2x8xf32>
  return
}

// -----

func.func @f(%k: tensor<1x2x40x16xf32>, %m: tensor<2x2x16xf32>) {
  // expected-error@+1 {{expected given mean of shape [1, 2, 16], got 'tensor<2x2x16xf32>'}}
  %ks, %mu = qattn.smooth_keys %k using(%m) : tensor<1x2x40x16xf32>, tensor<2x2x16xf32> -> tensor<1x2x40x16xf32>, tensor<1x2x16xf32>
  return
}

// -----

func.func @f(%k: tensor<1x2x40x16xf32>) {
  // expected-error@+1 {{expected smoothed keys of shape [1, 2, 40, 16], got 'tensor<1x2x41x16xf32>'}}
  %ks, %mu = qattn.smooth_keys %k {calibration = array<i64: 0, 8>} : tensor<1x2x40x16xf32> -> tensor<1x2x41x16xf32>, tensor<1x2x16xf32>
  return
}

// -----

func.func @f(%k: tensor<2x40x16xf32>) {
  // expected-error@+1 {{expected input to have rank 4 [B, H, N, d], got 'tensor<2x40x16xf32>'}}
  %ks, %mu = qattn.smooth_keys %k {calibration = array<i64: 0, 8>} : tensor<2x40x16xf32> -> tensor<2x40x16xf32>, tensor<2x16xf32>
  return
}

// -----

func.func @f(%k: tensor<1x2x40x16xf32>) {
  // expected-error@+1 {{result #0 must be ranked tensor of 32-bit float values}}
  %ks, %mu = qattn.smooth_keys %k {calibration = array<i64: 0, 8>} : tensor<1x2x40x16xf32> -> tensor<1x2x40x16xf16>, tensor<1x2x16xf32>
  return
}

// -----

func.func @f(%q8: tensor<1x2x16x16xi8>) {
  // expected-error@+2 {{expected ::mlir::qattn::Stage2Fit to be one of: minmax, mse}}
  // expected-error@+1 {{failed to parse QAttn_Stage2FitAttr parameter 'value'}}
  %p, %s, %z = qattn.progressive_quantize %q8 {scheme = #qattn.stage2<bits = [4], group = 8>, fit = #qattn.fit<best>} : tensor<1x2x16x16xi8> -> tensor<1x16x16xi8>, tensor<1x2x2x16xi8>, tensor<1x2x2x16xi8>
  return
}

// -----

// expected-error@+2 {{expected ::mlir::qattn::Stage2Anchor to be one of: zero, min}}
// expected-error@+1 {{failed to parse QAttn_Stage2Attr parameter 'anchor'}}
func.func @f() attributes {s = #qattn.stage2<bits = [4], group = 8, anchor = max>} { return }

// -----

func.func @f(%q: tensor<2x2x1x16xf32>, %k: tensor<?x2x8x16xi8>, %ks: tensor<?x2x1xf32>, %t: tensor<2x4xi32>) {
  // expected-error@+1 {{expected kv_lens with a page table}}
  %o = "qattn.attention"(%q, %k, %ks, %k, %ks, %t) <{k_stage1 = #qattn.stage1<block = 8>, v_stage1 = #qattn.stage1<block = 8>, operandSegmentSizes = array<i32: 1, 0, 1, 1, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>}> : (tensor<2x2x1x16xf32>, tensor<?x2x8x16xi8>, tensor<?x2x1xf32>, tensor<?x2x8x16xi8>, tensor<?x2x1xf32>, tensor<2x4xi32>) -> tensor<2x2x1x16xf32>
  return
}

// -----

func.func @f(%q: tensor<?x2x1x16xf32>, %k: tensor<?x2x12x16xi8>, %ks: tensor<?x2x2xf32>, %l: tensor<?xi32>, %t: tensor<?x?xi32>) {
  // expected-error@+1 {{expected the page size 12 to be a multiple of the stage-1 block size 8}}
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) lengths(%l) pages(%t) {k_stage1 = #qattn.stage1<block = 8>, v_stage1 = #qattn.stage1<block = 8>} : (tensor<?x2x1x16xf32>, tensor<?x2x12x16xi8>, tensor<?x2x2xf32>, tensor<?x2x12x16xi8>, tensor<?x2x2xf32>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x2x1x16xf32>
  return
}

// -----

func.func @f(%q: tensor<?x2x1x16xf32>, %k: tensor<?x2x?x16xi8>, %ks: tensor<?x2x?xf32>, %l: tensor<?xi32>, %t: tensor<?x?xi32>) {
  // expected-error@+1 {{expected a static, positive page size (the token dimension of the K/V pages), got [?, 2, ?, 16]}}
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) lengths(%l) pages(%t) {k_stage1 = #qattn.stage1<block = 8>, v_stage1 = #qattn.stage1<block = 8>} : (tensor<?x2x1x16xf32>, tensor<?x2x?x16xi8>, tensor<?x2x?xf32>, tensor<?x2x?x16xi8>, tensor<?x2x?xf32>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x2x1x16xf32>
  return
}

// -----

func.func @f(%q: tensor<?x2x1x16xf32>, %k: tensor<?x2x16x16xi8>, %ks: tensor<?x2x2xf32>, %b: tensor<?x2x8x16xi8>, %bs: tensor<?x2xf32>, %l: tensor<?xi32>, %t: tensor<?x?xi32>) {
  // expected-error@+1 {{expected the buffer (the tail page) to hold one page of 16 tokens, got 8}}
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) buffers(%b, %bs, %b, %bs) lengths(%l) pages(%t) {k_stage1 = #qattn.stage1<block = 8>, v_stage1 = #qattn.stage1<block = 8>} : (tensor<?x2x1x16xf32>, tensor<?x2x16x16xi8>, tensor<?x2x2xf32>, tensor<?x2x16x16xi8>, tensor<?x2x2xf32>, tensor<?x2x8x16xi8>, tensor<?x2xf32>, tensor<?x2x8x16xi8>, tensor<?x2xf32>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x2x1x16xf32>
  return
}

// -----

func.func @f(%q: tensor<?x2x1x16xf32>, %k: tensor<?x2x?x16xi8>, %ks: tensor<?x2x?xf32>, %b: tensor<?x2x12x16xi8>, %bs: tensor<?x2xf32>, %l: tensor<?xi32>) {
  // expected-error@+1 {{expected the buffer size 12 to be a multiple of the stage-1 block size 8 with kv_lens}}
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) buffers(%b, %bs, %b, %bs) lengths(%l) {k_stage1 = #qattn.stage1<block = 8>, v_stage1 = #qattn.stage1<block = 8>} : (tensor<?x2x1x16xf32>, tensor<?x2x?x16xi8>, tensor<?x2x?xf32>, tensor<?x2x?x16xi8>, tensor<?x2x?xf32>, tensor<?x2x12x16xi8>, tensor<?x2xf32>, tensor<?x2x12x16xi8>, tensor<?x2xf32>, tensor<?xi32>) -> tensor<?x2x1x16xf32>
  return
}

// -----

func.func @f(%q: tensor<2x2x1x16xf32>, %k: tensor<2x2x?x16xi8>, %ks: tensor<2x2x?xf32>, %l: tensor<3xi32>) {
  // expected-error@+1 {{expected kv_lens of shape [2], got 'tensor<3xi32>'}}
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) lengths(%l) {k_stage1 = #qattn.stage1<block = 8>, v_stage1 = #qattn.stage1<block = 8>} : (tensor<2x2x1x16xf32>, tensor<2x2x?x16xi8>, tensor<2x2x?xf32>, tensor<2x2x?x16xi8>, tensor<2x2x?xf32>, tensor<3xi32>) -> tensor<2x2x1x16xf32>
  return
}

// -----

func.func @f(%q: tensor<2x2x1x16xf32>, %k: tensor<?x2x8x16xi8>, %ks: tensor<?x2x1xf32>, %l: tensor<2xi32>, %t: tensor<3x4xi32>) {
  // expected-error@+1 {{expected a page table of shape [B, max pages] with B = 2, got 'tensor<3x4xi32>'}}
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) lengths(%l) pages(%t) {k_stage1 = #qattn.stage1<block = 8>, v_stage1 = #qattn.stage1<block = 8>} : (tensor<2x2x1x16xf32>, tensor<?x2x8x16xi8>, tensor<?x2x1xf32>, tensor<?x2x8x16xi8>, tensor<?x2x1xf32>, tensor<2xi32>, tensor<3x4xi32>) -> tensor<2x2x1x16xf32>
  return
}

// -----

func.func @f(%q: tensor<1x?x1x16xf32>, %k: tensor<1x2x8x16xi8>, %ks: tensor<1x2x1xf32>) {
  // expected-error@+1 {{expected static, positive query heads, queries and head dimension, got 'tensor<1x?x1x16xf32>'}}
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) {k_stage1 = #qattn.stage1<block = 8>, v_stage1 = #qattn.stage1<block = 8>} : (tensor<1x?x1x16xf32>, tensor<1x2x8x16xi8>, tensor<1x2x1xf32>, tensor<1x2x8x16xi8>, tensor<1x2x1xf32>) -> tensor<1x?x1x16xf32>
  return
}

// -----

func.func @f(%q: tensor<1x2x1x16xf32>, %k: tensor<1x?x8x16xi8>, %ks: tensor<1x?x1xf32>) {
  // expected-error@+1 {{expected key scales with a static, positive number of KV heads, got 'tensor<1x?x1xf32>'}}
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) {k_stage1 = #qattn.stage1<block = 8>, v_stage1 = #qattn.stage1<block = 8>} : (tensor<1x2x1x16xf32>, tensor<1x?x8x16xi8>, tensor<1x?x1xf32>, tensor<1x?x8x16xi8>, tensor<1x?x1xf32>) -> tensor<1x2x1x16xf32>
  return
}

// -----

func.func @f(%x: tensor<?x2x8x16xf32>) {
  // expected-error@+1 {{expected static shapes, got 'tensor<?x2x8x16xf32>' (dynamic sizes are supported by qattn.attention, qattn.dequantize and qattn.progressive_dequantize)}}
  %q, %s = qattn.quantize %x {scheme = #qattn.stage1<block = 8>} : tensor<?x2x8x16xf32> -> tensor<?x2x8x16xi8>, tensor<?x2x1xf32>
  return
}

// -----

func.func @f(%q8: tensor<?x2x8x?xi8>, %s: tensor<?x2x1xf32>) {
  // expected-error@+1 {{expected data with static, positive heads and head dimension, got [?, 2, 8, ?]}}
  %x = qattn.dequantize %q8, %s {scheme = #qattn.stage1<block = 8>} : tensor<?x2x8x?xi8>, tensor<?x2x1xf32> -> tensor<?x2x8x?xf32>
  return
}

// -----

func.func @f(%x: tensor<1x2x4x16xf32>, %s: tensor<1x2xf32>, %b: tensor<1x2x16x16xi8>) {
  %pos = arith.constant 13 : index
  // expected-error@+1 {{expected a position in [0, 12] for 4 tokens into a buffer of 16, got 13}}
  %r = qattn.buffer_append %x, %s into %b[%pos] : tensor<1x2x4x16xf32>, tensor<1x2xf32> into tensor<1x2x16x16xi8>
  return
}

// -----

func.func @f(%b: tensor<1x2x16x16xi8>, %s: tensor<1x2xf32>, %p: tensor<1x64x16xi8>, %s1: tensor<1x2x4xf32>, %s2: tensor<1x2x8x16xi8>) {
  %pos = arith.constant 24 : index
  // expected-error@+1 {{expected a position that is a multiple of the stage-1 block 16 in [0, 48] for a buffer of 16 tokens into a cache of 64, got 24}}
  %r:4 = qattn.buffer_flush %b, %s into %p, %s1, %s2, %s2[%pos] {stage1 = #qattn.stage1<block = 16>, stage2 = #qattn.stage2<bits = [4], group = 8>} : tensor<1x2x16x16xi8>, tensor<1x2xf32> into tensor<1x64x16xi8>, tensor<1x2x4xf32>, tensor<1x2x8x16xi8>, tensor<1x2x8x16xi8>
  return
}
