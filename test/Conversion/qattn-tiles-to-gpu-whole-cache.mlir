// RUN: qattn-opt %s -split-input-file --qattn-tile --qattn-pipeline --qattn-convert-to-gpu --canonicalize | FileCheck %s

// Without kv_lens every sequence holds the whole cache: the key loop's end is
// the cache's key count, read inside the grid (from the kernel's own view of
// K), not on the host, whose values a kernel cannot take.

// A static shape through the tile layer: the split count folds to a constant
// (B2 Hkv2 N1024: min(1584 / 4, 1024 / 128) = 8 splits), the grid is static,
// and the kernel's loop ends at 1024 keys.
// CHECK-LABEL: func.func @static_cache
// CHECK-NOT: tensor.dim
// CHECK: gpu.launch_func @qattn_kernels::@static_cache_decode_tiles blocks in (%c16, %c1, %c2) threads in (%c32, %c1, %c1)
// CHECK: gpu.launch_func @qattn_kernels::@static_cache_combine_tiles
// CHECK-LABEL: gpu.func @static_cache_decode_tiles
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c32
func.func @static_cache(%q: tensor<2x8x1x64xf16>, %kp: tensor<2x1024x64xi8>, %ks: tensor<2x2x16xf32>, %ks2: tensor<2x2x64x64xi8>, %kz2: tensor<2x2x64x64xi8>) -> tensor<2x8x1x64xf16> {
  %o = qattn.attention %q keys(%kp, %ks, %ks2, %kz2) values(%kp, %ks, %ks2, %kz2)
      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4], group = 16>, v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [4], group = 16>}
      : (tensor<2x8x1x64xf16>, tensor<2x1024x64xi8>, tensor<2x2x16xf32>, tensor<2x2x64x64xi8>, tensor<2x2x64x64xi8>, tensor<2x1024x64xi8>, tensor<2x2x16xf32>, tensor<2x2x64x64xi8>, tensor<2x2x64x64xi8>) -> tensor<2x8x1x64xf16>
  return %o : tensor<2x8x1x64xf16>
}

// -----

// A dynamic cache without lengths: the host sizes the splits from the
// capacity (K's dimension 2); the kernel takes that dimension as an i32
// beside K's view and ends its loop there.
// CHECK-LABEL: func.func @dynamic_cache
// CHECK: %[[CAP:.*]] = tensor.dim %arg1, %c2 : tensor<?x2x?x64xi8>
// CHECK: arith.ceildivui %[[CAP]], %c128 : index
// CHECK: %[[KN:.*]] = tensor.dim %arg1, %c2 : tensor<?x2x?x64xi8>
// CHECK: %[[KN32:.*]] = arith.index_cast %[[KN]] : index to i32
// CHECK: gpu.launch_func @qattn_kernels::@dynamic_cache_decode_tiles {{.*}} args(%{{.*}} : memref<1099511627776xi8>, %{{.*}} : i32, %[[KN32]] : i32
// CHECK-LABEL: gpu.func @dynamic_cache_decode_tiles
// CHECK-SAME: %[[K:[a-z0-9]+]]: memref<1099511627776xi8>, %{{[a-z0-9]+}}: i32, %[[N:[a-z0-9]+]]: i32
// CHECK: arith.index_cast %[[N]] : i32 to index
func.func @dynamic_cache(%q: tensor<?x8x1x64xf16>, %k: tensor<?x2x?x64xi8>, %ks: tensor<?x2x?xf32>) -> tensor<?x8x1x64xf16> {
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) {k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>}
      : (tensor<?x8x1x64xf16>, tensor<?x2x?x64xi8>, tensor<?x2x?xf32>, tensor<?x2x?x64xi8>, tensor<?x2x?xf32>) -> tensor<?x8x1x64xf16>
  return %o : tensor<?x8x1x64xf16>
}

// -----

// A static cache of 1000 keys is no whole number of 32-key tiles: its 63
// groups of 16 end at key 1008, so the last tile (key 992) has no second
// group. A tile's group past the end reads the first group's constants (its
// keys are masked), not a 64th row past the tensor.
// CHECK-LABEL: gpu.func @ragged_cache_decode_tiles
// CHECK: %[[G:.*]] = arith.divui %{{.*}}, %c16 : index
// CHECK: %[[NEXT:.*]] = arith.addi %[[G]], %c1 : index
// CHECK: %[[K16:.*]] = arith.addi %{{.*}}, %c16 : index
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[K16]], %{{.*}} : index
// CHECK: %[[ROW:.*]] = arith.select %[[IN]], %[[NEXT]], %[[G]] : index
// CHECK: arith.muli %{{.*}}, %c63 : index
// CHECK-NEXT: arith.addi %{{.*}}, %[[ROW]] : index
func.func @ragged_cache(%q: tensor<1x8x1x64xf16>, %kp: tensor<1x1000x64xi8>, %ks: tensor<1x2x16xf32>, %ks2: tensor<1x2x63x64xi8>, %kz2: tensor<1x2x63x64xi8>) -> tensor<1x8x1x64xf16> {
  %o = qattn.attention %q keys(%kp, %ks, %ks2, %kz2) values(%kp, %ks, %ks2, %kz2)
      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4], group = 16>, v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [4], group = 16>}
      : (tensor<1x8x1x64xf16>, tensor<1x1000x64xi8>, tensor<1x2x16xf32>, tensor<1x2x63x64xi8>, tensor<1x2x63x64xi8>, tensor<1x1000x64xi8>, tensor<1x2x16xf32>, tensor<1x2x63x64xi8>, tensor<1x2x63x64xi8>) -> tensor<1x8x1x64xf16>
  return %o : tensor<1x8x1x64xf16>
}
