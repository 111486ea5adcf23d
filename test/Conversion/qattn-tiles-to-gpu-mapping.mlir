// RUN: qattn-opt %s --qattn-tile --qattn-pipeline --qattn-convert-to-gpu --canonicalize | FileCheck %s
// RUN: qattn-opt %s --qattn-tile=grid-warps-per-sm=16 --qattn-pipeline --qattn-convert-to-gpu | FileCheck %s --check-prefix=WARPS16
// RUN: qattn-opt %s --qattn-tile | sed -e 's/mapping = \[#gpu.block<linear_dim_3>, #gpu.block<linear_dim_0>/mapping = [#gpu.block<linear_dim_0>, #gpu.block<linear_dim_3>/' \
// RUN:   | not qattn-opt --qattn-convert-to-gpu 2>&1 | FileCheck %s --check-prefix=DYNAMIC
// RUN: qattn-opt %s --qattn-tile | sed -e 's/{mapping = \[[^]]*\], /{/' \
// RUN:   | not qattn-opt --qattn-convert-to-gpu 2>&1 | FileCheck %s --check-prefix=NONE

// The decode grid's kernel follows the forall's mapping: linear dims 0
// (fastest) and 1 on grid x, 2 on y, 3 on z. qattn-tile's default puts the
// 2 KV heads of a split side by side: grid x is splits x heads, the head
// x mod 2 and the split x / 2; the row tile is y and the batch entry z.
// CHECK-LABEL: func.func @grid
// CHECK: %[[NS:.*]] = arith.maxui %{{.*}}, %c1 : index
// CHECK: %[[X:.*]] = arith.muli %[[NS]], %c2 : index
// CHECK: gpu.launch_func @qattn_kernels::@grid_decode_tiles blocks in (%[[X]], %c1, %{{.*}})
// The kernel keeps the warps per SM the grid records resident: 12 for
// 32-key tiles (168 registers), or what qattn-tile was told.
// CHECK-LABEL: gpu.func @grid_decode_tiles
// CHECK-SAME: nvvm.minctasm = 12 : i32
// WARPS16: gpu.func @grid_decode_tiles{{.*}}nvvm.minctasm = 16 : i32
// CHECK: %[[BX:.*]] = gpu.block_id  x
// CHECK: %[[BZ:.*]] = gpu.block_id  z
// CHECK: %[[S:.*]] = arith.divui %[[BX]], %c2 : index
// CHECK: %[[HK:.*]] = arith.remui %[[BX]], %c2 : index
// CHECK: memref.load %{{.*}}[%[[BZ]]]

// The fastest dimension must have a size the kernel knows (a constant or
// the split count), and the grid a mapping at all.
// DYNAMIC: error: 'scf.forall' op maps a dimension of dynamic size other than the split to linear_dim_0
// NONE: error: 'scf.forall' op needs a mapping of its four dimensions to #gpu.block<linear_dim_0> .. <linear_dim_3>
func.func @grid(%q: tensor<?x8x1x64xf16>, %kp: tensor<?x64x64xi8>, %ks: tensor<?x2x1xf32>, %ks2: tensor<?x2x4x64xi8>, %kz2: tensor<?x2x4x64xi8>,
                %lens: tensor<?xi32>, %table: tensor<?x?xi32>) -> tensor<?x8x1x64xf16> {
  %o = qattn.attention %q keys(%kp, %ks, %ks2, %kz2) values(%kp, %ks, %ks2, %kz2) lengths(%lens) pages(%table)
      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4], group = 16>, v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [4], group = 16>}
      : (tensor<?x8x1x64xf16>, tensor<?x64x64xi8>, tensor<?x2x1xf32>, tensor<?x2x4x64xi8>, tensor<?x2x4x64xi8>, tensor<?x64x64xi8>, tensor<?x2x1xf32>, tensor<?x2x4x64xi8>, tensor<?x2x4x64xi8>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x8x1x64xf16>
  return %o : tensor<?x8x1x64xf16>
}
