// RUN: qattn-opt %s --qattn-tile --qattn-pipeline --qattn-convert-to-gpu --canonicalize | FileCheck %s
// 3-bit codes on the tile layer's GPU lowering: register loads (a lane's 12 bytes of K at
// d = 128, 6 of V: no cp.async size), each 3 bytes widened to a word of 4-bit codes in the
// same order (one prmt gathers the bytes, most significant first for msb_first; three
// mask-and-shift steps; msb_first swaps the word's bytes back), then the 4-bit dequantization.

func.func @three_bit(%q: tensor<?x8x1x128xf16>, %kp: tensor<?x64x96xi8>, %ks: tensor<?x2x1xf32>, %ks2: tensor<?x2x4x128xi8>, %kz2: tensor<?x2x4x128xi8>, %vp: tensor<?x64x96xi8>, %lens: tensor<?xi32>, %table: tensor<?x?xi32>) -> tensor<?x8x1x128xf16> {
  %o = qattn.attention %q keys(%kp, %ks, %ks2, %kz2) values(%vp, %ks, %ks2, %kz2) lengths(%lens) pages(%table)
      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [3], group = 16>, v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [3], group = 16, order = msb_first>}
      : (tensor<?x8x1x128xf16>, tensor<?x64x96xi8>, tensor<?x2x1xf32>, tensor<?x2x4x128xi8>, tensor<?x2x4x128xi8>, tensor<?x64x96xi8>, tensor<?x2x1xf32>, tensor<?x2x4x128xi8>, tensor<?x2x4x128xi8>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x8x1x128xf16>
  return %o : tensor<?x8x1x128xf16>
}

// CHECK-LABEL: gpu.func @three_bit_decode_tiles
// K, lsb_first: bytes 0-2, then 3-5 of the lane's 12.
// CHECK: %[[K:.*]] = vector.load %{{.*}} {alignment = 4 : i64} : memref<1099511627776xi8>, vector<12xi8>
// CHECK: %[[KW:.*]] = vector.bitcast %[[K]] : vector<12xi8> to vector<3xi32>
// CHECK: %[[G0:.*]] = nvvm.prmt <default> %c528_i32, %{{.*}}, %{{.*}} : i32
// CHECK: %[[X:.*]] = arith.andi %[[G0]], %c16777215_i32 : i32
// CHECK: %[[HI12:.*]] = arith.andi %[[X]], %c16773120_i32 : i32
// CHECK: %[[S12:.*]] = arith.shli %[[HI12]], %c4_i32 : i32
// CHECK: %[[LO12:.*]] = arith.andi %[[X]], %c4095_i32 : i32
// CHECK: %[[T1:.*]] = arith.ori %[[LO12]], %[[S12]] : i32
// CHECK: arith.andi %[[T1]], %c264245184_i32 : i32
// CHECK: arith.andi %{{.*}}, %c943208504_i32 : i32
// CHECK: nvvm.prmt <default> %c1347_i32
// V, msb_first: 6 bytes padded to two words; bytes 2, 1, 0; the word's bytes swapped back.
// CHECK: %[[V:.*]] = vector.load %{{.*}} {alignment = 2 : i64} : memref<1099511627776xi8>, vector<6xi8>
// CHECK: %[[VP:.*]] = vector.shuffle %[[V]], %{{.*}} [0, 1, 2, 3, 4, 5, 6, 7] : vector<6xi8>, vector<2xi8>
// CHECK: vector.bitcast %[[VP]] : vector<8xi8> to vector<2xi32>
// CHECK: nvvm.prmt <default> %c18_i32
// CHECK: arith.andi %{{.*}}, %c117901063_i32 : i32
// CHECK-NEXT: %[[W:.*]] = arith.ori %{{.*}}, %{{.*}} : i32
// CHECK-NEXT: nvvm.prmt <default> %c291_i32, %[[W]], %[[W]] : i32
// CHECK-LABEL: gpu.func @three_bit_combine_tiles
