// RUN: qattn-opt %s --qattn-tile=tile-keys=16 --qattn-pipeline=static-slots=false --qattn-convert-to-gpu --canonicalize | FileCheck %s
// RUN: qattn-opt %s --qattn-tile=tile-keys=16 --qattn-pipeline=num-stages=3 --qattn-convert-to-gpu --canonicalize | FileCheck %s --check-prefix=STAGES3
// RUN: qattn-opt %s --qattn-tile=tile-keys=16 --qattn-pipeline=num-stages=1 --qattn-convert-to-gpu --canonicalize | FileCheck %s --check-prefix=STAGES1
// RUN: qattn-opt %s --qattn-tile --qattn-pipeline=static-slots=false --qattn-convert-to-gpu --canonicalize | FileCheck %s --check-prefix=WIDE

// The ring slots here are the dynamic ones (static-slots=false; the static
// ones: qattn-pipeline-static-slots.mlir, qattn-tiles-to-gpu-addresses.mlir).
// The checks without a prefix take 16-key tiles (one stage-2 group of 16 a
// tile); qattn-tile's default here, 32-key tiles of two groups, is WIDE's
// at the end.

// A paged decode with the int8 tail page, on the tile layer, as two kernels:
// one warp per grid point (x: split and KV head, the heads of a split side
// by side; y: row tile; z: batch entry), the tensors passed as flat views with their dynamic sizes as i32,
// and the split combine. The split count, computed on the host from the
// batch and the page table's width (qattn-tile), sizes the partial rows'
// dimension 3, which both kernels take as an i32, and grid x.
// CHECK-LABEL: func.func @paged_decode
// CHECK: %[[B:.*]] = tensor.dim %{{.*}}, %c0 : tensor<?x8x1x64xf16>
// CHECK: arith.divui %c2112, %{{.*}} : index
// CHECK: %[[NS:.*]] = arith.maxui %{{.*}}, %c1 : index
// CHECK: memref.reinterpret_cast %{{.*}} to offset: [0], sizes: [1099511627776], strides: [1] : memref<?x?xi32> to memref<1099511627776xi32>
// CHECK: %[[ACC:.*]] = memref.alloc(%[[B]], %[[NS]]) : memref<?x2x1x?x16x64xf32>
// CHECK: memref.reinterpret_cast %[[ACC]]
// CHECK: %[[NS32:.*]] = arith.index_cast %[[NS]] : index to i32
// CHECK: %[[NSX:.*]] = arith.muli %[[NS]], %c2 : index
// CHECK: gpu.launch_func @qattn_kernels::@paged_decode_decode_tiles blocks in (%[[NSX]], %c1, %[[B]]) threads in (%c32, %c1, %c1)
// CHECK-SAME: %[[NS32]] : i32)
// The combine: 16 tasks (a row's 32 channels) a batch entry, each of 1, 2
// or 4 warps as the split count asks (the kernel computes the same), in
// CTAs of 4 warps.
// CHECK: %[[TASKS:.*]] = arith.muli %[[B]], %c16 : index
// CHECK: %[[C:.*]] = arith.ceildivui %[[NS]], %c64 : index
// CHECK: %[[C3:.*]] = arith.divui %[[C]], %c3 : index
// CHECK: %[[CW:.*]] = arith.addi %[[C]], %[[C3]] : index
// CHECK: %[[W:.*]] = arith.minui %[[CW]], %c4 : index
// CHECK: %[[WARPS:.*]] = arith.muli %[[TASKS]], %[[W]] : index
// CHECK: %[[CTAS:.*]] = arith.ceildivui %[[WARPS]], %c4 : index
// CHECK: gpu.launch_func @qattn_kernels::@paged_decode_combine_tiles blocks in (%[[CTAS]], %c1, %c1) threads in (%c128, %c1, %c1)
// CHECK: %[[OUT:.*]] = bufferization.to_tensor
// CHECK: return %[[OUT]]

// The grid body over one lane's registers: the query B fragments, then the
// cache's key loop carrying the softmax state (f32 rows, vector<2x2xf32>
// accumulators) and, of each look-ahead tile, the byte of its slot in the
// shared-memory ring (qattn-pipeline's ring): the lanes' cp.async copies,
// one group per tile, wait for all but the next step's two groups before
// the slot is read back. S^T = K Q^T and O^T += V^T P^T on mma.sync, P^T by
// movmatrix; the copies drain at the loop's end. Then the tail's loop (a
// page of tiles at most: its look-ahead tiles stay registers, the words of
// K's and V's codes, constants and scale), and the stores of the partial
// rows.
// Here K and V read the same tensors: their streams still have regions of
// their own, 2 slots each of 768 bytes (512 of codes, 2 x 64 of constants,
// the scale's 16, up to a whole 128-byte line), then the staging areas
// (512): 3584 bytes, aligned to a line.
// The split count is the last partial's dimension 3: each split's share of
// the keys divides by it; grid x by the 2 KV heads (the split, the head).
// 16-key tiles of 4 rows: 128 registers, 16 warps per SM.
// CHECK-LABEL: gpu.func @paged_decode_decode_tiles
// CHECK-SAME: %[[NSA:[a-z0-9]+]]: i32) workgroup(%[[RING:.*]] : memref<896xi32, #gpu.address_space<workgroup>> {llvm.align = 128 : i64}) kernel attributes {known_block_size = array<i32: 32, 1, 1>, nvvm.minctasm = 16 : i32}
// CHECK: %[[NSI:.*]] = arith.index_cast %[[NSA]] : i32 to index
// CHECK: %[[BX:.*]] = gpu.block_id x
// CHECK-DAG: gpu.block_id z
// CHECK-DAG: gpu.block_id y
// CHECK: arith.divui %[[BX]], %c2 : index
// CHECK: arith.remui %[[BX]], %c2 : index
// CHECK: arith.divui %{{.*}}, %[[NSI]] : index
// CHECK: vector.load %{{.*}} : memref<1099511627776xf16>, vector<16xf16>
// K's codes (a lane's 8 bytes a key) are copied as the tile's rows (32
// bytes a key) in key order, 16 bytes a lane, swizzled, and ask L2 for
// whole lines; its constants' rows (s2, z2: 64 bytes each) are copied once
// per warp, 16 bytes by each of 4 lanes, and do not; then the tile's scale,
// by lane 0 alone. The same for V (a lane's codes 4 bytes a key). A warp
// barrier before the copies into a slot: every lane has read what the
// others copied of the tile that was there.
// CHECK: nvvm.bar.warp.sync
// CHECK: arith.xori
// CHECK: cp.async.cg.shared.global.L2::128B [$0], [g], 16;
// CHECK: %[[ROWLANE:.*]] = arith.cmpi ult, %{{.*}}, %c4 : index
// CHECK: scf.if %[[ROWLANE]] {
// CHECK: cp.async.cg.shared.global [$0], [g], 16;
// CHECK: scf.if %{{.*}} {
// CHECK: cp.async.cg.shared.global [$0], [g], 16;
// CHECK: %[[LANE0:.*]] = arith.cmpi ult, %{{.*}}, %c1 : index
// CHECK: scf.if %[[LANE0]] {
// CHECK-NEXT: cp.async.ca.shared.global [$0], [g], 4;
// CHECK: cp.async.commit_group;
// CHECK: arith.xori
// CHECK: cp.async.cg.shared.global.L2::128B [$0], [g], 16;
// CHECK: scf.if
// CHECK: cp.async.cg.shared.global [$0], [g], 16;
// CHECK: scf.if
// CHECK: cp.async.cg.shared.global [$0], [g], 16;
// CHECK: cp.async.ca.shared.global [$0], [g], 4;
// CHECK: cp.async.commit_group;
// CHECK: scf.for {{.*}} -> (f32, f32, f32, f32, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, index, index)
// CHECK: cp.async.commit_group;
// CHECK: cp.async.wait_group 2;
// The rows and scales other lanes copied, visible to every lane.
// CHECK-NEXT: nvvm.bar.warp.sync
// The K tile's group constants, converted once per warp: half the lanes
// (16 units) convert two pairs each from their runs (half a word at 4 bits,
// shifted down), store them to K's staging area after the slots, and each
// lane reads its pairs back 16 bytes at a time.
// CHECK: nvvm.bar.warp.sync
// CHECK: %[[UNIT:.*]] = arith.cmpi ult, %{{.*}}, %c16 : index
// CHECK: scf.if %[[UNIT]] {
// CHECK: arith.shrui
// CHECK: vector.store %{{.*}}, %[[RING]][%{{.*}}] {alignment = 8 : i64} : memref<896xi32, #gpu.address_space<workgroup>>, vector<2xi32>
// CHECK: vector.store %{{.*}}, %[[RING]][%{{.*}}] {alignment = 8 : i64} : memref<896xi32, #gpu.address_space<workgroup>>, vector<2xi32>
// CHECK-NEXT: {{^ *}}}{{$}}
// CHECK-NEXT: nvvm.bar.warp.sync
// Each A fragment is made at the mma that takes it: the codes of its keys
// read from the slot at the first (8 bytes a key), its constants' pairs,
// then the mma; the next fragment's dequantization follows it.
// CHECK: vector.load %[[RING]][%{{.*}}] {alignment = 8 : i64} : memref<896xi32, #gpu.address_space<workgroup>>, vector<2xi32>
// CHECK: vector.load %[[RING]][%{{.*}}] {alignment = 16 : i64} : memref<896xi32, #gpu.address_space<workgroup>>, vector<4xi32>
// CHECK: nvgpu.mma.sync({{.*}}) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
// CHECK-NEXT: vector.extract
// CHECK: lop3.b32
// CHECK: nvgpu.mma.sync
// V's: one 16-bit code chunk's 4 channels per unit, stored as 4 words.
// CHECK: nvvm.bar.warp.sync
// CHECK: vector.store %{{.*}}, %[[RING]][%{{.*}}] {alignment = 16 : i64} : memref<896xi32, #gpu.address_space<workgroup>>, vector<4xi32>
// CHECK: nvvm.bar.warp.sync
// The lazy max (d = 64): a lane's scores against their rows' max + 8 (base
// 2), one vote, and only when some score passed it the row max's shuffles,
// the moved max and the rescale of sums and accumulators.
// CHECK: %[[BAR:.*]] = arith.addf %{{.*}}, %{{.*}} : f32
// CHECK: arith.cmpf ogt, %{{.*}}, %[[BAR]] : f32
// CHECK: %[[PASSED:.*]] = nvvm.vote.sync any %{{.*}}, %{{.*}} -> i1
// CHECK: scf.if %[[PASSED]] -> (f32, f32, f32, f32, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>) {
// CHECK: gpu.shuffle xor %{{.*}}, %c4_i32
// CHECK: arith.cmpf ogt, %{{.*}}, %[[BAR]] : f32
// CHECK: ex2.approx.ftz.f32
// CHECK: arith.mulf %{{.*}} : vector<2x2xf32>
// CHECK: } else {
// CHECK-NOT: gpu.shuffle
// CHECK: ex2.approx.ftz.f32
// CHECK: movmatrix.sync.aligned.m8n8.trans.b16
// CHECK: nvgpu.mma.sync
// CHECK: scf.yield
// CHECK: cp.async.wait_all;
// The buffer's loop (1 stage, qattn-tile's choice) carries only the state
// and loads its int8 rows into registers in each step.
// CHECK: scf.for {{.*}} -> (f32, f32, f32, f32, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>) {
// CHECK-NOT: cp.async
// CHECK: vector.load
// CHECK-NOT: cp.async
// CHECK: scf.yield
// CHECK: memref.store
// The partial accumulators: each lane's two rows 2t, 2t + 1 where they are
// real ones (4 of the block's 8: a group of 4 heads, one query), its 8
// channels of each in channel order as two 16-byte stores.
// CHECK: %[[REAL:.*]] = arith.cmpi ult, %{{.*}}, %c4 : index
// CHECK: scf.if %[[REAL]] {
// CHECK-COUNT-2: vector.store %{{.*}} {alignment = 16 : i64} : memref<1099511627776xf32>, vector<4xf32>
// CHECK: scf.if
// CHECK-COUNT-2: vector.store %{{.*}} {alignment = 16 : i64} : memref<1099511627776xf32>, vector<4xf32>
// CHECK-NEXT: }
// CHECK-NEXT: gpu.return
// Three stages: three slots a stream, the loop carries two look-ahead tiles
// of each, and the waits leave two steps' groups (four) in flight.
// STAGES3-LABEL: gpu.func @paged_decode_decode_tiles
// STAGES3-SAME: workgroup(%{{.*}} : memref<1280xi32, #gpu.address_space<workgroup>> {llvm.align = 128 : i64})
// STAGES3: scf.for {{.*}} -> (f32, f32, f32, f32, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, index, index, index, index) {
// STAGES3: cp.async.wait_group 4;
// One stage: the tiles load inside the loop (none before it), which
// carries the softmax state only.
// STAGES1-LABEL: gpu.func @paged_decode_decode_tiles
// STAGES1-NOT: workgroup
// STAGES1-NOT: cp.async
// STAGES1-NOT: nvvm.bar.warp.sync
// STAGES1: scf.for {{.*}} -> (f32, f32, f32, f32, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>) {
// The combine walks the splits once, as many as the accumulators' dimension
// 3 says (run-time here).
// CHECK-LABEL: gpu.func @paged_decode_combine_tiles
// CHECK-SAME: (%{{[^:]*}}: memref<1099511627776xf32>, %{{[^:]*}}: i32, %[[CS:[^:]*]]: i32,
// CHECK-SAME: workgroup(%[[SHARED:.*]] : memref<136xf32, #gpu.address_space<workgroup>>)
// CHECK-SAME: known_block_size = array<i32: 128, 1, 1>, nvvm.minctasm = 1 : i32
// CHECK: %[[CSI:.*]] = arith.index_cast %[[CS]] : i32 to index
// CHECK: %[[C:.*]] = arith.ceildivui %[[CSI]], %c64 : index
// CHECK: %[[W:.*]] = arith.minui %{{.*}}, %c4 : index
// Warp g of the grid serves task g / W (those past the last task none), its
// 32 channels c0 (d = 64: two a row); split s to lane s mod 32 of the
// task's warp s / 32 mod W, 2 of a lane's splits a step (indices clamped to
// the last split), all their loads first (max, sum and 32 channels in
// 16-byte loads); the lane's running maximum rescales what it carries once
// a step, then each split adds its sum and channels weighed by e^(m_s - m)
// (those past the end weigh 0). One CTA per SM asked for (ptxas then keeps
// a step's loads in flight).
// CHECK: %[[T:.*]] = gpu.thread_id x
// CHECK: %[[LANE:.*]] = arith.remui %[[T]], %c32 : index
// CHECK: %[[WARP:.*]] = arith.divui %[[T]], %c32 : index
// CHECK: %[[BX:.*]] = gpu.block_id x
// CHECK: %[[G0:.*]] = arith.muli %[[BX]], %c4 : index
// CHECK: %[[G:.*]] = arith.addi %[[G0]], %[[WARP]] : index
// CHECK: %[[TASK:.*]] = arith.divui %[[G]], %[[W]] : index
// CHECK: %[[SUB:.*]] = arith.remui %[[G]], %[[W]] : index
// CHECK: %[[REAL:.*]] = arith.cmpi ult, %[[TASK]], %{{.*}} : index
// CHECK: %[[SPACING:.*]] = arith.muli %[[W]], %c32 : index
// CHECK: %[[SUB32:.*]] = arith.muli %[[SUB]], %c32 : index
// CHECK: %[[FIRST:.*]] = arith.addi %[[LANE]], %[[SUB32]] : index
// CHECK: %[[END:.*]] = arith.select %[[REAL]], %[[CSI]], %c0 : index
// CHECK: %[[LAST:.*]] = arith.subi %[[CSI]], %c1 : index
// CHECK: %[[STEP:.*]] = arith.muli %[[W]], %c64 : index
// CHECK: scf.for %[[S:.*]] = %[[FIRST]] to %[[END]] step %[[STEP]] iter_args({{.*}}) -> (f32, f32, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>) {
// CHECK: arith.minui %[[S]], %[[LAST]] : index
// CHECK: %[[S2:.*]] = arith.addi %[[S]], %[[SPACING]] : index
// CHECK: arith.minui %[[S2]], %[[LAST]] : index
// CHECK-COUNT-2: memref.load
// CHECK-COUNT-8: vector.load %{{.*}} {alignment = 16 : i64} : memref<1099511627776xf32>, vector<4xf32>
// CHECK-NOT: ex2.approx
// CHECK-COUNT-2: memref.load
// CHECK-COUNT-8: vector.load
// CHECK-NOT: vector.load
// CHECK-COUNT-2: arith.maximumf
// CHECK: ex2.approx.ftz.f32
// CHECK-COUNT-8: arith.mulf %{{.*}} : vector<4xf32>
// CHECK: ex2.approx.ftz.f32
// CHECK-COUNT-8: vector.fma
// CHECK: ex2.approx.ftz.f32
// CHECK-COUNT-8: vector.fma
// CHECK: scf.yield
// The warp's maximum, each lane weighed against it, the warp's sum, then
// the lanes' partial rows reduced and scattered in five shuffle steps (16
// values sent at the first, 1 at the last) so that lane l holds channel l.
// CHECK-COUNT-5: gpu.shuffle  xor %{{.*}}, %c{{16|8|4|2|1}}_i32
// CHECK: ex2.approx.ftz.f32
// CHECK-COUNT-5: gpu.shuffle  xor %{{.*}}, %c{{16|8|4|2|1}}_i32
// CHECK-COUNT-16: gpu.shuffle  xor %{{.*}}, %c16_i32
// CHECK-COUNT-8: gpu.shuffle  xor %{{.*}}, %c8_i32
// CHECK: gpu.shuffle  xor %{{.*}}, %c1_i32
// CHECK-NOT: gpu.shuffle
// The warps meet in shared memory (34 floats each: channels, max, sum);
// the first of a task weighs its task's W by e^(M_w - M) and writes the row.
// CHECK: memref.store %{{.*}}, %[[SHARED]][%{{.*}}]
// CHECK-COUNT-2: memref.store %{{.*}}, %[[SHARED]]
// CHECK: gpu.barrier
// CHECK: %[[FIRSTW:.*]] = arith.cmpi eq, %[[SUB]], %c0 : index
// CHECK: %[[WRITES:.*]] = arith.andi %[[REAL]], %[[FIRSTW]] : i1
// CHECK: scf.if %[[WRITES]]
// CHECK-COUNT-4: arith.cmpi ugt, %[[W]], %c{{0|1|2|3}} : index
// CHECK-COUNT-4: ex2.approx.ftz.f32
// CHECK: arith.divf
// CHECK: arith.truncf {{.*}} : f32 to f16
// CHECK: memref.store
// 32-key tiles of two stage-2 groups of 16: 168 registers, 12 warps per SM.
// A slot holds the codes of 32 keys (1024 bytes, copied as rows: two
// 16-byte copies a lane), two rows of constants per group (256) and the
// scale (16), 1408 bytes with the rest of its last 128-byte line; after the
// 2 x 2 slots, K's and V's staging areas, 4d bytes per group (1024): 6656
// bytes. Each tile copies its 4 constant rows (s2
// and z2 of each group), 16 bytes by each of 4 lanes, and the warp
// converts both groups between one pair of barriers, each into its own
// area.
// WIDE: arith.divui %c1584, %{{.*}} : index
// WIDE-LABEL: gpu.func @paged_decode_decode_tiles
// WIDE-SAME: workgroup(%[[RING:.*]] : memref<1664xi32, #gpu.address_space<workgroup>> {llvm.align = 128 : i64}) kernel attributes {known_block_size = array<i32: 32, 1, 1>, nvvm.minctasm = 12 : i32}
// WIDE-COUNT-2: cp.async.cg.shared.global.L2::128B [$0], [g], 16;
// WIDE-COUNT-4: cp.async.cg.shared.global [$0], [g], 16;
// WIDE: cp.async.ca.shared.global [$0], [g], 4;
// WIDE: scf.for {{.*}} step %c32
// WIDE: cp.async.wait_group 2;
// WIDE: nvvm.bar.warp.sync
// WIDE-COUNT-4: vector.store %{{.*}}, %[[RING]][%{{.*}}] {alignment = 8 : i64} : memref<1664xi32, #gpu.address_space<workgroup>>, vector<2xi32>
// WIDE-NOT: vector.store %{{.*}}, %[[RING]]
// WIDE: nvvm.bar.warp.sync
// WIDE-COUNT-4: nvgpu.mma.sync
// V: one barrier pair, then its two groups' stores.
// WIDE: nvvm.bar.warp.sync
// WIDE-COUNT-2: vector.store %{{.*}}, %[[RING]][%{{.*}}] {alignment = 16 : i64} : memref<1664xi32, #gpu.address_space<workgroup>>, vector<4xi32>
// WIDE: nvvm.bar.warp.sync
// WIDE: gpu.return
func.func @paged_decode(%q: tensor<?x8x1x64xf16>, %kp: tensor<?x64x64xi8>, %ks: tensor<?x2x1xf32>, %ks2: tensor<?x2x4x64xi8>, %kz2: tensor<?x2x4x64xi8>,
                        %kb: tensor<?x2x64x64xi8>, %kbs: tensor<?x2xf32>, %lens: tensor<?xi32>, %table: tensor<?x?xi32>) -> tensor<?x8x1x64xf16> {
  %o = qattn.attention %q keys(%kp, %ks, %ks2, %kz2) values(%kp, %ks, %ks2, %kz2) buffers(%kb, %kbs, %kb, %kbs) lengths(%lens) pages(%table)
      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4], group = 16>, v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [4], group = 16>}
      : (tensor<?x8x1x64xf16>, tensor<?x64x64xi8>, tensor<?x2x1xf32>, tensor<?x2x4x64xi8>, tensor<?x2x4x64xi8>, tensor<?x64x64xi8>, tensor<?x2x1xf32>, tensor<?x2x4x64xi8>, tensor<?x2x4x64xi8>, tensor<?x2x64x64xi8>, tensor<?x2xf32>, tensor<?x2x64x64xi8>, tensor<?x2xf32>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x8x1x64xf16>
  return %o : tensor<?x8x1x64xf16>
}
