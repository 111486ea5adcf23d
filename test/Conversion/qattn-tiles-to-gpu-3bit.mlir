// RUN: qattn-opt %s --qattn-tile --qattn-pipeline --qattn-convert-to-gpu --canonicalize | FileCheck %s
// 3-bit codes on the tile layer's GPU lowering, widened to words of 4-bit codes in the same
// bit order as they are read (per 3 bytes one prmt gathers the bytes, most significant first
// for msb_first; three mask-and-shift steps; msb_first swaps the word's bytes back), then the
// 4-bit dequantization. At d = 128 a tile's code rows (48 bytes a key) go through the ring
// unswizzled (a lane's 12 bytes of K or 6 of V would straddle the swizzle's 32-byte units);
// at d = 64 (rows of 24 bytes) each lane loads its 6 bytes into registers.

func.func @three_bit(%q: tensor<?x8x1x128xf16>, %kp: tensor<?x64x96xi8>, %ks: tensor<?x2x1xf32>, %ks2: tensor<?x2x4x128xi8>, %kz2: tensor<?x2x4x128xi8>, %vp: tensor<?x64x96xi8>, %lens: tensor<?xi32>, %table: tensor<?x?xi32>) -> tensor<?x8x1x128xf16> {
  %o = qattn.attention %q keys(%kp, %ks, %ks2, %kz2) values(%vp, %ks, %ks2, %kz2) lengths(%lens) pages(%table)
      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [3], group = 16>, v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [3], group = 16, order = msb_first>}
      : (tensor<?x8x1x128xf16>, tensor<?x64x96xi8>, tensor<?x2x1xf32>, tensor<?x2x4x128xi8>, tensor<?x2x4x128xi8>, tensor<?x64x96xi8>, tensor<?x2x1xf32>, tensor<?x2x4x128xi8>, tensor<?x2x4x128xi8>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x8x1x128xf16>
  return %o : tensor<?x8x1x128xf16>
}

// CHECK-LABEL: gpu.func @three_bit_decode_tiles
// The code rows' 16-byte copies, at their plain offsets: no swizzle (arith.xori) anywhere in
// the kernel (4-bit kernels swizzle theirs: qattn-tiles-to-gpu.mlir).
// CHECK-NOT: arith.xori
// CHECK: cp.async.cg.shared.global.L2::128B [$0], [g], 16;
// CHECK: scf.for
// K, lsb_first: the lane's 12 bytes as 3 words; bytes 0-2, then 3-5.
// CHECK: %[[KW:.*]] = vector.load %{{.*}} {alignment = 4 : i64} : memref<{{[0-9]+}}xi32, #gpu.address_space<workgroup>>, vector<3xi32>
// CHECK: %[[G0:.*]] = nvvm.prmt <default> %c528_i32, %{{.*}}, %{{.*}} : i32
// CHECK: %[[X:.*]] = arith.andi %[[G0]], %c16777215_i32 : i32
// CHECK: %[[HI12:.*]] = arith.andi %[[X]], %c16773120_i32 : i32
// CHECK: %[[S12:.*]] = arith.shli %[[HI12]], %c4_i32 : i32
// CHECK: %[[LO12:.*]] = arith.andi %[[X]], %c4095_i32 : i32
// CHECK: %[[T1:.*]] = arith.ori %[[LO12]], %[[S12]] : i32
// CHECK: arith.andi %[[T1]], %c264245184_i32 : i32
// CHECK: arith.andi %{{.*}}, %c943208504_i32 : i32
// CHECK: nvvm.prmt <default> %c1347_i32
// V, msb_first: the lane's 6 bytes (2-byte aligned) from the two words that hold them, shifted
// down by the half-word offset; bytes 2, 1, 0; the word's bytes swapped back.
// CHECK: %[[VW:.*]] = vector.load %{{.*}} {alignment = 4 : i64} : memref<{{[0-9]+}}xi32, #gpu.address_space<workgroup>>, vector<2xi32>
// CHECK: %[[V0:.*]] = vector.extract %[[VW]][0]
// CHECK: %[[V1:.*]] = vector.extract %[[VW]][1]
// CHECK: %[[SH:.*]] = arith.index_cast %{{.*}} : index to i32
// CHECK: %[[LOW:.*]] = llvm.intr.fshr(%[[V1]], %[[V0]], %[[SH]])
// CHECK: %[[HIGH:.*]] = arith.shrui %[[V1]], %[[SH]] : i32
// CHECK: nvvm.prmt <default> %c18_i32, %[[LOW]], %[[HIGH]] : i32
// CHECK: arith.andi %{{.*}}, %c117901063_i32 : i32
// CHECK-NEXT: %[[W:.*]] = arith.ori %{{.*}}, %{{.*}} : i32
// CHECK-NEXT: nvvm.prmt <default> %c291_i32, %[[W]], %[[W]] : i32
// CHECK-NOT: arith.xori
// CHECK-LABEL: gpu.func @three_bit_combine_tiles

func.func @three_bit_d64(%q: tensor<?x8x1x64xf16>, %kp: tensor<?x64x48xi8>, %ks: tensor<?x2x1xf32>, %ks2: tensor<?x2x4x64xi8>, %kz2: tensor<?x2x4x64xi8>, %lens: tensor<?xi32>, %table: tensor<?x?xi32>) -> tensor<?x8x1x64xf16> {
  %o = qattn.attention %q keys(%kp, %ks, %ks2, %kz2) values(%kp, %ks, %ks2, %kz2) lengths(%lens) pages(%table)
      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [3], group = 16>, v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [3], group = 16>}
      : (tensor<?x8x1x64xf16>, tensor<?x64x48xi8>, tensor<?x2x1xf32>, tensor<?x2x4x64xi8>, tensor<?x2x4x64xi8>, tensor<?x64x48xi8>, tensor<?x2x1xf32>, tensor<?x2x4x64xi8>, tensor<?x2x4x64xi8>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x8x1x64xf16>
  return %o : tensor<?x8x1x64xf16>
}

// CHECK-LABEL: gpu.func @three_bit_d64_decode_tiles
// CHECK: %[[K:.*]] = vector.load %{{.*}} {alignment = 2 : i64} : memref<1099511627776xi8>, vector<6xi8>
// CHECK: %[[KP:.*]] = vector.shuffle %[[K]], %{{.*}} [0, 1, 2, 3, 4, 5, 6, 7] : vector<6xi8>, vector<2xi8>
// CHECK: vector.bitcast %[[KP]] : vector<8xi8> to vector<2xi32>
// CHECK: nvvm.prmt <default> %c528_i32
// CHECK-LABEL: gpu.func @three_bit_d64_combine_tiles
