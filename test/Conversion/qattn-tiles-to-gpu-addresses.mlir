// RUN: qattn-opt %s --qattn-tile --qattn-pipeline --qattn-convert-to-gpu --canonicalize | FileCheck %s
// RUN: qattn-opt %s --qattn-tile --qattn-pipeline=static-slots=true --qattn-convert-to-gpu --canonicalize | FileCheck %s --check-prefix=STATIC

// A paged 4-bit cache at d = 128 in tiles of 32 keys: the look-ahead loads of
// a step read the page table once for K's tile and V's, and a lane's pieces
// are addressed as its first one's plus constants (whole rows of 128 bytes
// here, whole 512-byte swizzle periods of the ring), which ptxas folds into
// the copies instead of keeping a register per piece.
// CHECK-LABEL: gpu.func @paged_d128_decode_tiles
// CHECK: scf.for %{{.*}} step %c32
// CHECK: memref.load %{{.*}} : memref<{{[0-9]+}}xi32>
// CHECK-NOT: memref.load
// K: a lane's keys g, g + 8, g + 16, g + 24.
// CHECK: arith.addi %[[K0:[0-9]+]], %c1024 : index
// CHECK-NEXT: arith.addi %[[K0]], %c2048 : index
// CHECK-NEXT: arith.addi %[[K0]], %c3072 : index
// CHECK-NOT: memref.load
// V: its code rows, 16 bytes a lane, swizzled once; copy j is 512 j ring
// bytes and 8 j rows on.
// CHECK: arith.xori
// CHECK-NOT: memref.load
// CHECK: arith.addi %[[DST:[0-9]+]], %c512 : index
// CHECK-NEXT: arith.addi %[[SRC:[0-9]+]], %c1024 : index
// CHECK: arith.addi %[[DST]], %c1024 : index
// CHECK-NEXT: arith.addi %[[SRC]], %c2048 : index
// CHECK: arith.addi %[[DST]], %c1536 : index
// CHECK-NEXT: arith.addi %[[SRC]], %c3072 : index
// CHECK-NOT: memref.load
// CHECK: cp.async.wait_group 2;

// qattn-pipeline's static slots: the loop unrolled by 2 (64 keys a step)
// carries no ring slots, only the state (maxima, sums, accumulators), and
// waits for each of its two tiles with the next tile's K and V copies left
// in flight; the epilogue (one step of 32 keys) after the unrolled loop's
// copies drain.
// STATIC-LABEL: gpu.func @paged_d128_decode_tiles
// STATIC: scf.for {{.*}} step %c64 iter_args({{.*}}) -> (f32, f32, f32, f32, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>) {
// STATIC: cp.async.wait_group 2;
// STATIC: cp.async.wait_group 2;
// STATIC: cp.async.wait_all;
// STATIC-NEXT: scf.for {{.*}} step %c32 iter_args
// STATIC: cp.async.wait_group 2;
func.func @paged_d128(%q: tensor<?x4x1x128xf16>, %kp: tensor<?x64x128xi8>, %ks: tensor<?x2x1xf32>, %kg: tensor<?x2x4x128xi8>, %kz: tensor<?x2x4x128xi8>,
                      %vp: tensor<?x64x128xi8>, %vs: tensor<?x2x1xf32>, %vg: tensor<?x2x4x128xi8>, %vz: tensor<?x2x4x128xi8>,
                      %lens: tensor<?xi32>, %table: tensor<?x?xi32>) -> tensor<?x4x1x128xf16> {
  %o = qattn.attention %q keys(%kp, %ks, %kg, %kz) values(%vp, %vs, %vg, %vz) lengths(%lens) pages(%table)
      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4], group = 16>, v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [4], group = 16>}
      : (tensor<?x4x1x128xf16>, tensor<?x64x128xi8>, tensor<?x2x1xf32>, tensor<?x2x4x128xi8>, tensor<?x2x4x128xi8>, tensor<?x64x128xi8>, tensor<?x2x1xf32>, tensor<?x2x4x128xi8>, tensor<?x2x4x128xi8>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x4x1x128xf16>
  return %o : tensor<?x4x1x128xf16>
}
