// RUN: qattn-opt %s --qattn-tile=balance-splits=true --qattn-pipeline --qattn-convert-to-gpu --canonicalize | FileCheck %s
// RUN: qattn-opt %s --qattn-tile=balance-splits=true --loop-invariant-code-motion --qattn-pipeline --qattn-convert-to-gpu | FileCheck %s --check-prefix=HOISTED

// Balanced key chunks on the GPU: each warp of the grid finds its chunk from
// the lengths in device memory (the grid is sized from the batch alone),
// and each task of the combine its sequence's chunks.
// CHECK-LABEL: func.func @grid
// The grid is B x S points as without balancing.
// CHECK: %[[NS:.*]] = arith.maxui %{{.*}}, %c1 : index
// CHECK: %[[X:.*]] = arith.muli %[[NS]], %c2 : index
// CHECK: gpu.launch_func @qattn_kernels::@grid_decode_tiles blocks in (%[[X]], %c1, %{{.*}})
// The combine takes the lengths after its other arguments.
// CHECK: gpu.launch_func @qattn_kernels::@grid_combine_tiles {{.*}}, %{{.*}} : memref<1099511627776xf16>, %{{.*}} : i32, %{{.*}} : memref<1099511627776xi32>, %{{.*}} : i32) {qattn.early_launch}

// CHECK-LABEL: gpu.func @grid_decode_tiles
// CHECK-SAME: (%[[LENS:[a-z0-9]+]]: memref<1099511627776xi32>, %[[NB32:[a-z0-9]+]]: i32,
// CHECK: %[[NB:.*]] = arith.index_cast %[[NB32]] : i32 to index
// CHECK: %[[BX:.*]] = gpu.block_id  x
// CHECK: %[[BZ:.*]] = gpu.block_id  z
// CHECK: %[[S:.*]] = arith.divui %[[BX]], %c2 : index
// K = B S chunks; this warp's slot is b S + s.
// CHECK: %[[K:.*]] = arith.muli %[[NB]], %[[NS:.*]] : index
// CHECK: %[[ROW:.*]] = arith.muli %[[BZ]], %[[NS]] : index
// CHECK: %[[SLOT:.*]] = arith.addi %[[ROW]], %[[S]] : index
// The lengths' sum, 32 a round (a warp sum of lane l's kv_lens[r + l]).
// CHECK: %[[W:.*]] = scf.for %[[R:.*]] = %c0 to %[[NB]] step %c32 iter_args(%{{.*}} = %c0_i32) -> (i32) {
// CHECK:   memref.load %[[LENS]][%{{.*}}]
// CHECK:   nvvm.redux.sync  add %{{.*}}, %c-1_i32 : i32 -> i32
// CHECK: }
// C0 = 32 max(1, ceil(W / (32 K))) where the chunks of that size number
// at most K (a second warp sum), else the fewest tiles that do, bisected
// between C0 and C1 (from K - B), a warp sum a step.
// CHECK: %[[WI:.*]] = arith.index_castui %[[W]] : i32 to index
// CHECK: %[[K1:.*]] = arith.maxui %[[K]], %c1 : index
// CHECK: %[[KT:.*]] = arith.muli %[[K1]], %c32 : index
// CHECK: %[[TILES:.*]] = arith.ceildivui %[[WI]], %[[KT]] : index
// CHECK: %[[TILES1:.*]] = arith.maxui %[[TILES]], %c1 : index
// CHECK: %[[C0:.*]] = arith.muli %[[TILES1]], %c32 : index
// CHECK: %[[C0_32:.*]] = arith.index_castui %[[C0]] : index to i32
// CHECK: %[[N:.*]] = scf.for %{{.*}} = %c0 to %[[NB]] step %c32 iter_args(%{{.*}} = %c0_i32) -> (i32) {
// CHECK:   arith.ceildivui %{{.*}}, %[[C0_32]] : i32
// CHECK:   nvvm.redux.sync  add
// CHECK: }
// CHECK: %[[NI:.*]] = arith.index_castui %[[N]] : i32 to index
// CHECK: %[[FITS:.*]] = arith.cmpi ule, %[[NI]], %[[K]] : index
// CHECK: %[[C:.*]] = scf.if %[[FITS]] -> (index) {
// CHECK:   scf.yield %[[C0]] : index
// CHECK: } else {
// CHECK:   %[[KB:.*]] = arith.maxui %[[K]], %[[NB]] : index
// CHECK:   %[[SPARE:.*]] = arith.subi %[[KB]], %[[NB]] : index
// CHECK:   %[[LO:.*]] = arith.addi %[[TILES1]], %c1 : index
// CHECK:   %[[S1:.*]] = arith.maxui %[[SPARE]], %c1 : index
// CHECK:   %[[ST:.*]] = arith.muli %[[S1]], %c32 : index
// CHECK:   %[[HT:.*]] = arith.ceildivui %[[WI]], %[[ST]] : index
// CHECK:   %[[HI:.*]] = arith.maxui %[[HT]], %c1 : index
// CHECK:   %[[FOUND:.*]]:2 = scf.while (%[[A:.*]] = %[[LO]], %[[B:.*]] = %[[HI]]) : (index, index) -> (index, index) {
// CHECK:     %[[MORE:.*]] = arith.cmpi ult, %[[A]], %[[B]] : index
// CHECK:     scf.condition(%[[MORE]])
// CHECK:   } do {
// CHECK:     %[[SUM:.*]] = arith.addi %[[X:.*]], %[[Y:.*]] : index
// CHECK:     %[[MID:.*]] = arith.divui %[[SUM]], %c2 : index
// CHECK:     %[[SIZE:.*]] = arith.muli %[[MID]], %c32 : index
// CHECK:     %[[SIZE32:.*]] = arith.index_castui %[[SIZE]] : index to i32
// CHECK:     %[[M:.*]] = scf.for
// CHECK:       arith.ceildivui %{{.*}}, %[[SIZE32]] : i32
// CHECK:       nvvm.redux.sync  add
// CHECK:     %[[MI:.*]] = arith.index_castui %[[M]] : i32 to index
// CHECK:     %[[OK:.*]] = arith.cmpi ule, %[[MI]], %[[K]] : index
// CHECK:     %[[NEXT:.*]] = arith.addi %[[MID]], %c1 : index
// CHECK:     %[[NLO:.*]] = arith.select %[[OK]], %[[X]], %[[NEXT]] : index
// CHECK:     %[[NHI:.*]] = arith.select %[[OK]], %[[MID]], %[[Y]] : index
// CHECK:     scf.yield %[[NLO]], %[[NHI]] : index, index
// CHECK:   }
// CHECK:   %[[CB:.*]] = arith.muli %[[FOUND]]#1, %c32 : index
// CHECK:   scf.yield %[[CB]] : index
// CHECK: }
// Each lane's sequence has ceil(L / C) chunks; an inclusive scan gives its
// first slot, a ballot the lane whose slots hold this warp's, and shuffles
// from it the sequence's first slot and length.
// CHECK: %[[FOUND:.*]]:4 = scf.for %{{.*}} = %c0 to %[[NB]] step %c32 iter_args
// CHECK:   %[[L:.*]] = arith.select %{{.*}}, %{{.*}}, %c0_i32 : i32
// CHECK:   %[[N:.*]] = arith.ceildivui %[[L]], %{{.*}} : i32
// CHECK:   gpu.shuffle  up %[[N]], %c1_i32, %c32_i32 : i32
// CHECK:   gpu.shuffle  up %{{.*}}, %c16_i32, %c32_i32 : i32
// CHECK:   %[[END:.*]] = arith.addi %arg{{[0-9]+}}, %{{.*}} : i32
// CHECK:   %[[FIRST:.*]] = arith.subi %[[END]], %[[N]] : i32
// CHECK:   %[[HIT:.*]] = arith.andi %{{.*}}, %{{.*}} : i1
// CHECK:   %[[MASK:.*]] = nvvm.vote.sync  ballot %c-1_i32, %[[HIT]] -> i32
// CHECK:   %[[SRC:.*]] = "llvm.intr.cttz"(%[[MASK]]) <{is_zero_poison = false}> : (i32) -> i32
// CHECK:   gpu.shuffle  idx %[[FIRST]], %[[SRC]], %c32_i32 : i32
// CHECK:   gpu.shuffle  idx %[[L]], %[[SRC]], %c32_i32 : i32
// The round's chunks, for the next round's first slots.
// CHECK:   %[[ROUND:.*]] = nvvm.redux.sync  add %[[N]], %c-1_i32 : i32 -> i32
// CHECK:   arith.addi %arg{{[0-9]+}}, %[[ROUND]] : i32
// CHECK: }
// The results go through a warp minimum (redux.sync, all lanes equal), so
// that ptxas keeps them, and the addresses made from them, in uniform
// registers as it did the block index; the program then runs on the found
// sequence.
// CHECK: %[[SEQ32:.*]] = arith.index_castui %[[FOUND]]#1 : index to i32
// CHECK: %[[USEQ:.*]] = nvvm.redux.sync  umin %[[SEQ32]], %c-1_i32 : i32 -> i32
// CHECK: %[[SEQ:.*]] = arith.index_castui %[[USEQ]] : i32 to index
// CHECK: nvvm.redux.sync  umin
// CHECK: nvvm.redux.sync  umin
// CHECK: memref.load %[[LENS]][%[[SEQ]]]

// CHECK-LABEL: gpu.func @grid_combine_tiles
// The task's sequence's first slot and chunk count, from the same chunks.
// CHECK: nvvm.griddepcontrol  wait
// CHECK: scf.for
// CHECK: scf.for
// CHECK:   arith.ceildivui %{{.*}} : i32
// CHECK:   arith.cmpi ult
// CHECK: }
// Slot c is at grid point (c / S', c mod S').
// CHECK: arith.divui %{{.*}}, %{{.*}} : index
// CHECK: arith.remui %{{.*}}, %{{.*}} : index
// CHECK: vector.load

// Loop-invariant code motion before the lowering hoists the chunk count
// (B x S) out of the grid: the kernel takes it as an i32 argument.
// HOISTED: gpu.launch_func @qattn_kernels::@grid_decode_tiles
// HOISTED-SAME: %{{[0-9]+}} : i32){{$}}
// HOISTED: gpu.func @grid_decode_tiles({{.*}}, %[[ARG:.*]]: i32) workgroup
// HOISTED: %[[K:.*]] = arith.index_cast %[[ARG]] : i32 to index
// HOISTED: arith.maxui %[[K]], %{{.*}} : index
func.func @grid(%q: tensor<?x8x1x64xf16>, %kp: tensor<?x64x64xi8>, %ks: tensor<?x2x1xf32>, %ks2: tensor<?x2x4x64xi8>, %kz2: tensor<?x2x4x64xi8>,
                %lens: tensor<?xi32>, %table: tensor<?x?xi32>) -> tensor<?x8x1x64xf16> {
  %o = qattn.attention %q keys(%kp, %ks, %ks2, %kz2) values(%kp, %ks, %ks2, %kz2) lengths(%lens) pages(%table)
      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4], group = 16>, v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [4], group = 16>}
      : (tensor<?x8x1x64xf16>, tensor<?x64x64xi8>, tensor<?x2x1xf32>, tensor<?x2x4x64xi8>, tensor<?x2x4x64xi8>, tensor<?x64x64xi8>, tensor<?x2x1xf32>, tensor<?x2x4x64xi8>, tensor<?x2x4x64xi8>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x8x1x64xf16>
  return %o : tensor<?x8x1x64xf16>
}
