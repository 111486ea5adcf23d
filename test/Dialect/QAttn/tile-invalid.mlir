// RUN: qattn-opt %s -split-input-file -verify-diagnostics

func.func @f(%q: tensor<?x8x1x64xf16>, %b: index) {
  // expected-error@+1 {{expected a group that divides the query heads 8, got 3}}
  %qt = qattn.load_query_tile %q [%b, %b, %b] {group = 3} : tensor<?x8x1x64xf16> -> tensor<16x64xf32>
  return
}

// -----

func.func @f(%q: tensor<?x8x1x64xf16>, %b: index) {
  // expected-error@+1 {{expected tile of shape [?, 64], got 'tensor<16x32xf32>'}}
  %qt = qattn.load_query_tile %q [%b, %b, %b] {group = 4} : tensor<?x8x1x64xf16> -> tensor<16x32xf32>
  return
}

// -----

func.func @f(%kp: tensor<?x64x32xi8>, %ks: tensor<?x2x1xf32>, %ks2: tensor<?x2x4x64xi8>, %i: index) {
  // expected-error@+1 {{expected 4 sources and 4 results for the stage-2 form, got 4 and 3}}
  %c:3 = qattn.load_kv_tile %kp, %ks, %ks2, %ks2 [%i, %i, %i] bound %i {keys = 16, stage1 = #qattn.stage1<block = 64>, stage2 = #qattn.stage2<bits = [2], group = 16>}
      : (tensor<?x64x32xi8>, tensor<?x2x1xf32>, tensor<?x2x4x64xi8>, tensor<?x2x4x64xi8>) -> (tensor<16x16xi8>, tensor<1x64xi8>, tensor<1x64xi8>)
  return
}

// -----

func.func @f(%kp: tensor<?x64x32xi8>, %ks: tensor<?x2x1xf32>, %ks2: tensor<?x2x4x64xi8>, %i: index) {
  // expected-error@+1 {{expected codes tile of shape [16, 16], got 'tensor<16x32xi8>'}}
  %c:4 = qattn.load_kv_tile %kp, %ks, %ks2, %ks2 [%i, %i, %i] bound %i {keys = 16, stage1 = #qattn.stage1<block = 64>, stage2 = #qattn.stage2<bits = [2], group = 16>}
      : (tensor<?x64x32xi8>, tensor<?x2x1xf32>, tensor<?x2x4x64xi8>, tensor<?x2x4x64xi8>) -> (tensor<16x32xi8>, tensor<1x64xi8>, tensor<1x64xi8>, tensor<16xf32>)
  return
}

// -----

func.func @f(%k: tensor<?x2x32x64xi8>, %ks: tensor<?x2xf32>, %i: index) {
  // expected-error@+1 {{expected a key or value fragment layout, got mma_queries_b}}
  %c:2 = qattn.load_kv_tile %k, %ks [%i, %i, %i] bound %i {keys = 16, layout = #qattn.fragment<mma_queries_b>}
      : (tensor<?x2x32x64xi8>, tensor<?x2xf32>) -> (tensor<16x64xi8>, tensor<16xf32>)
  return
}

// -----

func.func @f(%k: tensor<?x2x24x64xi8>, %ks: tensor<?x2x3xf32>, %t: tensor<?x?xi32>, %i: index) {
  // expected-error@+1 {{expected the tile size 16 to divide the page size, got pages of 'tensor<?x2x24x64xi8>'}}
  %c:2 = qattn.load_kv_tile %k, %ks [%i, %i, %i] bound %i pages(%t : tensor<?x?xi32>) {keys = 16, stage1 = #qattn.stage1<block = 8>}
      : (tensor<?x2x24x64xi8>, tensor<?x2x3xf32>) -> (tensor<16x64xi8>, tensor<16xf32>)
  return
}

// -----

func.func @f(%kb: tensor<?x2x64x64xi8>, %kbs: tensor<?x2xf32>, %t: tensor<?x?xi32>, %i: index) {
  // expected-error@+1 {{expected no page table with the decode buffer}}
  %c:2 = qattn.load_kv_tile %kb, %kbs [%i, %i, %i] bound %i pages(%t : tensor<?x?xi32>) {keys = 16}
      : (tensor<?x2x64x64xi8>, tensor<?x2xf32>) -> (tensor<16x64xi8>, tensor<16xf32>)
  return
}

// -----

func.func @f(%c: tensor<16x32xi8>, %s2: tensor<1x64xi8>, %s1: tensor<16xf32>) {
  // expected-error@+1 {{expected head(%hk) with per-head widths}}
  %k = qattn.dequantize_tile %c, %s2, %s2, %s1 {stage2 = #qattn.stage2<bits = [4, 2], group = 16>} : tensor<16x32xi8>, tensor<1x64xi8>, tensor<1x64xi8>, tensor<16xf32> -> tensor<16x64xf32>
  return
}

// -----

func.func @f(%q: tensor<16x64xf32>, %k: tensor<16x32xf32>, %i: index) {
  // expected-error@+1 {{expected keys tile of shape [16, 64], got 'tensor<16x32xf32>'}}
  %s = qattn.tile_scores %q, %k [%i, %i] bound %i length %i {scale = 1.0 : f32, group = 1, queries = 1} : tensor<16x64xf32>, tensor<16x32xf32> -> tensor<16x16xf32>
  return
}

// -----

func.func @f(%s: tensor<16x16xf32>, %v: tensor<16x64xf32>, %m: tensor<8xf32>, %a: tensor<16x64xf32>) {
  // expected-error@+1 {{expected max of shape [16], got 'tensor<8xf32>'}}
  %r:3 = qattn.softmax_update %s, %v, %m, %m, %a : tensor<16x16xf32>, tensor<16x64xf32>, tensor<8xf32>, tensor<8xf32>, tensor<16x64xf32>
  return
}

// -----

func.func @f(%acc: tensor<?x2x1x8x16x64xf32>, %m: tensor<?x2x1x8x16xf32>) {
  // expected-error@+1 {{expected 2 x 4 query heads of d = 64, got 'tensor<?x6x1x64xf16>'}}
  %o = qattn.combine_splits %acc, %m, %m {group = 4} : tensor<?x2x1x8x16x64xf32>, tensor<?x2x1x8x16xf32>, tensor<?x2x1x8x16xf32> -> tensor<?x6x1x64xf16>
  return
}

// -----

func.func @f(%acc: tensor<?x2x1x8x16x64xf32>, %m: tensor<?x2x1x8x16xf32>) {
  // expected-error@+1 {{expected row tiles covering the 32 (query, head) pairs of a KV head, got 'tensor<?x2x1x8x16x64xf32>'}}
  %o = qattn.combine_splits %acc, %m, %m {group = 4} : tensor<?x2x1x8x16x64xf32>, tensor<?x2x1x8x16xf32>, tensor<?x2x1x8x16xf32> -> tensor<?x8x8x64xf16>
  return
}

// -----

func.func @f(%s: tensor<16x16xf32>, %v: tensor<16x64xf32>, %m: tensor<16xf32>, %a: tensor<16x64xf32>) {
  // expected-error@+1 {{expected fixed_max with the SAS softmax (its terms are defined against the row's final max)}}
  %r:3 = qattn.softmax_update %s, %v, %m, %m, %a {softmax = #qattn.softmax<sas, threshold = -6.0, degree = 2>} : tensor<16x16xf32>, tensor<16x64xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16x64xf32>
  return
}

// -----

func.func @f(%s: tensor<16x16xf32>, %v: tensor<16x64xf32>, %m: tensor<16xf32>, %a: tensor<16x64xf32>) {
  // expected-error@+1 {{expected no lazy_max with fixed_max (the max is already the row's final one)}}
  %r:3 = qattn.softmax_update %s, %v, %m, %m, %a {fixed_max, lazy_max = 2.0 : f32} : tensor<16x16xf32>, tensor<16x64xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16x64xf32>
  return
}

// -----

func.func @f(%s: tensor<16x16xf32>, %v: tensor<16x64xf32>, %m: tensor<16xf32>, %a: tensor<16x64xf32>) {
  // expected-error@+1 {{expected lazy_max in (0, 10] (a term is at most e^lazy_max, in f16 on the GPU), got 1.200000e+01}}
  %r:3 = qattn.softmax_update %s, %v, %m, %m, %a {lazy_max = 12.0 : f32} : tensor<16x16xf32>, tensor<16x64xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16x64xf32>
  return
}

// -----

func.func @f(%s: tensor<16x16xf32>, %m: tensor<8xf32>) {
  // expected-error@+1 {{expected max of shape [16], got 'tensor<8xf32>'}}
  %r = qattn.tile_row_max %s, %m : tensor<16x16xf32>, tensor<8xf32>
  return
}

// -----

func.func @f(%q: tensor<?x8x1x64xf16>, %b: index) {
  // expected-error@+1 {{expected tile to have a static shape, got 'tensor<?x64xf32>'}}
  %qt = qattn.load_query_tile %q [%b, %b, %b] {group = 4} : tensor<?x8x1x64xf16> -> tensor<?x64xf32>
  return
}

// -----

func.func @f(%lens: tensor<2x4xi32>, %c: index) {
  // expected-error@+1 {{expected kv_lens of rank 1 (one length a sequence), got 'tensor<2x4xi32>'}}
  %s, %lo, %hi = qattn.key_chunk %lens[%c] of %c {tile_keys = 32} : tensor<2x4xi32>
  return
}

// -----

func.func @f(%lens: tensor<?xi32>, %c: index) {
  // expected-error@+1 {{expected tile_keys of at least 1, got 0}}
  %s, %lo, %hi = qattn.key_chunk %lens[%c] of %c {tile_keys = 0} : tensor<?xi32>
  return
}

// -----

func.func @f(%acc: tensor<?x2x1x8x16x64xf32>, %m: tensor<?x2x1x8x16xf32>, %lens: tensor<?xi32>) {
  // expected-error@+1 {{expected chunks(kv_lens) and tile_keys together}}
  %o = qattn.combine_splits %acc, %m, %m chunks(%lens : tensor<?xi32>) {group = 4} : tensor<?x2x1x8x16x64xf32>, tensor<?x2x1x8x16xf32>, tensor<?x2x1x8x16xf32> -> tensor<?x8x1x64xf16>
  return
}
