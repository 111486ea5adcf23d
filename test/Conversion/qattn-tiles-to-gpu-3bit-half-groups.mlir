// RUN: qattn-opt %s --qattn-tile --qattn-pipeline --qattn-convert-to-gpu --canonicalize | FileCheck %s --check-prefix=D96
// 3-bit V codes at d = 96 on the tile layer's GPU lowering
// (qattn-tiles-to-gpu-3bit.mlir has whole groups). A lane's 12 V channels are one
// and a half groups of 8 codes: lane g reads the two groups (6 bytes, 1-byte aligned) from the
// one holding its first code (byte 3 * (12g / 8)), widens both, and shifts the two words down
// by 4 * (12g mod 8) bits (16 for odd g), so that its 12 codes start the words as at whole
// groups. K's 24 channels a lane are 3 whole groups (9 bytes).
func.func @three_bit_d96(%q: tensor<?x8x1x96xf16>, %kp: tensor<?x64x72xi8>, %ks: tensor<?x2x1xf32>, %ks2: tensor<?x2x4x96xi8>, %kz2: tensor<?x2x4x96xi8>, %lens: tensor<?xi32>, %table: tensor<?x?xi32>) -> tensor<?x8x1x96xf16> {
  %o = qattn.attention %q keys(%kp, %ks, %ks2, %kz2) values(%kp, %ks, %ks2, %kz2) lengths(%lens) pages(%table)
      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [3], group = 16>, v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [3], group = 16, order = msb_first>}
      : (tensor<?x8x1x96xf16>, tensor<?x64x72xi8>, tensor<?x2x1xf32>, tensor<?x2x4x96xi8>, tensor<?x2x4x96xi8>, tensor<?x64x72xi8>, tensor<?x2x1xf32>, tensor<?x2x4x96xi8>, tensor<?x2x4x96xi8>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x8x1x96xf16>
  return %o : tensor<?x8x1x96xf16>
}

// D96-LABEL: gpu.func @three_bit_d96_decode_tiles
// D96: vector.load %{{.*}} {alignment = 1 : i64} : memref<1099511627776xi8>, vector<9xi8>
// D96: %[[GROUP:.*]] = arith.divui %[[CODE:.*]], %c8 : index
// D96-NEXT: arith.muli %[[GROUP]], %c3 : index
// D96: vector.load %{{.*}} {alignment = 1 : i64} : memref<1099511627776xi8>, vector<6xi8>
// The groups' bytes gathered most significant first (msb_first), widened, swapped back.
// D96: nvvm.prmt <default> %c18_i32
// D96: %[[W0:.*]] = nvvm.prmt <default> %c291_i32
// D96: nvvm.prmt <default> %c837_i32
// D96: %[[W1:.*]] = nvvm.prmt <default> %c291_i32
// D96-NEXT: %[[CODE2:.*]] = arith.muli %{{.*}}, %c12 : index
// D96-NEXT: %[[HALF:.*]] = arith.remui %[[CODE2]], %c8 : index
// D96-NEXT: %[[BITS:.*]] = arith.muli %[[HALF]], %c4 : index
// D96-NEXT: %[[S:.*]] = arith.index_cast %[[BITS]] : index to i32
// D96-NEXT: %[[LO:.*]] = llvm.intr.fshr(%[[W1]], %[[W0]], %[[S]])
// D96-NEXT: %[[HI:.*]] = arith.shrui %[[W1]], %[[S]] : i32
// D96-NEXT: vector.from_elements %[[LO]], %[[HI]] : vector<2xi32>
// D96-LABEL: gpu.func @three_bit_d96_combine_tiles
