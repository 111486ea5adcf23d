// RUN: qattn-opt %s -split-input-file --qattn-tile | FileCheck %s --check-prefix=AUTO
// RUN: qattn-opt %s -split-input-file --qattn-tile="tile-layer=none" | FileCheck %s --check-prefix=NOTILE
// RUN: qattn-opt %s -split-input-file --qattn-tile="tile-layer=none warps=8 splits=3 keys-per-step=4" | FileCheck %s --check-prefix=FIXED
// RUN: qattn-opt %s -split-input-file --qattn-tile="splits=3" | FileCheck %s --check-prefix=TILESPLITS
// RUN: not qattn-opt %s -split-input-file --qattn-tile="warps=64" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: qattn-opt %s -split-input-file --qattn-tile="mma=false" | FileCheck %s --check-prefix=NOMMA
// RUN: qattn-opt %s -split-input-file --qattn-tile="wgmma=true" | FileCheck %s --check-prefix=WGMMA
// RUN: qattn-opt %s -split-input-file --qattn-tile="wgmma=false" | FileCheck %s --check-prefix=NOWGMMA
// RUN: not qattn-opt %s -split-input-file --qattn-tile="decode-min-keys-per-split=0" 2>&1 | FileCheck %s --check-prefix=BADOPT
// RUN: not qattn-opt %s -split-input-file --qattn-tile="splits=-1" 2>&1 | FileCheck %s --check-prefix=BADOPT
// RUN: not qattn-opt %s -split-input-file --qattn-tile="tile-layer=true" 2>&1 | FileCheck %s --check-prefix=BADSCOPE
// RUN: qattn-opt %s -split-input-file --qattn-tile="pv-e4m3=true" | FileCheck %s --check-prefix=E4M3
// RUN: qattn-opt %s -split-input-file --qattn-tile="num-sms=4096" | FileCheck %s --check-prefix=BIGGPU

// Decode goes through the tile layer: a grid over (batch, KV head, row
// tile, key split), 2000 keys affording 16 splits of >= 128 keys (one wave
// would take 792), then the combine; splits=3 fixes the count. With
// tile-layer=none the warp kernel: 8 query rows are 2 CTAs of 4 warps; 8
// CTAs on each of 132 SMs would need 528 splits, 2000 keys afford 15.
// AUTO-LABEL: func.func @decode
// AUTO-NOT: gpu_tiling
// AUTO: scf.forall ({{.*}}) in (1, 2, 1, 16)
// AUTO: qattn.combine_splits
// TILESPLITS-LABEL: func.func @decode
// TILESPLITS: scf.forall ({{.*}}) in (1, 2, 1, 3)
// NOTILE-LABEL: func.func @decode
// NOTILE: gpu_tiling = #qattn.gpu_tiling<warps = 4, splits = 15>
// FIXED-LABEL: func.func @decode
// FIXED: gpu_tiling = #qattn.gpu_tiling<warps = 8, splits = 3, keys_per_step = 4>
// BAD: error: qattn-tile: expected 1 to 32 warps per CTA, got 64
// BADOPT: error: qattn-tile: invalid options
// BADSCOPE: error: qattn-tile: tile-layer must be decode, all or none, got 'true'
func.func @decode(%q: tensor<1x8x1x64xf32>, %k: tensor<1x2x2000x64xi8>, %ks: tensor<1x2x32xf32>) -> tensor<1x8x1x64xf32> {
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) {k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>}
      : (tensor<1x8x1x64xf32>, tensor<1x2x2000x64xi8>, tensor<1x2x32xf32>, tensor<1x2x2000x64xi8>, tensor<1x2x32xf32>) -> tensor<1x8x1x64xf32>
  return %o : tensor<1x8x1x64xf32>
}

// -----

// Prefill fills the GPU with rows alone: 4 * 4096 rows / 4 = 4096 CTAs.
// AUTO-LABEL: func.func @prefill
// AUTO: gpu_tiling = #qattn.gpu_tiling<warps = 4, splits = 1>
func.func @prefill(%q: tensor<1x4x4096x64xf32>, %k: tensor<1x4x4096x64xi8>, %ks: tensor<1x4x64xf32>) -> tensor<1x4x4096x64xf32> {
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) {k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>, causal}
      : (tensor<1x4x4096x64xf32>, tensor<1x4x4096x64xi8>, tensor<1x4x64xf32>, tensor<1x4x4096x64xi8>, tensor<1x4x64xf32>) -> tensor<1x4x4096x64xf32>
  return %o : tensor<1x4x4096x64xf32>
}

// -----

// A tiling already present is kept.
// AUTO-LABEL: func.func @pretiled
// AUTO: gpu_tiling = #qattn.gpu_tiling<warps = 2, splits = 5>
func.func @pretiled(%q: tensor<1x1x1x64xf32>, %k: tensor<1x1x64x64xi8>, %ks: tensor<1x1x1xf32>) -> tensor<1x1x1x64xf32> {
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) {k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>, gpu_tiling = #qattn.gpu_tiling<warps = 2, splits = 5>}
      : (tensor<1x1x1x64xf32>, tensor<1x1x64x64xi8>, tensor<1x1x1xf32>, tensor<1x1x64x64xi8>, tensor<1x1x1xf32>) -> tensor<1x1x1x64xf32>
  return %o : tensor<1x1x1x64xf32>
}

// -----

// Prefill with BPQ int8 queries takes the tensor-core kernel (4 warps),
// unless mma=false; at d = 64 the warpgroup form with a 4-stage ring (its
// overlapped loop), wgmma=false the mma.sync form with 2 stages.
// AUTO-LABEL: func.func @prefill_int8_q
// AUTO: gpu_tiling = #qattn.gpu_tiling<warps = 4, splits = 1, kernel = wgmma, stages = 4>
// NOMMA-LABEL: func.func @prefill_int8_q
// NOMMA: gpu_tiling = #qattn.gpu_tiling<warps = 4, splits = 2>
// WGMMA-LABEL: func.func @prefill_int8_q
// WGMMA: gpu_tiling = #qattn.gpu_tiling<warps = 4, splits = 1, kernel = wgmma, stages = 4>
// NOWGMMA-LABEL: func.func @prefill_int8_q
// NOWGMMA: gpu_tiling = #qattn.gpu_tiling<warps = 4, splits = 1, kernel = mma, stages = 2>
func.func @prefill_int8_q(%q: tensor<1x4x256x64xi8>, %qs: tensor<1x4x4xf32>, %k: tensor<1x4x256x64xi8>, %ks: tensor<1x4x4xf32>) -> tensor<1x4x256x64xf32> {
  %o = qattn.attention %q [%qs] keys(%k, %ks) values(%k, %ks) {q_stage1 = #qattn.stage1<block = 64>, k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>, causal}
      : (tensor<1x4x256x64xi8>, tensor<1x4x4xf32>, tensor<1x4x256x64xi8>, tensor<1x4x4xf32>, tensor<1x4x256x64xi8>, tensor<1x4x4xf32>) -> tensor<1x4x256x64xf32>
  return %o : tensor<1x4x256x64xf32>
}

// -----

// At d = 128 the warpgroup form (wgmma); wgmma=false keeps mma.sync;
// pv-e4m3 runs its P.V on fp8 (V blocks of 64 keys: one scale per tile).
// E4M3-LABEL: func.func @prefill_int8_q_d128
// E4M3: gpu_tiling = #qattn.gpu_tiling<warps = 4, splits = 1, kernel = wgmma, stages = 2, pv = e4m3>
// AUTO-LABEL: func.func @prefill_int8_q_d128
// AUTO: gpu_tiling = #qattn.gpu_tiling<warps = 4, splits = 1, kernel = wgmma, stages = 2>
// WGMMA-LABEL: func.func @prefill_int8_q_d128
// WGMMA: gpu_tiling = #qattn.gpu_tiling<warps = 4, splits = 1, kernel = wgmma, stages = 2>
// NOWGMMA-LABEL: func.func @prefill_int8_q_d128
// NOWGMMA: gpu_tiling = #qattn.gpu_tiling<warps = 4, splits = 1, kernel = mma, stages = 2>
func.func @prefill_int8_q_d128(%q: tensor<1x4x256x128xi8>, %qs: tensor<1x4x4xf32>, %k: tensor<1x4x256x128xi8>, %ks: tensor<1x4x4xf32>) -> tensor<1x4x256x128xf32> {
  %o = qattn.attention %q [%qs] keys(%k, %ks) values(%k, %ks) {q_stage1 = #qattn.stage1<block = 64>, k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>}
      : (tensor<1x4x256x128xi8>, tensor<1x4x4xf32>, tensor<1x4x256x128xi8>, tensor<1x4x4xf32>, tensor<1x4x256x128xi8>, tensor<1x4x4xf32>) -> tensor<1x4x256x128xf32>
  return %o : tensor<1x4x256x128xf32>
}

// -----

// pv-e4m3 leaves P.V on f16 where V's stage-1 blocks (32 keys) do not give
// one scale per 64-key tile.
// E4M3-LABEL: func.func @prefill_e4m3_v_block32
// E4M3: gpu_tiling = #qattn.gpu_tiling<warps = 4, splits = 1, kernel = wgmma, stages = 2>
func.func @prefill_e4m3_v_block32(%q: tensor<1x4x256x128xi8>, %qs: tensor<1x4x4xf32>, %k: tensor<1x4x256x128xi8>, %ks: tensor<1x4x4xf32>, %vs: tensor<1x4x8xf32>) -> tensor<1x4x256x128xf32> {
  %o = qattn.attention %q [%qs] keys(%k, %ks) values(%k, %vs) {q_stage1 = #qattn.stage1<block = 64>, k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 32>}
      : (tensor<1x4x256x128xi8>, tensor<1x4x4xf32>, tensor<1x4x256x128xi8>, tensor<1x4x4xf32>, tensor<1x4x256x128xi8>, tensor<1x4x8xf32>) -> tensor<1x4x256x128xf32>
  return %o : tensor<1x4x256x128xf32>
}

// -----

// A large d = 128 grid with f16 P.V takes two warpgroups per CTA (8 warps,
// 128 rows: B4 H32 N4K gives 4096 CTAs, at least two per SM); fp8 P.V
// keeps one (4 CTAs per SM fit), and so does a grid with fewer than two
// 128-row CTAs per SM (num-sms=4096: 8192 wanted). A causal grid of 4096 or
// more queries with f16 P.V takes a producer warpgroup beside two that
// compute, whatever the grid; with fp8 P.V it does not.
// AUTO-LABEL: func.func @prefill_two_warpgroups
// AUTO: gpu_tiling = #qattn.gpu_tiling<warps = 8, splits = 1, kernel = wgmma, stages = 2>
// AUTO: gpu_tiling = #qattn.gpu_tiling<warps = 8, splits = 1, kernel = wgmma, stages = 4, producer = warpgroup>
// E4M3-LABEL: func.func @prefill_two_warpgroups
// E4M3: gpu_tiling = #qattn.gpu_tiling<warps = 4, splits = 1, kernel = wgmma, stages = 2, pv = e4m3>
// E4M3: gpu_tiling = #qattn.gpu_tiling<warps = 4, splits = 1, kernel = wgmma, stages = 2, pv = e4m3>
// BIGGPU-LABEL: func.func @prefill_two_warpgroups
// BIGGPU: gpu_tiling = #qattn.gpu_tiling<warps = 4, splits = 1, kernel = wgmma, stages = 2>
// BIGGPU: gpu_tiling = #qattn.gpu_tiling<warps = 8, splits = 1, kernel = wgmma, stages = 4, producer = warpgroup>
func.func @prefill_two_warpgroups(%q: tensor<4x32x4096x128xi8>, %qs: tensor<4x32x64xf32>, %k: tensor<4x32x4096x128xi8>, %ks: tensor<4x32x64xf32>) -> (tensor<4x32x4096x128xf32>, tensor<4x32x4096x128xf32>) {
  %o = qattn.attention %q [%qs] keys(%k, %ks) values(%k, %ks) {q_stage1 = #qattn.stage1<block = 64>, k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>}
      : (tensor<4x32x4096x128xi8>, tensor<4x32x64xf32>, tensor<4x32x4096x128xi8>, tensor<4x32x64xf32>, tensor<4x32x4096x128xi8>, tensor<4x32x64xf32>) -> tensor<4x32x4096x128xf32>
  %c = qattn.attention %q [%qs] keys(%k, %ks) values(%k, %ks) {q_stage1 = #qattn.stage1<block = 64>, k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>, causal}
      : (tensor<4x32x4096x128xi8>, tensor<4x32x64xf32>, tensor<4x32x4096x128xi8>, tensor<4x32x64xf32>, tensor<4x32x4096x128xi8>, tensor<4x32x64xf32>) -> tensor<4x32x4096x128xf32>
  return %o, %c : tensor<4x32x4096x128xf32>, tensor<4x32x4096x128xf32>
}

// -----

// SAS needs each row's final max in one warp: one split (the tile layer's
// grid, or the warp kernel).
// AUTO-LABEL: func.func @decode_sas
// AUTO: scf.forall ({{.*}}) in (1, 2, 1, 1)
// NOTILE-LABEL: func.func @decode_sas
// NOTILE: gpu_tiling = #qattn.gpu_tiling<warps = 4, splits = 1>
func.func @decode_sas(%q: tensor<1x8x1x64xf32>, %k: tensor<1x2x2000x64xi8>, %ks: tensor<1x2x32xf32>) -> tensor<1x8x1x64xf32> {
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) {k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>, softmax = #qattn.softmax<sas>}
      : (tensor<1x8x1x64xf32>, tensor<1x2x2000x64xi8>, tensor<1x2x32xf32>, tensor<1x2x2000x64xi8>, tensor<1x2x32xf32>) -> tensor<1x8x1x64xf32>
  return %o : tensor<1x8x1x64xf32>
}

// -----

// Packed 4-bit K/V, with a decode buffer or without: the tile layer.
// AUTO-LABEL: func.func @decode_packed
// AUTO: scf.forall ({{.*}}) in (1, 2, 1, 16)
// AUTO-LABEL: func.func @decode_packed_buffer
// AUTO: scf.forall ({{.*}}) in (1, 2, 1, 16)
// NOTILE-LABEL: func.func @decode_packed
// NOTILE: gpu_tiling = #qattn.gpu_tiling<warps = 4, splits = 15>
func.func @decode_packed(%q: tensor<1x8x1x64xf32>, %kp: tensor<1x2000x64xi8>, %ks: tensor<1x2x32xf32>, %kg: tensor<1x2x125x64xi8>, %kz: tensor<1x2x125x64xi8>) -> tensor<1x8x1x64xf32> {
  %o = qattn.attention %q keys(%kp, %ks, %kg, %kz) values(%kp, %ks, %kg, %kz)
      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4], group = 16>,
       v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [4], group = 16>}
      : (tensor<1x8x1x64xf32>, tensor<1x2000x64xi8>, tensor<1x2x32xf32>, tensor<1x2x125x64xi8>, tensor<1x2x125x64xi8>, tensor<1x2000x64xi8>, tensor<1x2x32xf32>, tensor<1x2x125x64xi8>, tensor<1x2x125x64xi8>) -> tensor<1x8x1x64xf32>
  return %o : tensor<1x8x1x64xf32>
}
func.func @decode_packed_buffer(%q: tensor<1x8x1x64xf32>, %kp: tensor<1x2000x64xi8>, %ks: tensor<1x2x32xf32>, %kg: tensor<1x2x125x64xi8>, %kz: tensor<1x2x125x64xi8>,
                                %kb: tensor<1x2x16x64xi8>, %kbs: tensor<1x2xf32>) -> tensor<1x8x1x64xf32> {
  %o = qattn.attention %q keys(%kp, %ks, %kg, %kz) values(%kp, %ks, %kg, %kz) buffers(%kb, %kbs, %kb, %kbs)
      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4], group = 16>,
       v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [4], group = 16>}
      : (tensor<1x8x1x64xf32>, tensor<1x2000x64xi8>, tensor<1x2x32xf32>, tensor<1x2x125x64xi8>, tensor<1x2x125x64xi8>, tensor<1x2000x64xi8>, tensor<1x2x32xf32>, tensor<1x2x125x64xi8>, tensor<1x2x125x64xi8>, tensor<1x2x16x64xi8>, tensor<1x2xf32>, tensor<1x2x16x64xi8>, tensor<1x2xf32>) -> tensor<1x8x1x64xf32>
  return %o : tensor<1x8x1x64xf32>
}

// -----

// B8 Hq32 Hkv8 d64, 8192 keys: 64 warp tasks; the grid kernel holds 12
// warps on each of 132 SMs, so one wave is 24 splits (8192 keys would
// afford 64).
// AUTO-LABEL: func.func @decode_packed_batch8
// AUTO: scf.forall ({{.*}}) in (8, 8, 1, 24)
func.func @decode_packed_batch8(%q: tensor<8x32x1x64xf32>, %kp: tensor<8x8192x256xi8>, %ks: tensor<8x8x128xf32>, %kg: tensor<8x8x512x64xi8>, %kz: tensor<8x8x512x64xi8>) -> tensor<8x32x1x64xf32> {
  %o = qattn.attention %q keys(%kp, %ks, %kg, %kz) values(%kp, %ks, %kg, %kz)
      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4], group = 16>,
       v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [4], group = 16>}
      : (tensor<8x32x1x64xf32>, tensor<8x8192x256xi8>, tensor<8x8x128xf32>, tensor<8x8x512x64xi8>, tensor<8x8x512x64xi8>, tensor<8x8192x256xi8>, tensor<8x8x128xf32>, tensor<8x8x512x64xi8>, tensor<8x8x512x64xi8>) -> tensor<8x32x1x64xf32>
  return %o : tensor<8x32x1x64xf32>
}

// -----

// Decode on the tile layer in formats past head dims 64/128 and blocks and
// groups of 8 or 16 keys: head dims 80, 96, 192 and 256 (past d = 128 the
// grid kernel takes 8 warps an SM, 255 registers), stage-1 blocks of 1 key
// (a scale per token) and of 24 (a scale per lane key either way), and
// stage-2 groups of 4 (at 12 warps an SM: a lane holds two groups'
// constants a key block). Blocks of 8 take two scales a 16-key tile.
// AUTO-LABEL: func.func @decode_d80
// AUTO-NOT: gpu_tiling
// AUTO: qattn.load_query_tile
// AUTO: qattn.grid_warps_per_sm = 12 : i64
// AUTO-LABEL: func.func @decode_d96
// AUTO-NOT: gpu_tiling
// AUTO: qattn.load_query_tile
// AUTO: qattn.grid_warps_per_sm = 12 : i64
// AUTO-LABEL: func.func @decode_d256
// AUTO-NOT: gpu_tiling
// AUTO: qattn.load_query_tile
// AUTO: qattn.grid_warps_per_sm = 8 : i64
// AUTO-LABEL: func.func @decode_d192
// AUTO-NOT: gpu_tiling
// AUTO: qattn.load_query_tile
// AUTO: qattn.grid_warps_per_sm = 8 : i64
// AUTO-LABEL: func.func @decode_block1
// AUTO-NOT: gpu_tiling
// AUTO: qattn.load_kv_tile {{.*}} {keys = 16 : i64, layout = #qattn.fragment<mma_keys_a>, stage1 = #qattn.stage1<block = 1>}
// AUTO: qattn.grid_warps_per_sm = 16 : i64
// AUTO-LABEL: func.func @decode_group4
// AUTO-NOT: gpu_tiling
// AUTO: qattn.load_kv_tile {{.*}} {keys = 16 : i64, layout = #qattn.fragment<mma_keys_a>, stage1 = #qattn.stage1<block = 64>, stage2 = #qattn.stage2<bits = [4], group = 4>}
// AUTO: qattn.grid_warps_per_sm = 12 : i64
// AUTO-LABEL: func.func @decode_block24
// AUTO-NOT: gpu_tiling
// AUTO: qattn.load_kv_tile {{.*}} {keys = 16 : i64, layout = #qattn.fragment<mma_keys_a>, stage1 = #qattn.stage1<block = 24>}
// AUTO-LABEL: func.func @decode_block8
// AUTO-NOT: gpu_tiling
// AUTO: scf.forall
// AUTO: qattn.load_kv_tile {{.*}} {keys = 16 : i64, layout = #qattn.fragment<mma_keys_a>, stage1 = #qattn.stage1<block = 8>}
func.func @decode_d80(%q: tensor<1x8x1x80xf32>, %k: tensor<1x2x2000x80xi8>, %ks: tensor<1x2x32xf32>) -> tensor<1x8x1x80xf32> {
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) {k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>}
      : (tensor<1x8x1x80xf32>, tensor<1x2x2000x80xi8>, tensor<1x2x32xf32>, tensor<1x2x2000x80xi8>, tensor<1x2x32xf32>) -> tensor<1x8x1x80xf32>
  return %o : tensor<1x8x1x80xf32>
}
func.func @decode_d96(%q: tensor<1x8x1x96xf32>, %k: tensor<1x2x2000x96xi8>, %ks: tensor<1x2x32xf32>) -> tensor<1x8x1x96xf32> {
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) {k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>}
      : (tensor<1x8x1x96xf32>, tensor<1x2x2000x96xi8>, tensor<1x2x32xf32>, tensor<1x2x2000x96xi8>, tensor<1x2x32xf32>) -> tensor<1x8x1x96xf32>
  return %o : tensor<1x8x1x96xf32>
}
func.func @decode_d256(%q: tensor<1x8x1x256xf32>, %k: tensor<1x2x2000x256xi8>, %ks: tensor<1x2x32xf32>) -> tensor<1x8x1x256xf32> {
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) {k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>}
      : (tensor<1x8x1x256xf32>, tensor<1x2x2000x256xi8>, tensor<1x2x32xf32>, tensor<1x2x2000x256xi8>, tensor<1x2x32xf32>) -> tensor<1x8x1x256xf32>
  return %o : tensor<1x8x1x256xf32>
}
func.func @decode_d192(%q: tensor<1x8x1x192xf32>, %k: tensor<1x2x2000x192xi8>, %ks: tensor<1x2x32xf32>) -> tensor<1x8x1x192xf32> {
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) {k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>}
      : (tensor<1x8x1x192xf32>, tensor<1x2x2000x192xi8>, tensor<1x2x32xf32>, tensor<1x2x2000x192xi8>, tensor<1x2x32xf32>) -> tensor<1x8x1x192xf32>
  return %o : tensor<1x8x1x192xf32>
}
func.func @decode_block1(%q: tensor<1x8x1x64xf32>, %k: tensor<1x2x2000x64xi8>, %ks: tensor<1x2x2000xf32>) -> tensor<1x8x1x64xf32> {
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) {k_stage1 = #qattn.stage1<block = 1>, v_stage1 = #qattn.stage1<block = 1>}
      : (tensor<1x8x1x64xf32>, tensor<1x2x2000x64xi8>, tensor<1x2x2000xf32>, tensor<1x2x2000x64xi8>, tensor<1x2x2000xf32>) -> tensor<1x8x1x64xf32>
  return %o : tensor<1x8x1x64xf32>
}
func.func @decode_group4(%q: tensor<1x8x1x64xf32>, %kp: tensor<1x2000x64xi8>, %ks: tensor<1x2x32xf32>, %kg: tensor<1x2x500x64xi8>, %kz: tensor<1x2x500x64xi8>) -> tensor<1x8x1x64xf32> {
  %o = qattn.attention %q keys(%kp, %ks, %kg, %kz) values(%kp, %ks, %kg, %kz)
      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4], group = 4>, v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [4], group = 4>}
      : (tensor<1x8x1x64xf32>, tensor<1x2000x64xi8>, tensor<1x2x32xf32>, tensor<1x2x500x64xi8>, tensor<1x2x500x64xi8>, tensor<1x2000x64xi8>, tensor<1x2x32xf32>, tensor<1x2x500x64xi8>, tensor<1x2x500x64xi8>) -> tensor<1x8x1x64xf32>
  return %o : tensor<1x8x1x64xf32>
}
func.func @decode_block24(%q: tensor<1x8x1x64xf32>, %k: tensor<1x2x2000x64xi8>, %ks: tensor<1x2x84xf32>) -> tensor<1x8x1x64xf32> {
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) {k_stage1 = #qattn.stage1<block = 24>, v_stage1 = #qattn.stage1<block = 24>}
      : (tensor<1x8x1x64xf32>, tensor<1x2x2000x64xi8>, tensor<1x2x84xf32>, tensor<1x2x2000x64xi8>, tensor<1x2x84xf32>) -> tensor<1x8x1x64xf32>
  return %o : tensor<1x8x1x64xf32>
}
func.func @decode_block8(%q: tensor<1x8x1x64xf32>, %k: tensor<1x2x2000x64xi8>, %ks: tensor<1x2x250xf32>) -> tensor<1x8x1x64xf32> {
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) {k_stage1 = #qattn.stage1<block = 8>, v_stage1 = #qattn.stage1<block = 8>}
      : (tensor<1x8x1x64xf32>, tensor<1x2x2000x64xi8>, tensor<1x2x250xf32>, tensor<1x2x2000x64xi8>, tensor<1x2x250xf32>) -> tensor<1x8x1x64xf32>
  return %o : tensor<1x8x1x64xf32>
}

// -----

// 16 int8 queries a sequence (speculative decode) take the tile layer: 64
// (query, head) rows per KV head in 4 row tiles; with tile-layer=none the
// warpgroup prefill kernel.
// AUTO-LABEL: func.func @decode_nq16_int8_q
// AUTO: scf.forall ({{.*}}) in (1, 2, 4, {{[0-9]+}})
// NOTILE-LABEL: func.func @decode_nq16_int8_q
// NOTILE: gpu_tiling = #qattn.gpu_tiling<warps = 4, splits = 1, kernel = wgmma, stages = 4>
func.func @decode_nq16_int8_q(%q: tensor<1x8x16x64xi8>, %qs: tensor<1x8x1xf32>, %k: tensor<1x2x512x64xi8>, %ks: tensor<1x2x8xf32>) -> tensor<1x8x16x64xf32> {
  %o = qattn.attention %q [%qs] keys(%k, %ks) values(%k, %ks) {q_stage1 = #qattn.stage1<block = 64>, k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>}
      : (tensor<1x8x16x64xi8>, tensor<1x8x1xf32>, tensor<1x2x512x64xi8>, tensor<1x2x8xf32>, tensor<1x2x512x64xi8>, tensor<1x2x8xf32>) -> tensor<1x8x16x64xf32>
  return %o : tensor<1x8x16x64xf32>
}
