// RUN: qattn-opt %s -split-input-file --qattn-convert-to-gpu --canonicalize | FileCheck %s
// What the pass prints parses back (a token-less nvgpu.device_async_create_group did not).
// RUN: qattn-opt %s -split-input-file --qattn-convert-to-gpu | qattn-opt -split-input-file -o /dev/null

// Split keys: the main kernel (one warp per KV head, serving its 4 query
// heads: 2 warps, 1 CTA) writes partial rows to two scratch buffers (8 rows x
// 3 splits), then the combine kernel merges them into the output: a CTA of 4
// warps per row, each warp its share of the splits, then one thread per
// channel over the warps' partial merges in workgroup memory. The combine
// launch is early: the main kernel lets it start once all its CTAs run, and
// it waits for the partials (griddepcontrol).
// CHECK-LABEL: func.func @decode_split
// CHECK-DAG: %[[C3:.*]] = arith.constant 3 : index
// CHECK-DAG: %[[C8:.*]] = arith.constant 8 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[C128:.*]] = arith.constant 128 : index
// CHECK: %[[OUT:.*]] = memref.alloc() : memref<1x8x1x64xf16>
// CHECK: %[[ACC:.*]] = memref.alloc() : memref<8x3x64xf32>
// CHECK: %[[ML:.*]] = memref.alloc() : memref<8x3x2xf32>
// CHECK: gpu.launch_func @qattn_kernels::@decode_split_attention blocks in (%[[C3]], %[[C1]], %{{.*}}) threads in (%[[C128]], %{{.*}}, %{{.*}}) args({{.*}}, %[[ACC]] : memref<8x3x64xf32>, %[[ML]] : memref<8x3x2xf32>){{$}}
// CHECK: gpu.launch_func @qattn_kernels::@decode_split_combine blocks in (%[[C8]], %{{.*}}, %{{.*}}) threads in (%[[C128]], %{{.*}}, %{{.*}}) args(%[[ACC]] : memref<8x3x64xf32>, %[[ML]] : memref<8x3x2xf32>, %[[OUT]] : memref<1x8x1x64xf16>) {qattn.early_launch}
// CHECK: bufferization.to_tensor %[[OUT]]
// CHECK: gpu.module @qattn_kernels
// CHECK: gpu.func @decode_split_attention({{.*}}) kernel attributes {known_block_size = array<i32: 128, 1, 1>}
// CHECK: nvvm.griddepcontrol launch_dependents
// Stage-2 codes are unpacked in registers and decoded in integers...
// CHECK: arith.shrui
// CHECK: arith.subi %{{.*}}, %{{.*}} : i32
// CHECK: arith.muli %{{.*}}, %{{.*}} : i32
// ...each score is a butterfly sum over the warp, then the online softmax.
// CHECK: gpu.shuffle  xor %{{.*}}, %{{.*}}, %{{.*}} : f32
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: gpu.func @decode_split_combine({{.*}}) workgroup(%[[MERGED:.*]] : memref<264xf32, #gpu.address_space<workgroup>>)
// CHECK: nvvm.griddepcontrol wait
// CHECK: math.exp
// CHECK: memref.store {{.*}}, %[[MERGED]]
// CHECK: gpu.barrier
// CHECK: memref.load %[[MERGED]]
// CHECK: math.exp
// CHECK: arith.truncf %{{.*}} : f32 to f16
func.func @decode_split(%q: tensor<1x8x1x64xf16>, %kp: tensor<1x300x64xi8>, %ks: tensor<1x2x5xf32>, %kg: tensor<1x2x19x64xi8>, %kz: tensor<1x2x19x64xi8>,
                        %vp: tensor<1x300x64xi8>, %vs: tensor<1x2x5xf32>, %vg: tensor<1x2x19x64xi8>, %vz: tensor<1x2x19x64xi8>) -> tensor<1x8x1x64xf16> {
  %o = qattn.attention %q keys(%kp, %ks, %kg, %kz) values(%vp, %vs, %vg, %vz)
      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4], group = 16>,
       v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [4], group = 16>, causal,
       gpu_tiling = #qattn.gpu_tiling<warps = 4, splits = 3>}
      : (tensor<1x8x1x64xf16>, tensor<1x300x64xi8>, tensor<1x2x5xf32>, tensor<1x2x19x64xi8>, tensor<1x2x19x64xi8>, tensor<1x300x64xi8>, tensor<1x2x5xf32>, tensor<1x2x19x64xi8>, tensor<1x2x19x64xi8>) -> tensor<1x8x1x64xf16>
  return %o : tensor<1x8x1x64xf16>
}

// -----

// One split: the kernel writes the output itself. Mixed per-head widths
// specialize the row per KV head with an index switch.
// CHECK-LABEL: func.func @mixed
// CHECK: gpu.launch_func @qattn_kernels::@mixed_attention
// CHECK-NOT: gpu.launch_func
// CHECK: gpu.func @mixed_attention
// CHECK: scf.index_switch
// CHECK: case 0 {
// CHECK: case 1 {
func.func @mixed(%q: tensor<1x2x1x64xf32>, %kp: tensor<1x64x48xi8>, %ks: tensor<1x2x1xf32>, %kg: tensor<1x2x4x64xi8>, %kz: tensor<1x2x4x64xi8>) -> tensor<1x2x1x64xf32> {
  %o = qattn.attention %q keys(%kp, %ks, %kg, %kz) values(%kp, %ks, %kg, %kz)
      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4, 2], group = 16>,
       v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [4, 2], group = 16>,
       gpu_tiling = #qattn.gpu_tiling<warps = 2, splits = 1>}
      : (tensor<1x2x1x64xf32>, tensor<1x64x48xi8>, tensor<1x2x1xf32>, tensor<1x2x4x64xi8>, tensor<1x2x4x64xi8>, tensor<1x64x48xi8>, tensor<1x2x1xf32>, tensor<1x2x4x64xi8>, tensor<1x2x4x64xi8>) -> tensor<1x2x1x64xf32>
  return %o : tensor<1x2x1x64xf32>
}

// -----

// The tensor-core prefill kernel: a stage launch decodes K to int8 codes,
// V to f16 and the key scales into scratch padded to 64-key tiles (300 ->
// 320); the attention launch (8 warps x 16 rows per CTA over (128-row tiles,
// batch x heads)) copies the tiles with cp.async into a 2-slot ring in
// dynamic shared memory (2 x (64 x 64 K + 64 x 64 x 2 V + 64 x 4) bytes),
// waits for the oldest group and syncs once per tile before refilling, reads
// int8 K fragments with ldmatrix for the int8 mma.sync, masks only the tiles
// that need it, and reads f16 V with transposed ldmatrix for P.V.
// CHECK-LABEL: func.func @prefill_mma
// CHECK-DAG: %[[K8:.*]] = memref.alloc() : memref<1x2x320x64xi8>
// CHECK-DAG: %[[V16:.*]] = memref.alloc() : memref<1x2x320x64xf16>
// CHECK-DAG: %[[KS:.*]] = memref.alloc() : memref<1x2x320xf32>
// CHECK: gpu.launch_func @qattn_kernels::@prefill_mma_prefill_stage
// CHECK-SAME: %[[K8]] : memref<1x2x320x64xi8>, %[[V16]] : memref<1x2x320x64xf16>, %[[KS]] : memref<1x2x320xf32>)
// CHECK: gpu.launch_func @qattn_kernels::@prefill_mma_attention_mma {{.*}} dynamic_shared_memory_size %c25088_i32
// CHECK: gpu.func @prefill_mma_prefill_stage(
// CHECK: arith.trunci {{.*}} : i32 to i8
// CHECK: arith.truncf {{.*}} : f32 to f16
// CHECK: gpu.func @prefill_mma_attention_mma(
// CHECK-SAME: known_block_size = array<i32: 256, 1, 1>
// CHECK-NOT: minctasm
// CHECK: gpu.dynamic_shared_memory
// CHECK: nvgpu.device_async_copy {{.*}}, 16 : memref<1x2x320x64xi8> to memref<8192xi8, #gpu.address_space<workgroup>>
// CHECK: nvgpu.device_async_copy {{.*}}, 8 : memref<1x2x320x64xf16> to memref<8192xf16, #gpu.address_space<workgroup>>
// CHECK: nvvm.cp.async.commit.group
// CHECK: scf.for
// CHECK: nvvm.cp.async.wait.group 0
// CHECK-NEXT: gpu.barrier
// CHECK: nvvm.cp.async.commit.group
// CHECK: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = false} : memref<8192xi8, #gpu.address_space<workgroup>> -> vector<4x4xi8>
// CHECK: nvgpu.mma.sync({{.*}}) {mmaShape = [16, 8, 32]} : (vector<4x4xi8>, vector<2x4xi8>, vector<2x2xi32>) -> vector<2x2xi32>
// CHECK: scf.if {{.*}} -> (f32,
// CHECK: arith.select
// CHECK: gpu.shuffle  xor
// CHECK: llvm.inline_asm "ex2.approx.ftz.f32 $0, $1;", "=f,f"
// CHECK: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = true} : memref<8192xf16, #gpu.address_space<workgroup>> -> vector<4x2xf16>
// CHECK: nvgpu.mma.sync({{.*}}) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
func.func @prefill_mma(%q8: tensor<1x4x300x64xi8>, %qs: tensor<1x4x5xf32>, %kp: tensor<1x300x64xi8>, %ks: tensor<1x2x5xf32>, %kg: tensor<1x2x19x64xi8>, %kz: tensor<1x2x19x64xi8>) -> tensor<1x4x300x64xf32> {
  %o = qattn.attention %q8 [%qs] keys(%kp, %ks, %kg, %kz) values(%kp, %ks, %kg, %kz)
      {q_stage1 = #qattn.stage1<block = 64>, k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4], group = 16>,
       v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [4], group = 16>, causal,
       gpu_tiling = #qattn.gpu_tiling<warps = 8, splits = 1, kernel = mma, stages = 2>}
      : (tensor<1x4x300x64xi8>, tensor<1x4x5xf32>, tensor<1x300x64xi8>, tensor<1x2x5xf32>, tensor<1x2x19x64xi8>, tensor<1x2x19x64xi8>, tensor<1x300x64xi8>, tensor<1x2x5xf32>, tensor<1x2x19x64xi8>, tensor<1x2x19x64xi8>) -> tensor<1x4x300x64xf32>
  return %o : tensor<1x4x300x64xf32>
}

// -----

// SAS: a first pass over the keys for each row's max (no values loaded),
// then the terms against that max (floor, LUT select chain, polynomial).
// CHECK-LABEL: func.func @decode_sas
// CHECK: gpu.func @decode_sas_attention
// CHECK: scf.for
// CHECK: gpu.shuffle  xor
// CHECK: arith.maximumf
// CHECK: scf.for
// CHECK: math.floor
// CHECK: arith.cmpf olt
func.func @decode_sas(%q: tensor<1x4x1x64xf32>, %k: tensor<1x1x300x64xi8>, %ks: tensor<1x1x5xf32>) -> tensor<1x4x1x64xf32> {
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks)
      {k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>,
       softmax = #qattn.softmax<sas, threshold = -6.0, degree = 3>,
       gpu_tiling = #qattn.gpu_tiling<warps = 4, splits = 1>}
      : (tensor<1x4x1x64xf32>, tensor<1x1x300x64xi8>, tensor<1x1x5xf32>, tensor<1x1x300x64xi8>, tensor<1x1x5xf32>) -> tensor<1x4x1x64xf32>
  return %o : tensor<1x4x1x64xf32>
}

// -----

// Two stages: the first step's rows are loaded before the loop, and each
// iteration carries the next step's rows (loaded before this step's scores).
// CHECK-LABEL: func.func @pipelined
// CHECK: gpu.func @pipelined_attention
// CHECK: vector.load
// CHECK: scf.for {{.*}} iter_args(
// CHECK: arith.minui
// CHECK: vector.load
// CHECK: gpu.shuffle  xor
func.func @pipelined(%q: tensor<1x4x1x64xf32>, %k: tensor<1x1x300x64xi8>, %ks: tensor<1x1x5xf32>) -> tensor<1x4x1x64xf32> {
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks)
      {k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>,
       gpu_tiling = #qattn.gpu_tiling<warps = 4, splits = 1, keys_per_step = 4, stages = 2>}
      : (tensor<1x4x1x64xf32>, tensor<1x1x300x64xi8>, tensor<1x1x5xf32>, tensor<1x1x300x64xi8>, tensor<1x1x5xf32>) -> tensor<1x4x1x64xf32>
  return %o : tensor<1x4x1x64xf32>
}

// -----

// The prefill kernel with a 1-stage ring (each tile copied, waited for and
// read in turn, a barrier on each side), int8 K/V without stage 2 (the stage
// kernel copies 16 codes per thread with aligned vector loads and stores),
// and stage-1 key blocks of 32 tokens: two key scales per 64-key tile, so
// each score is multiplied by its key's scale, read as pairs from the ring.
// CHECK-LABEL: func.func @prefill_mma_one_stage
// CHECK: gpu.launch_func @qattn_kernels::@prefill_mma_one_stage_prefill_stage
// CHECK: gpu.launch_func @qattn_kernels::@prefill_mma_one_stage_attention_mma {{.*}} dynamic_shared_memory_size %c12544_i32
// CHECK: gpu.func @prefill_mma_one_stage_prefill_stage(
// CHECK: vector.load {{.*}} {alignment = 16 : i64} : memref<1x2x100x64xi8>, vector<16xi8>
// CHECK: vector.store {{.*}} {alignment = 16 : i64} : memref<1x2x128x64xi8>, vector<16xi8>
// CHECK: vector.store {{.*}} {alignment = 16 : i64} : memref<1x2x128x64xf16>, vector<16xf16>
// CHECK: gpu.func @prefill_mma_one_stage_attention_mma(
// CHECK: scf.for
// CHECK-NEXT: gpu.barrier
// CHECK: nvgpu.device_async_copy
// CHECK: nvvm.cp.async.commit.group
// CHECK-NEXT: nvvm.cp.async.wait.group 0
// CHECK-NEXT: gpu.barrier
// CHECK: nvgpu.mma.sync({{.*}}) {mmaShape = [16, 8, 32]}
// CHECK: vector.load {{.*}} : memref<64xf32, #gpu.address_space<workgroup>>, vector<2xf32>
func.func @prefill_mma_one_stage(%q8: tensor<1x4x100x64xi8>, %qs: tensor<1x4x4xf32>, %k: tensor<1x2x100x64xi8>, %ks: tensor<1x2x4xf32>) -> tensor<1x4x100x64xf32> {
  %o = qattn.attention %q8 [%qs] keys(%k, %ks) values(%k, %ks)
      {q_stage1 = #qattn.stage1<block = 32>, k_stage1 = #qattn.stage1<block = 32>, v_stage1 = #qattn.stage1<block = 32>,
       gpu_tiling = #qattn.gpu_tiling<warps = 4, splits = 1, kernel = mma>}
      : (tensor<1x4x100x64xi8>, tensor<1x4x4xf32>, tensor<1x2x100x64xi8>, tensor<1x2x4xf32>, tensor<1x2x100x64xi8>, tensor<1x2x4xf32>) -> tensor<1x4x100x64xf32>
  return %o : tensor<1x4x100x64xf32>
}

// -----

// The warpgroup prefill kernel (kernel = wgmma, d = 128): the stage kernel
// writes each 64-key tile as its ring slot's image: K rows with their
// 16-byte chunks XOR-swizzled, V transposed by tile ([tile][channel][64
// keys]) with its 8-key chunks swizzled: a thread decodes 16 channels of 8
// keys and stores each channel's 8 keys as one 16-byte chunk. The
// attention kernel (asking ptxas for room for 3 CTAs per SM, all that shared
// memory holds) copies its 64 query rows into shared memory, swizzled like
// the K rows, and fences them for the async proxy; thread 0
// initializes one mbarrier per ring slot and starts each tile's three bulk
// copies (8 KiB K, 16 KiB V^T, 256 bytes of key scales) on the slot's full
// barrier, which every thread waits on; every thread arrives on the slot's
// empty barrier (128 arrivals) after the P.V that read it, and thread 0
// waits for those before refilling it (dynamic shared memory: the queries, 2
// stages and 4 barriers). QK^T is 4 wgmma m64n64k32 (s8 -> s32) with both
// operands through shared-memory descriptors, P.V 4 wgmma m64n128k16 (f16 ->
// f32) with A from registers (inline PTX: NVVM has no register-A form), the
// first of each batch starting with wgmma.fence; the accumulators are pinned
// after each wait. The softmax's row references are lazy: a warp vote sends
// the warp into the quad max (shuffles), new references and corrections
// only when some lane passes its rows' references; otherwise the
// corrections are 1. Each lane stores its two adjacent output channels of
// an 8-channel tile as one vector. The attention launch is early: its CTAs
// may start as the stage launch's retire, and wait for it after copying
// their queries (griddepcontrol).
// CHECK-LABEL: func.func @prefill_wgmma
// CHECK: gpu.launch_func @qattn_kernels::@prefill_wgmma_prefill_stage {{.*}}xf32>){{$}}
// CHECK: gpu.launch_func @qattn_kernels::@prefill_wgmma_attention_wgmma {{.*}} dynamic_shared_memory_size %c57888_i32 {{.*}} {qattn.early_launch}
// CHECK: gpu.func @prefill_wgmma_prefill_stage(
// CHECK: nvvm.griddepcontrol launch_dependents
// CHECK: arith.xori
// CHECK: vector.store {{.*}} : memref<1x2x192x128xi8>, vector<16xi8>
// CHECK: arith.xori
// CHECK: vector.store {{.*}} : memref<1x2x3x128x64xf16>, vector<8xf16>
// CHECK: gpu.func @prefill_wgmma_attention_wgmma({{.*}} nvvm.minctasm = 3 : i32
// CHECK-COUNT-4: vector.load {{.*}} : memref<1x4x150x128xi8>, vector<16xi8>
// CHECK: llvm.inline_asm has_side_effects "fence.proxy.async.shared::cta;"
// CHECK: nvvm.griddepcontrol wait
// CHECK: scf.if
// CHECK: llvm.inline_asm has_side_effects "mbarrier.init.shared::cta.b64 [$0], 1;", "r"
// CHECK: llvm.inline_asm has_side_effects "mbarrier.init.shared::cta.b64 [$0], 128;", "r"
// CHECK: llvm.inline_asm has_side_effects "mbarrier.init.shared::cta.b64 [$0], 1;", "r"
// CHECK: llvm.inline_asm has_side_effects "mbarrier.init.shared::cta.b64 [$0], 128;", "r"
// CHECK: fence.mbarrier_init.release.cluster
// CHECK: scf.if
// CHECK: llvm.inline_asm has_side_effects "{\0A.reg .u64 g;\0Ambarrier.arrive.expect_tx.shared::cta.b64 _, [$6], 24832;\0Acvta.to.global.u64 g, $1;\0Acp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [$0], [g], 8192, [$6];\0A{{.*}} [$2], [g], 16384, [$6];\0A{{.*}} [$4], [g], 256, [$6];\0A}", "r,l,r,l,r,l,r,~{memory}"
// CHECK: gpu.barrier
// CHECK: scf.for
// CHECK: llvm.inline_asm has_side_effects "{\0A.reg .pred done;\0ALAB_WAIT:\0Ambarrier.try_wait.parity.shared::cta.b64 done, [$0], $1;\0A@!done bra LAB_WAIT;\0A}", "r,r,~{memory}"
// CHECK: llvm.inline_asm has_side_effects "wgmma.fence.sync.aligned;\0A{\0A.reg .pred p;\0Asetp.ne.b32 p, $66, 0;\0Awgmma.mma_async.sync.aligned.m64n64k32.s32.s8.s8 {$0, {{.*}}, $31}, $64, $65, p;\0A}"
// CHECK-COUNT-3: llvm.inline_asm has_side_effects "{\0A.reg .pred p;\0Asetp.ne.b32 p, $66, 0;\0Awgmma.mma_async.sync.aligned.m64n64k32.s32.s8.s8 {$0, {{.*}}, $31}, $64, $65, p;\0A}"
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: llvm.inline_asm has_side_effects "", "=r,
// CHECK: nvvm.vote.sync  any
// CHECK-NEXT: scf.if
// CHECK: gpu.shuffle  xor
// CHECK: arith.select
// CHECK: llvm.inline_asm "ex2.approx.ftz.f32 $0, $1;", "=f,f"
// CHECK: } else {
// CHECK-NEXT: scf.yield %{{.*}}, %{{.*}}, %[[ONE:.*]], %[[ONE]] : f32, f32, f32, f32
// CHECK: llvm.inline_asm "ex2.approx.ftz.f32 $0, $1;", "=f,f"
// CHECK: llvm.inline_asm has_side_effects "wgmma.fence.sync.aligned;\0A{\0A.reg .pred p;\0Asetp.ne.b32 p, $133, 0;\0Awgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {$0, {{.*}}, $63}, {$128, $129, $130, $131}, $132, p, 1, 1, 0;\0A}"
// CHECK-COUNT-3: llvm.inline_asm has_side_effects "{\0A.reg .pred p;\0Asetp.ne.b32 p, $133, 0;\0Awgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {$0, {{.*}}, $63}, {$128, $129, $130, $131}, $132, p, 1, 1, 0;\0A}"
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: llvm.inline_asm has_side_effects "", "=f,
// CHECK: llvm.inline_asm has_side_effects "mbarrier.arrive.shared::cta.b64 _, [$0];", "r,~{memory}"
// CHECK: scf.if
// CHECK: mbarrier.try_wait.parity
// CHECK: cp.async.bulk.shared::cluster.global
// CHECK: scf.yield
// CHECK-COUNT-32: vector.store {{.*}} : memref<1x4x150x128xf32>, vector<2xf32>
// CHECK: gpu.return
func.func @prefill_wgmma(%q8: tensor<1x4x150x128xi8>, %qs: tensor<1x4x3xf32>, %k: tensor<1x2x150x128xi8>, %ks: tensor<1x2x3xf32>) -> tensor<1x4x150x128xf32> {
  %o = qattn.attention %q8 [%qs] keys(%k, %ks) values(%k, %ks)
      {q_stage1 = #qattn.stage1<block = 64>, k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>, causal,
       gpu_tiling = #qattn.gpu_tiling<warps = 4, splits = 1, kernel = wgmma, stages = 2>}
      : (tensor<1x4x150x128xi8>, tensor<1x4x3xf32>, tensor<1x2x150x128xi8>, tensor<1x2x3xf32>, tensor<1x2x150x128xi8>, tensor<1x2x3xf32>) -> tensor<1x4x150x128xf32>
  return %o : tensor<1x4x150x128xf32>
}

// -----

// The combine kernel at d = 256, wider than its 128 threads: each thread
// merges channels c and c + 128 (two unguarded rounds of stores), after
// each warp has merged its share of the 6 splits (2 per warp: warp 3's
// slots lie past the last split and are weighted out).
// CHECK-LABEL: func.func @combine_d256
// CHECK-DAG: %[[C4:.*]] = arith.constant 4 : index
// CHECK-DAG: %[[C128:.*]] = arith.constant 128 : index
// CHECK: gpu.launch_func @qattn_kernels::@combine_d256_combine blocks in (%[[C4]], %{{.*}}, %{{.*}}) threads in (%[[C128]], %{{.*}}, %{{.*}})
// CHECK: gpu.func @combine_d256_combine({{.*}}) workgroup(%[[MERGED:.*]] : memref<1032xf32, #gpu.address_space<workgroup>>)
// CHECK: arith.cmpi ult
// CHECK: arith.select {{.*}} : f32
// CHECK: gpu.barrier
// CHECK-NOT: scf.if
// CHECK: memref.store {{.*}} : memref<1x4x1x256xf32>
// CHECK-NOT: scf.if
// CHECK: memref.store {{.*}} : memref<1x4x1x256xf32>
// CHECK: gpu.return
func.func @combine_d256(%q: tensor<1x4x1x256xf32>, %k: tensor<1x1x300x256xi8>, %ks: tensor<1x1x5xf32>) -> tensor<1x4x1x256xf32> {
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks)
      {k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>,
       gpu_tiling = #qattn.gpu_tiling<warps = 4, splits = 6>}
      : (tensor<1x4x1x256xf32>, tensor<1x1x300x256xi8>, tensor<1x1x5xf32>, tensor<1x1x300x256xi8>, tensor<1x1x5xf32>) -> tensor<1x4x1x256xf32>
  return %o : tensor<1x4x1x256xf32>
}

// -----

// Many splits: the combine CTA grows to ceil(100 / 8) = 13 warps, 8 splits
// each, so every warp's loads go out in one round (no loop over chunks).
// CHECK-LABEL: func.func @combine_many_splits
// CHECK-DAG: %[[C416:.*]] = arith.constant 416 : index
// CHECK: gpu.launch_func @qattn_kernels::@combine_many_splits_combine blocks in (%{{.*}}, %{{.*}}, %{{.*}}) threads in (%[[C416]], %{{.*}}, %{{.*}})
// CHECK: gpu.func @combine_many_splits_combine({{.*}}) workgroup(%{{.*}} : memref<858xf32, #gpu.address_space<workgroup>>)
// CHECK-NOT: scf.for
// CHECK: gpu.barrier
// CHECK: gpu.return
func.func @combine_many_splits(%q: tensor<1x4x1x64xf32>, %k: tensor<1x1x3200x64xi8>, %ks: tensor<1x1x50xf32>) -> tensor<1x4x1x64xf32> {
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks)
      {k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>,
       gpu_tiling = #qattn.gpu_tiling<warps = 4, splits = 100>}
      : (tensor<1x4x1x64xf32>, tensor<1x1x3200x64xi8>, tensor<1x1x50xf32>, tensor<1x1x3200x64xi8>, tensor<1x1x50xf32>) -> tensor<1x4x1x64xf32>
  return %o : tensor<1x4x1x64xf32>
}

// -----

// Three warpgroups share the wgmma kernel's ring: a CTA of 12 warps owns 192
// query rows (grid 2 x 4 for 300 rows), the empty barriers count all 384
// threads, and the loop is the serial one (no wgmma issued before the tile
// loop) even with 3 stages. pv = e4m3: V^T is staged as bytes and P.V is
// wgmma m64n128k32 e4m3. ptxas is asked for room for one such CTA per SM
// (16 warps at most); the mma.sync kernel above asks for nothing.
// CHECK-LABEL: func.func @prefill_wgmma_3_warpgroups
// CHECK: gpu.launch_func @qattn_kernels::@prefill_wgmma_3_warpgroups_attention_wgmma_e4m3 blocks in (%c2, %c4, %c1) threads in (%c384, %c1, %c1)
// CHECK: gpu.func @prefill_wgmma_3_warpgroups_prefill_stage(
// CHECK: vector.store {{.*}} : memref<1x2x5x128x64xi8>, vector<16xi8>
// CHECK: gpu.func @prefill_wgmma_3_warpgroups_attention_wgmma_e4m3({{.*}} nvvm.minctasm = 1 : i32
// CHECK: "mbarrier.init.shared::cta.b64 [$0], 384;"
// CHECK-NOT: wgmma.mma_async
// CHECK: scf.for
// CHECK: wgmma.mma_async.sync.aligned.m64n64k32.s32.s8.s8
// CHECK: wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3
func.func @prefill_wgmma_3_warpgroups(%q8: tensor<1x4x300x128xi8>, %qs: tensor<1x4x5xf32>, %k: tensor<1x2x300x128xi8>, %ks: tensor<1x2x5xf32>) -> tensor<1x4x300x128xf32> {
  %o = qattn.attention %q8 [%qs] keys(%k, %ks) values(%k, %ks)
      {q_stage1 = #qattn.stage1<block = 64>, k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>, causal,
       gpu_tiling = #qattn.gpu_tiling<warps = 12, splits = 1, kernel = wgmma, stages = 3, pv = e4m3>}
      : (tensor<1x4x300x128xi8>, tensor<1x4x5xf32>, tensor<1x2x300x128xi8>, tensor<1x2x5xf32>, tensor<1x2x300x128xi8>, tensor<1x2x5xf32>) -> tensor<1x4x300x128xf32>
  return %o : tensor<1x4x300x128xf32>
}
