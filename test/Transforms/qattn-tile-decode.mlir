// RUN: qattn-opt %s -split-input-file --qattn-tile --canonicalize | FileCheck %s
// RUN: qattn-opt %s -split-input-file --qattn-tile=splits=2 --canonicalize | FileCheck %s --check-prefix=SPLITS
// RUN: qattn-opt %s -split-input-file --qattn-tile=tile-layer=none --canonicalize | FileCheck %s --check-prefix=NOTILE
// RUN: qattn-opt %s -split-input-file --qattn-tile=tile-layer=all --canonicalize | FileCheck %s --check-prefix=LAYER
// RUN: qattn-opt %s -split-input-file --qattn-tile=tile-keys=16 --canonicalize | FileCheck %s --check-prefix=NARROW
// RUN: qattn-opt %s -split-input-file --qattn-tile=num-sms=4 --canonicalize | FileCheck %s --check-prefix=SMS
// RUN: qattn-opt %s -split-input-file --qattn-tile=heads-fastest=false --canonicalize | FileCheck %s --check-prefix=SPLITFAST
// RUN: qattn-opt %s -split-input-file --qattn-tile=grid-warps-per-sm=16 --canonicalize | FileCheck %s --check-prefix=WARPS16
// RUN: not qattn-opt %s -split-input-file --qattn-tile=grid-warps-per-sm=40 2>&1 | FileCheck %s --check-prefix=BADWARPS
// RUN: qattn-opt %s -split-input-file --qattn-tile=lazy-max=0 --canonicalize | FileCheck %s --check-prefix=EAGER
// RUN: qattn-opt %s -split-input-file --qattn-tile=lazy-max=2.5 --canonicalize | FileCheck %s --check-prefix=LAZY
// RUN: qattn-opt %s -split-input-file --qattn-tile=balance-splits=true --canonicalize | FileCheck %s --check-prefix=BALANCED

// A paged decode with the int8 tail page becomes a grid of tile programs:
// one per (batch, KV head, row tile, key split); each walks its slice of
// the sequence's cache keys (bounds from kv_lens, the last L mod 64 keys in
// the buffer) and then its tail keys, in 32-key tiles (two stage-2 groups
// of 16 each: the rows are one block of 8), and the splits' partial rows
// are combined. The split count comes from the batch at run time: one wave
// of the grid kernel's 12 warps per SM (168 registers: 32-key tiles, 4
// rows), 1584 on 132 SMs, over B x 2 KV heads x 1 row tile, at
// most 64 and at most the capacity (max_pages x 64 keys and the buffer's 64)
// in splits of 128 keys, at least 1. The scratch tensors' split dimension
// is that count.
// CHECK-LABEL: func.func @paged_decode
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[C32:.*]] = arith.constant 32 : index
// CHECK-DAG: %[[C64:.*]] = arith.constant 64 : index
// CHECK-DAG: %[[C128:.*]] = arith.constant 128 : index
// CHECK-DAG: %[[C256:.*]] = arith.constant 256 : index
// CHECK-DAG: %[[C1584:.*]] = arith.constant 1584 : index
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
// CHECK: %[[B:.*]] = tensor.dim %{{.*}}, %{{.*}} : tensor<?x8x1x64xf16>
// CHECK: %[[TASKS:.*]] = arith.muli %[[B]], %[[C2]] : index
// CHECK: %[[WAVE:.*]] = arith.divui %[[C1584]], %[[TASKS]] : index
// CHECK: %[[MP:.*]] = tensor.dim %{{.*}}, %[[C1]] : tensor<?x?xi32>
// CHECK: %[[PAGED:.*]] = arith.muli %[[MP]], %[[C64]] : index
// CHECK: %[[CAP:.*]] = arith.addi %[[PAGED]], %[[C64]] : index
// CHECK: %[[LONGEST:.*]] = arith.ceildivui %[[CAP]], %[[C128]] : index
// More than 64 splits only where each still gets 256 keys.
// CHECK: %[[LONG:.*]] = arith.ceildivui %[[CAP]], %[[C256]] : index
// CHECK: %[[MANY:.*]] = arith.maxui %[[LONG]], %[[C64]] : index
// CHECK: %[[MOST:.*]] = arith.minui %[[LONGEST]], %[[MANY]] : index
// CHECK: %[[FIT:.*]] = arith.minui %[[WAVE]], %[[MOST]] : index
// CHECK: %[[NS:.*]] = arith.maxui %[[FIT]], %[[C1]] : index
// CHECK: tensor.empty(%[[B]], %[[NS]]) : tensor<?x2x1x?x16xf32>
// CHECK: tensor.empty(%[[B]], %[[NS]]) : tensor<?x2x1x?x16x64xf32>
// CHECK: %[[GRID:.*]]:3 = scf.forall (%[[BI:.*]], %[[HK:.*]], %[[RT:.*]], %[[S:.*]]) in (%[[B]], 2, 1, %[[NS]]) shared_outs
// CHECK: %[[LEN32:.*]] = tensor.extract %{{.*}}[%[[BI]]] : tensor<?xi32>
// CHECK: %[[LEN:.*]] = arith.index_cast %[[LEN32]] : i32 to index
// CHECK: %[[TAIL:.*]] = arith.remui %[[LEN]], %[[C64]] : index
// CHECK: %[[CACHED:.*]] = arith.subi %[[LEN]], %[[TAIL]] : index
// Each split takes ceil(L / S) keys, rounded up to whole tiles.
// CHECK: %[[NS1:.*]] = arith.subi %[[NS]], %[[C1]] : index
// CHECK: %[[LENS:.*]] = arith.addi %[[LEN]], %[[NS1]] : index
// CHECK: arith.divui %[[LENS]], %[[NS]] : index
// CHECK: %[[Q:.*]] = qattn.load_query_tile %{{.*}} [%[[BI]], %[[HK]], %{{.*}}] {group = 4 : i64, layout = #qattn.fragment<mma_queries_b>}
// CHECK: %[[STATE:.*]]:3 = scf.for %[[J:.*]] = %{{.*}} to %[[CEND:.*]] step %[[C32]] iter_args
// CHECK:   %[[KT:.*]]:4 = qattn.load_kv_tile %{{.*}}[%[[BI]], %[[HK]], %[[J]]] bound %[[CEND]] pages(%{{.*}} : tensor<?x?xi32>) {keys = 32 : i64{{.*}} -> (tensor<32x32xi8>, tensor<2x64xi8>, tensor<2x64xi8>, tensor<32xf32>)
// CHECK:   %[[VT:.*]]:4 = qattn.load_kv_tile
// CHECK:   %[[K:.*]] = qattn.dequantize_tile %[[KT]]#0, %[[KT]]#1, %[[KT]]#2, %[[KT]]#3 {layout = #qattn.fragment<mma_keys_a>
// CHECK:   %[[SC:.*]] = qattn.tile_scores %[[Q]], %[[K]][%{{.*}}, %[[J]]] bound %[[CEND]] length %[[LEN]]
// CHECK:   %[[V:.*]] = qattn.dequantize_tile %[[VT]]#0, {{.*}} {layout = #qattn.fragment<mma_values_a>
// d = 64: the lazy max (8 ln 2) is the default.
// CHECK:   qattn.softmax_update %[[SC]], %[[V]], {{.*}} {lazy_max = 5.54517746 : f32}
// K's codes of a key are 8 bytes a lane (d x bits = 256 < 512): K's and V's
// tiles both go through the ring as code rows, and the cache's loop asks
// qattn-pipeline for static ring slots.
// CHECK: } {qattn.key_loop, qattn.static_slots}
// CHECK: scf.for %[[JB:.*]] = %{{.*}} to %{{.*}} step %[[C32]] iter_args({{.*}} = %[[STATE]]#0, {{.*}} = %[[STATE]]#1, {{.*}} = %[[STATE]]#2)
// CHECK:   %[[ROW:.*]] = arith.subi %[[JB]], %[[CACHED]] : index
// CHECK:   qattn.load_kv_tile %{{.*}}, %{{.*}}[%[[BI]], %[[HK]], %[[ROW]]] bound %{{.*}} {keys = 32 : i64, layout = #qattn.fragment<mma_keys_a>} : (tensor<?x2x64x64xi8>, tensor<?x2xf32>)
// The buffer's loop (at most a page's tiles, into registers) stays unpipelined.
// CHECK: } {qattn.key_loop, qattn.pipeline_stages = 1 : i64}
// CHECK: scf.forall.in_parallel
// CHECK: tensor.parallel_insert_slice {{.*}} into {{.*}}[%[[BI]], %[[HK]], {{.*}}, %[[S]], 0, 0] [1, 1, 1, 1, 16, 64]
// The KV heads of a split are neighbouring CTAs (linear_dim_0 fastest);
// heads-fastest=false puts a head's splits there instead.
// The grid records the warps per SM its split count filled, for the GPU
// lowering's register budget: 12 here; grid-warps-per-sm sets them (16:
// 2112 slots, 128 registers); past 32 it is an error.
// CHECK: } {mapping = [#gpu.block<linear_dim_3>, #gpu.block<linear_dim_0>, #gpu.block<linear_dim_2>, #gpu.block<linear_dim_1>], qattn.grid_warps_per_sm = 12 : i64}
// SPLITFAST: } {mapping = [#gpu.block<linear_dim_3>, #gpu.block<linear_dim_2>, #gpu.block<linear_dim_1>, #gpu.block<linear_dim_0>], qattn.grid_warps_per_sm = 12 : i64}
// WARPS16-LABEL: func.func @paged_decode
// WARPS16: arith.divui %c2112, %{{.*}} : index
// WARPS16: qattn.grid_warps_per_sm = 16 : i64
// BADWARPS: qattn-tile: grid-warps-per-sm must be in [0, 32], got 40
// CHECK: qattn.combine_splits %[[GRID]]#2, %[[GRID]]#0, %[[GRID]]#1 {group = 4 : i64} : tensor<?x2x1x?x16x64xf32>, tensor<?x2x1x?x16xf32>, tensor<?x2x1x?x16xf32> -> tensor<?x8x1x64xf16>
// CHECK-NOT: qattn.attention
// balance-splits: grid point (b, s) is slot b S + s of the at most B x S
// balanced chunks, whose sequence and keys qattn.key_chunk gives; the
// loads, the bounds and the length are that sequence's, the partial rows
// stay at the grid point, and the combine finds each sequence's chunks from
// the same lengths.
// BALANCED-LABEL: func.func @paged_decode
// BALANCED: %[[NS:.*]] = arith.maxui %{{.*}}, %c1 : index
// BALANCED: tensor.empty(%{{.*}}, %[[NS]]) : tensor<?x2x1x?x16x64xf32>
// BALANCED: scf.forall (%[[BI:.*]], %[[HK:.*]], %{{.*}}, %[[S:.*]]) in (%{{.*}}, 2, 1, %[[NS]])
// BALANCED: %[[NB:.*]] = tensor.dim %[[LENS:.*]], %{{.*}} : tensor<?xi32>
// BALANCED: %[[K:.*]] = arith.muli %[[NB]], %[[NS]] : index
// BALANCED: %[[ROW:.*]] = arith.muli %[[BI]], %[[NS]] : index
// BALANCED: %[[SLOT:.*]] = arith.addi %[[ROW]], %[[S]] : index
// BALANCED: %[[SEQ:.*]], %[[LO:.*]], %[[HI:.*]] = qattn.key_chunk %[[LENS]][%[[SLOT]]] of %[[K]] {tile_keys = 32 : i64} : tensor<?xi32>
// BALANCED: tensor.extract %[[LENS]][%[[SEQ]]] : tensor<?xi32>
// BALANCED: qattn.load_query_tile %{{.*}} [%[[SEQ]], %[[HK]], %{{.*}}]
// BALANCED: %[[CEND:.*]] = arith.minui %[[HI]], %{{.*}} : index
// BALANCED: %[[FIRST:.*]] = arith.minui %[[LO]], %[[CEND]] : index
// BALANCED: scf.for %[[J:.*]] = %[[FIRST]] to %[[CEND]]
// BALANCED:   qattn.load_kv_tile %{{.*}}[%[[SEQ]], %[[HK]], %[[J]]] bound %[[CEND]]
// BALANCED: tensor.parallel_insert_slice {{.*}}[%[[BI]], %[[HK]], {{.*}}, %[[S]], 0, 0]
// BALANCED: qattn.combine_splits %{{.*}}, %{{.*}}, %{{.*}} chunks(%[[LENS]] : tensor<?xi32>) {group = 4 : i64, tile_keys = 32 : i64}
// The splits option forces a constant.
// SPLITS: scf.forall ({{.*}}) in (%{{.*}}, 2, 1, 2)
// SPLITS: qattn.combine_splits {{.*}} : tensor<?x2x1x2x16x64xf32>
func.func @paged_decode(%q: tensor<?x8x1x64xf16>, %kp: tensor<?x64x64xi8>, %ks: tensor<?x2x1xf32>, %ks2: tensor<?x2x4x64xi8>, %kz2: tensor<?x2x4x64xi8>,
                        %kb: tensor<?x2x64x64xi8>, %kbs: tensor<?x2xf32>, %lens: tensor<?xi32>, %table: tensor<?x?xi32>) -> tensor<?x8x1x64xf16> {
  %o = qattn.attention %q keys(%kp, %ks, %ks2, %kz2) values(%kp, %ks, %ks2, %kz2) buffers(%kb, %kbs, %kb, %kbs) lengths(%lens) pages(%table)
      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4], group = 16>, v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [4], group = 16>}
      : (tensor<?x8x1x64xf16>, tensor<?x64x64xi8>, tensor<?x2x1xf32>, tensor<?x2x4x64xi8>, tensor<?x2x4x64xi8>, tensor<?x64x64xi8>, tensor<?x2x1xf32>, tensor<?x2x4x64xi8>, tensor<?x2x4x64xi8>, tensor<?x2x64x64xi8>, tensor<?x2xf32>, tensor<?x2x64x64xi8>, tensor<?x2xf32>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x8x1x64xf16>
  return %o : tensor<?x8x1x64xf16>
}

// -----

// A static decode without lengths takes the tile layer too (tile-layer =
// decode, the default), with the serving form's split rule folded to a
// constant (B1 Hkv2 N128: one split), the whole cache as the length;
// tile-layer=none keeps the GPU kernels' tiling attribute.
// CHECK-LABEL: func.func @static_decode
// CHECK: scf.forall ({{.*}}) in (1, 2, 1, 1)
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// CHECK: qattn.load_kv_tile {{.*}} bound
// CHECK: qattn.combine_splits {{.*}} -> tensor<1x8x1x64xf16>
// CHECK-NOT: qattn.attention
// NOTILE-LABEL: func.func @static_decode
// NOTILE: qattn.attention {{.*}}gpu_tiling = #qattn.gpu_tiling<
func.func @static_decode(%q: tensor<1x8x1x64xf16>, %k: tensor<1x2x128x64xi8>, %ks: tensor<1x2x2xf32>) -> tensor<1x8x1x64xf16> {
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) {k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>}
      : (tensor<1x8x1x64xf16>, tensor<1x2x128x64xi8>, tensor<1x2x2xf32>, tensor<1x2x128x64xi8>, tensor<1x2x2xf32>) -> tensor<1x8x1x64xf16>
  return %o : tensor<1x8x1x64xf16>
}

// -----

// 32 float queries a sequence are prefill: the warp kernel by default, the
// tile layer (128 (query, head) rows per KV head: 8 row tiles) only with
// tile-layer=all.
// CHECK-LABEL: func.func @static_prefill
// CHECK: qattn.attention {{.*}}gpu_tiling = #qattn.gpu_tiling<
// LAYER-LABEL: func.func @static_prefill
// LAYER: scf.forall ({{.*}}) in (1, 2, 8, 1)
// LAYER-NOT: qattn.attention
func.func @static_prefill(%q: tensor<1x8x32x64xf16>, %k: tensor<1x2x128x64xi8>, %ks: tensor<1x2x2xf32>) -> tensor<1x8x32x64xf16> {
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) {k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>}
      : (tensor<1x8x32x64xf16>, tensor<1x2x128x64xi8>, tensor<1x2x2xf32>, tensor<1x2x128x64xi8>, tensor<1x2x2xf32>) -> tensor<1x8x32x64xf16>
  return %o : tensor<1x8x32x64xf16>
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

// d = 128 at 4 bits: K's codes of a key are 16 bytes a lane, copied as the
// lane's own pieces; the loop keeps dynamic ring slots.
// CHECK-LABEL: func.func @lane_pieces
// CHECK: qattn.load_kv_tile {{.*}} {keys = 32 : i64{{.*}} -> (tensor<32x64xi8>, tensor<2x128xi8>, tensor<2x128xi8>, tensor<32xf32>)
// CHECK: } {qattn.key_loop}
func.func @lane_pieces(%q: tensor<?x8x1x128xf16>, %kp: tensor<?x64x128xi8>, %ks: tensor<?x2x1xf32>, %ks2: tensor<?x2x4x128xi8>, %kz2: tensor<?x2x4x128xi8>,
                       %lens: tensor<?xi32>, %table: tensor<?x?xi32>) -> tensor<?x8x1x128xf16> {
  %o = qattn.attention %q keys(%kp, %ks, %ks2, %kz2) values(%kp, %ks, %ks2, %kz2) lengths(%lens) pages(%table)
      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4], group = 16>, v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [4], group = 16>}
      : (tensor<?x8x1x128xf16>, tensor<?x64x128xi8>, tensor<?x2x1xf32>, tensor<?x2x4x128xi8>, tensor<?x2x4x128xi8>, tensor<?x64x128xi8>, tensor<?x2x1xf32>, tensor<?x2x4x128xi8>, tensor<?x2x4x128xi8>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x8x1x128xf16>
  return %o : tensor<?x8x1x128xf16>
}

// -----

// Groups of 16 with two row blocks (four queries of a group of 4: 16 rows)
// keep 16-key tiles: a 32-key loop over two row blocks spills on the H200.
// CHECK-LABEL: func.func @groups_of_16_two_row_blocks
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c16
// CHECK: qattn.load_kv_tile {{.*}} {keys = 16 : i64{{.*}} -> (tensor<16x32xi8>, tensor<1x64xi8>, tensor<1x64xi8>, tensor<16xf32>)
// Two row blocks: dynamic ring slots.
// CHECK: } {qattn.key_loop}
func.func @groups_of_16_two_row_blocks(%q: tensor<?x8x4x64xf16>, %kp: tensor<?x64x64xi8>, %ks: tensor<?x2x1xf32>, %ks2: tensor<?x2x4x64xi8>, %kz2: tensor<?x2x4x64xi8>,
                                       %lens: tensor<?xi32>, %table: tensor<?x?xi32>) -> tensor<?x8x4x64xf16> {
  %o = qattn.attention %q keys(%kp, %ks, %ks2, %kz2) values(%kp, %ks, %ks2, %kz2) lengths(%lens) pages(%table)
      {causal, k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4], group = 16>, v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [4], group = 16>}
      : (tensor<?x8x4x64xf16>, tensor<?x64x64xi8>, tensor<?x2x1xf32>, tensor<?x2x4x64xi8>, tensor<?x2x4x64xi8>, tensor<?x64x64xi8>, tensor<?x2x1xf32>, tensor<?x2x4x64xi8>, tensor<?x2x4x64xi8>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x8x4x64xf16>
  return %o : tensor<?x8x4x64xf16>
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

// -----

// A contiguous cache whose batch and capacity are static but whose lengths
// are not: the same rule, folded. 32-key tiles take 168 registers, 12 warps
// per SM: 1584 slots over 4 x 2 x 1 tasks is 198, the 1024-key capacity 8
// splits of 128.
// CHECK-LABEL: func.func @static_batch
// CHECK: scf.forall ({{.*}}) in (4, 2, 1, 8)
// CHECK: qattn.combine_splits {{.*}} : tensor<4x2x1x8x16x64xf32>
// A larger batch with a long cache: 1584 / (64 x 2) = 12 splits.
// CHECK-LABEL: func.func @static_large_batch
// CHECK: scf.forall ({{.*}}) in (64, 2, 1, 12)
func.func @static_batch(%q: tensor<4x16x1x64xf16>, %k: tensor<4x2x1024x64xi8>, %ks: tensor<4x2x16xf32>, %lens: tensor<4xi32>) -> tensor<4x16x1x64xf16> {
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) lengths(%lens) {k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>}
      : (tensor<4x16x1x64xf16>, tensor<4x2x1024x64xi8>, tensor<4x2x16xf32>, tensor<4x2x1024x64xi8>, tensor<4x2x16xf32>, tensor<4xi32>) -> tensor<4x16x1x64xf16>
  return %o : tensor<4x16x1x64xf16>
}
func.func @static_large_batch(%q: tensor<64x16x1x64xf16>, %k: tensor<64x2x8192x64xi8>, %ks: tensor<64x2x128xf32>, %lens: tensor<64xi32>) -> tensor<64x16x1x64xf16> {
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) lengths(%lens) {k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>}
      : (tensor<64x16x1x64xf16>, tensor<64x2x8192x64xi8>, tensor<64x2x128xf32>, tensor<64x2x8192x64xi8>, tensor<64x2x128xf32>, tensor<64xi32>) -> tensor<64x16x1x64xf16>
  return %o : tensor<64x16x1x64xf16>
}

// -----

// A contiguous cache of dynamic batch and capacity: its keys dimension is
// the capacity. Its 32-key tiles take 168 registers, 12 warps per SM (1584
// slots); num-sms=4 leaves 48.
// CHECK-LABEL: func.func @contiguous
// CHECK: %[[B:.*]] = tensor.dim %{{.*}}, %c0 : tensor<?x8x1x64xf16>
// CHECK: arith.divui %c1584, %{{.*}} : index
// CHECK: %[[N:.*]] = tensor.dim %{{.*}}, %c2 : tensor<?x2x?x64xi8>
// CHECK: arith.ceildivui %[[N]], %c128 : index
// CHECK: scf.forall ({{.*}}) in (%[[B]], 2, 1, %{{.*}})
// SMS-LABEL: func.func @contiguous
// SMS: %[[WAVE:.*]] = arith.divui %c48, %{{.*}} : index
// SMS: %[[FIT:.*]] = arith.minui %[[WAVE]], %{{.*}} : index
// SMS: %[[NS:.*]] = arith.maxui %[[FIT]], %c1 : index
// SMS: scf.forall ({{.*}}) in (%{{.*}}, 2, 1, %[[NS]])
func.func @contiguous(%q: tensor<?x8x1x64xf16>, %k: tensor<?x2x?x64xi8>, %ks: tensor<?x2x?xf32>, %lens: tensor<?xi32>) -> tensor<?x8x1x64xf16> {
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) lengths(%lens) {k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>}
      : (tensor<?x8x1x64xf16>, tensor<?x2x?x64xi8>, tensor<?x2x?xf32>, tensor<?x2x?x64xi8>, tensor<?x2x?xf32>, tensor<?xi32>) -> tensor<?x8x1x64xf16>
  return %o : tensor<?x8x1x64xf16>
}

// -----

// SAS takes one split, a constant, whatever the batch.
// CHECK-LABEL: func.func @sas
// CHECK: scf.forall ({{.*}}) in (%{{.*}}, 2, 1, 1)
func.func @sas(%q: tensor<?x8x1x64xf16>, %k: tensor<?x2x?x64xi8>, %ks: tensor<?x2x?xf32>, %lens: tensor<?xi32>) -> tensor<?x8x1x64xf16> {
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) lengths(%lens) {k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>, softmax = #qattn.softmax<sas, threshold = -6.0, degree = 2>}
      : (tensor<?x8x1x64xf16>, tensor<?x2x?x64xi8>, tensor<?x2x?xf32>, tensor<?x2x?x64xi8>, tensor<?x2x?xf32>, tensor<?xi32>) -> tensor<?x8x1x64xf16>
  return %o : tensor<?x8x1x64xf16>
}

// -----

// The lazy max: 8 ln 2 by default at every head dim; lazy-max=0 turns it
// off, another value sets it. SAS's passes know each row's final max and
// take none.
// CHECK-LABEL: func.func @lazy_max_by_head_dim
// CHECK: qattn.softmax_update {{.*}} {lazy_max = 5.54517746 : f32} : {{.*}}tensor<16x64xf32>
// CHECK: qattn.softmax_update {{.*}} {lazy_max = 5.54517746 : f32} : {{.*}}tensor<16x128xf32>
// CHECK-LABEL: func.func @sas_no_lazy_max
// CHECK-NOT: lazy_max
// CHECK: qattn.softmax_update {{.*}} {fixed_max, softmax
// CHECK-NOT: lazy_max
// CHECK: return
// EAGER-LABEL: func.func @lazy_max_by_head_dim
// EAGER-NOT: lazy_max
// EAGER: return
// LAZY-LABEL: func.func @lazy_max_by_head_dim
// LAZY: qattn.softmax_update {{.*}} {lazy_max = 2.500000e+00 : f32} : {{.*}}tensor<16x64xf32>
// LAZY: qattn.softmax_update {{.*}} {lazy_max = 2.500000e+00 : f32} : {{.*}}tensor<16x128xf32>
func.func @lazy_max_by_head_dim(%q: tensor<?x8x1x64xf16>, %k: tensor<?x2x?x64xi8>, %ks: tensor<?x2x?xf32>, %lens: tensor<?xi32>,
                                %q2: tensor<?x8x1x128xf16>, %k2: tensor<?x2x?x128xi8>) -> (tensor<?x8x1x64xf16>, tensor<?x8x1x128xf16>) {
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) lengths(%lens) {k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>}
      : (tensor<?x8x1x64xf16>, tensor<?x2x?x64xi8>, tensor<?x2x?xf32>, tensor<?x2x?x64xi8>, tensor<?x2x?xf32>, tensor<?xi32>) -> tensor<?x8x1x64xf16>
  %o2 = qattn.attention %q2 keys(%k2, %ks) values(%k2, %ks) lengths(%lens) {k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>}
      : (tensor<?x8x1x128xf16>, tensor<?x2x?x128xi8>, tensor<?x2x?xf32>, tensor<?x2x?x128xi8>, tensor<?x2x?xf32>, tensor<?xi32>) -> tensor<?x8x1x128xf16>
  return %o, %o2 : tensor<?x8x1x64xf16>, tensor<?x8x1x128xf16>
}

// -----

func.func @sas_no_lazy_max(%q: tensor<?x8x1x64xf16>, %k: tensor<?x2x?x64xi8>, %ks: tensor<?x2x?xf32>, %lens: tensor<?xi32>) -> tensor<?x8x1x64xf16> {
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) lengths(%lens) {k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>, softmax = #qattn.softmax<sas, threshold = -6.0, degree = 2>}
      : (tensor<?x8x1x64xf16>, tensor<?x2x?x64xi8>, tensor<?x2x?xf32>, tensor<?x2x?x64xi8>, tensor<?x2x?xf32>, tensor<?xi32>) -> tensor<?x8x1x64xf16>
  return %o : tensor<?x8x1x64xf16>
}
