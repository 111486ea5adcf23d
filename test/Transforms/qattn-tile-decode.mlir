// RUN: qattn-opt %s -split-input-file --qattn-tile --canonicalize | FileCheck %s
// RUN: qattn-opt %s -split-input-file --qattn-tile=splits=2 --canonicalize | FileCheck %s --check-prefix=SPLITS
// RUN: qattn-opt %s -split-input-file --qattn-tile=tile-layer=true --canonicalize | FileCheck %s --check-prefix=LAYER
// RUN: qattn-opt %s -split-input-file --qattn-tile=tile-keys=16 --canonicalize | FileCheck %s --check-prefix=NARROW

// A paged decode with the int8 tail page becomes a grid of tile programs:
// one per (batch, KV head, row tile, key split: at batch 1 two warps per SM,
// 2 x 132 / 2 capped at 64); each walks its slice of
// the sequence's cache keys (bounds from kv_lens, the last L mod 64 keys in
// the buffer) and then its tail keys, in 16-key tiles, and the splits'
// partial rows are combined.
// CHECK-LABEL: func.func @paged_decode
// CHECK-DAG: %[[C16:.*]] = arith.constant 16 : index
// CHECK-DAG: %[[C64:.*]] = arith.constant 64 : index
// CHECK: %[[B:.*]] = tensor.dim %{{.*}}, %{{.*}} : tensor<?x8x1x64xf16>
// CHECK: %[[GRID:.*]]:3 = scf.forall (%[[BI:.*]], %[[HK:.*]], %[[RT:.*]], %[[S:.*]]) in (%[[B]], 2, 1, 64) shared_outs
// CHECK: %[[LEN32:.*]] = tensor.extract %{{.*}}[%[[BI]]] : tensor<?xi32>
// CHECK: %[[LEN:.*]] = arith.index_cast %[[LEN32]] : i32 to index
// CHECK: %[[TAIL:.*]] = arith.remui %[[LEN]], %[[C64]] : index
// CHECK: %[[CACHED:.*]] = arith.subi %[[LEN]], %[[TAIL]] : index
// CHECK: %[[Q:.*]] = qattn.load_query_tile %{{.*}} [%[[BI]], %[[HK]], %{{.*}}] {group = 4 : i64, layout = #qattn.fragment<mma_queries_b>}
// CHECK: %[[STATE:.*]]:3 = scf.for %[[J:.*]] = %{{.*}} to %[[CEND:.*]] step %[[C16]] iter_args
// CHECK:   %[[KT:.*]]:4 = qattn.load_kv_tile %{{.*}}[%[[BI]], %[[HK]], %[[J]]] bound %[[CEND]] pages(%{{.*}} : tensor<?x?xi32>) {keys = 16 : i64
// CHECK:   %[[VT:.*]]:4 = qattn.load_kv_tile
// CHECK:   %[[K:.*]] = qattn.dequantize_tile %[[KT]]#0, %[[KT]]#1, %[[KT]]#2, %[[KT]]#3 {layout = #qattn.fragment<mma_keys_a>
// CHECK:   %[[SC:.*]] = qattn.tile_scores %[[Q]], %[[K]][%{{.*}}, %[[J]]] bound %[[CEND]] length %[[LEN]]
// CHECK:   %[[V:.*]] = qattn.dequantize_tile %[[VT]]#0, {{.*}} {layout = #qattn.fragment<mma_values_a>
// CHECK:   qattn.softmax_update %[[SC]], %[[V]]
// CHECK: } {qattn.key_loop}
// CHECK: scf.for %[[JB:.*]] = %{{.*}} to %{{.*}} step %[[C16]] iter_args({{.*}} = %[[STATE]]#0, {{.*}} = %[[STATE]]#1, {{.*}} = %[[STATE]]#2)
// CHECK:   %[[ROW:.*]] = arith.subi %[[JB]], %[[CACHED]] : index
// CHECK:   qattn.load_kv_tile %{{.*}}, %{{.*}}[%[[BI]], %[[HK]], %[[ROW]]] bound %{{.*}} {keys = 16 : i64, layout = #qattn.fragment<mma_keys_a>} : (tensor<?x2x64x64xi8>, tensor<?x2xf32>)
// CHECK: } {qattn.key_loop}
// CHECK: scf.forall.in_parallel
// CHECK: tensor.parallel_insert_slice {{.*}} into {{.*}}[%[[BI]], %[[HK]], {{.*}}, %[[S]], 0, 0] [1, 1, 1, 1, 16, 64]
// CHECK: } {mapping = [#gpu.block<linear_dim_3>, #gpu.block<linear_dim_2>, #gpu.block<linear_dim_1>, #gpu.block<linear_dim_0>]}
// CHECK: qattn.combine_splits %[[GRID]]#2, %[[GRID]]#0, %[[GRID]]#1 {group = 4 : i64} : tensor<?x2x1x64x16x64xf32>, tensor<?x2x1x64x16xf32>, tensor<?x2x1x64x16xf32> -> tensor<?x8x1x64xf16>
// CHECK-NOT: qattn.attention
// SPLITS: scf.forall ({{.*}}) in (%{{.*}}, 2, 1, 2)
func.func @paged_decode(%q: tensor<?x8x1x64xf16>, %kp: tensor<?x64x64xi8>, %ks: tensor<?x2x1xf32>, %ks2: tensor<?x2x4x64xi8>, %kz2: tensor<?x2x4x64xi8>,
                        %kb: tensor<?x2x64x64xi8>, %kbs: tensor<?x2xf32>, %lens: tensor<?xi32>, %table: tensor<?x?xi32>) -> tensor<?x8x1x64xf16> {
  %o = qattn.attention %q keys(%kp, %ks, %ks2, %kz2) values(%kp, %ks, %ks2, %kz2) buffers(%kb, %kbs, %kb, %kbs) lengths(%lens) pages(%table)
      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4], group = 16>, v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [4], group = 16>}
      : (tensor<?x8x1x64xf16>, tensor<?x64x64xi8>, tensor<?x2x1xf32>, tensor<?x2x4x64xi8>, tensor<?x2x4x64xi8>, tensor<?x64x64xi8>, tensor<?x2x1xf32>, tensor<?x2x4x64xi8>, tensor<?x2x4x64xi8>, tensor<?x2x64x64xi8>, tensor<?x2xf32>, tensor<?x2x64x64xi8>, tensor<?x2xf32>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x8x1x64xf16>
  return %o : tensor<?x8x1x64xf16>
}

// -----

// Static shapes without lengths keep the GPU kernels' tiling attribute;
// with tile-layer they take the tile layer too, with the decode kernel's
// split heuristic (B1 Hkv2 N128: one split), the whole cache as the length.
// CHECK-LABEL: func.func @static_decode
// CHECK: qattn.attention {{.*}}gpu_tiling = #qattn.gpu_tiling<
// LAYER-LABEL: func.func @static_decode
// LAYER: scf.forall ({{.*}}) in (1, 2, 1, 1)
// LAYER: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// LAYER: qattn.load_kv_tile {{.*}} bound
// LAYER: qattn.combine_splits {{.*}} -> tensor<1x8x1x64xf16>
// LAYER-NOT: qattn.attention
func.func @static_decode(%q: tensor<1x8x1x64xf16>, %k: tensor<1x2x128x64xi8>, %ks: tensor<1x2x2xf32>) -> tensor<1x8x1x64xf16> {
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) {k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>}
      : (tensor<1x8x1x64xf16>, tensor<1x2x128x64xi8>, tensor<1x2x2xf32>, tensor<1x2x128x64xi8>, tensor<1x2x2xf32>) -> tensor<1x8x1x64xf16>
  return %o : tensor<1x8x1x64xf16>
}

// -----

// Groups, blocks, pages and the buffer all multiples of 32 keys: tiles of 32
// keys (the loops step 32, one group per tile); tile-keys=16 keeps 16.
// CHECK-LABEL: func.func @wide_tiles
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c32
// CHECK: qattn.load_kv_tile {{.*}} {keys = 32 : i64, layout = #qattn.fragment<mma_keys_a>, stage1 = #qattn.stage1<block = 64>, stage2 = #qattn.stage2<bits = [4], group = 32>} : {{.*}} -> (tensor<32x32xi8>, tensor<1x64xi8>, tensor<1x64xi8>, tensor<32xf32>)
// CHECK: qattn.tile_scores {{.*}} -> tensor<16x32xf32>
// SPLITS-LABEL: func.func @wide_tiles
// SPLITS: qattn.load_kv_tile {{.*}} {keys = 32 : i64
func.func @wide_tiles(%q: tensor<?x8x1x64xf16>, %kp: tensor<?x64x64xi8>, %ks: tensor<?x2x1xf32>, %ks2: tensor<?x2x2x64xi8>, %kz2: tensor<?x2x2x64xi8>,
                      %kb: tensor<?x2x64x64xi8>, %kbs: tensor<?x2xf32>, %lens: tensor<?xi32>, %table: tensor<?x?xi32>) -> tensor<?x8x1x64xf16> {
  %o = qattn.attention %q keys(%kp, %ks, %ks2, %kz2) values(%kp, %ks, %ks2, %kz2) buffers(%kb, %kbs, %kb, %kbs) lengths(%lens) pages(%table)
      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4], group = 32>, v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [4], group = 32>}
      : (tensor<?x8x1x64xf16>, tensor<?x64x64xi8>, tensor<?x2x1xf32>, tensor<?x2x2x64xi8>, tensor<?x2x2x64xi8>, tensor<?x64x64xi8>, tensor<?x2x1xf32>, tensor<?x2x2x64xi8>, tensor<?x2x2x64xi8>, tensor<?x2x64x64xi8>, tensor<?x2xf32>, tensor<?x2x64x64xi8>, tensor<?x2xf32>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x8x1x64xf16>
  return %o : tensor<?x8x1x64xf16>
}

// -----

// NARROW-LABEL: func.func @wide_tiles_narrowed
// NARROW: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c16
// NARROW: qattn.load_kv_tile {{.*}} {keys = 16 : i64
func.func @wide_tiles_narrowed(%q: tensor<?x8x1x64xf16>, %kp: tensor<?x64x64xi8>, %ks: tensor<?x2x1xf32>, %ks2: tensor<?x2x2x64xi8>, %kz2: tensor<?x2x2x64xi8>,
                               %lens: tensor<?xi32>, %table: tensor<?x?xi32>) -> tensor<?x8x1x64xf16> {
  %o = qattn.attention %q keys(%kp, %ks, %ks2, %kz2) values(%kp, %ks, %ks2, %kz2) lengths(%lens) pages(%table)
      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4], group = 32>, v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [4], group = 32>}
      : (tensor<?x8x1x64xf16>, tensor<?x64x64xi8>, tensor<?x2x1xf32>, tensor<?x2x2x64xi8>, tensor<?x2x2x64xi8>, tensor<?x64x64xi8>, tensor<?x2x1xf32>, tensor<?x2x2x64xi8>, tensor<?x2x2x64xi8>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x8x1x64xf16>
  return %o : tensor<?x8x1x64xf16>
}
