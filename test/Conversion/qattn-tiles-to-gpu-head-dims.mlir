// RUN: qattn-opt %s --qattn-tile --qattn-pipeline --qattn-convert-to-gpu --canonicalize | FileCheck %s
// Head dims 32, 80, 96, 192 and 256 on the tile layer's GPU lowering. At d = 96 a
// lane holds 24 K channels (lane t) and 12 V channels (lane g). Its code
// pieces of a key (4-bit: 12 bytes of K, 6 of V; int8: 24 and 12) are no
// cp.async size, so the ring takes the tiles' code rows (48 or 96 bytes,
// whole 16-byte copies), unswizzled (a swizzle of 32-byte units would split a
// lane's piece: no xori), and each lane reads its piece as words aligned as
// its place in the row is (6 bytes: two words shifted by a funnel shift).
// The queries' 24 channels a lane: f16 48 bytes (16-byte aligned), int8 24
// (8-byte aligned).

func.func @d96_int4(%q: tensor<?x8x1x96xf16>, %kp: tensor<?x64x96xi8>, %ks: tensor<?x2x1xf32>, %ks2: tensor<?x2x4x96xi8>, %kz2: tensor<?x2x4x96xi8>, %lens: tensor<?xi32>, %table: tensor<?x?xi32>) -> tensor<?x8x1x96xf16> {
  %o = qattn.attention %q keys(%kp, %ks, %ks2, %kz2) values(%kp, %ks, %ks2, %kz2) lengths(%lens) pages(%table)
      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4], group = 16>, v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [4], group = 16>}
      : (tensor<?x8x1x96xf16>, tensor<?x64x96xi8>, tensor<?x2x1xf32>, tensor<?x2x4x96xi8>, tensor<?x2x4x96xi8>, tensor<?x64x96xi8>, tensor<?x2x1xf32>, tensor<?x2x4x96xi8>, tensor<?x2x4x96xi8>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x8x1x96xf16>
  return %o : tensor<?x8x1x96xf16>
}

// CHECK-LABEL: gpu.func @d96_int4_decode_tiles
// CHECK: vector.load %{{.*}} {alignment = 16 : i64} : memref<1099511627776xf16>, vector<24xf16>
// CHECK-NOT: arith.xori
// CHECK: scf.for
// CHECK: %[[K:.*]] = vector.load %{{.*}} {alignment = 4 : i64} : memref<{{[0-9]+}}xi32, #gpu.address_space<workgroup>>, vector<3xi32>
// CHECK: nvgpu.mma.sync
// CHECK: %[[V:.*]] = vector.load %{{.*}} {alignment = 4 : i64} : memref<{{[0-9]+}}xi32, #gpu.address_space<workgroup>>, vector<2xi32>
// CHECK: %[[LO:.*]] = vector.extract %[[V]][0]
// CHECK: %[[HI:.*]] = vector.extract %[[V]][1]
// CHECK: llvm.intr.fshr(%[[HI]], %[[LO]], %{{.*}})
// CHECK-NOT: arith.xori
// CHECK-LABEL: gpu.func @d96_int4_combine_tiles

func.func @d96_int8(%q: tensor<?x8x1x96xi8>, %qs: tensor<?x8x1xf32>, %k: tensor<?x2x64x96xi8>, %ks: tensor<?x2x1xf32>, %lens: tensor<?xi32>) -> tensor<?x8x1x96xf16> {
  %o = qattn.attention %q [%qs] keys(%k, %ks) values(%k, %ks) lengths(%lens)
      {q_stage1 = #qattn.stage1<block = 1>, k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>}
      : (tensor<?x8x1x96xi8>, tensor<?x8x1xf32>, tensor<?x2x64x96xi8>, tensor<?x2x1xf32>, tensor<?x2x64x96xi8>, tensor<?x2x1xf32>, tensor<?xi32>) -> tensor<?x8x1x96xf16>
  return %o : tensor<?x8x1x96xf16>
}

// CHECK-LABEL: gpu.func @d96_int8_decode_tiles
// CHECK: vector.load %{{.*}} {alignment = 8 : i64} : memref<1099511627776xi8>, vector<24xi8>
// CHECK-NOT: arith.xori
// CHECK: scf.for
// CHECK: vector.load %{{.*}} {alignment = 8 : i64} : memref<{{[0-9]+}}xi32, #gpu.address_space<workgroup>>, vector<6xi32>
// CHECK: nvgpu.mma.sync
// CHECK: vector.load %{{.*}} {alignment = 4 : i64} : memref<{{[0-9]+}}xi32, #gpu.address_space<workgroup>>, vector<3xi32>
// CHECK-NOT: arith.xori
// CHECK-LABEL: gpu.func @d96_int8_combine_tiles

// 2-bit K codes at d = 96 are 6 bytes a lane (its 24 channels): 1.5 words,
// read as a word and a half word whose two bytes a prmt (selector 0x4140)
// spreads to bytes 0 and 2, so that its code pairs sit 16 bits apart as in
// a whole word (keyPairs). No ring: neither K's 6-byte nor V's 3-byte
// pieces are a copy size, nor are their 24-byte rows whole 16-byte copies.
func.func @d96_int2(%q: tensor<?x8x1x96xf16>, %kp: tensor<?x64x48xi8>, %ks: tensor<?x2x1xf32>, %ks2: tensor<?x2x4x96xi8>, %kz2: tensor<?x2x4x96xi8>, %lens: tensor<?xi32>, %table: tensor<?x?xi32>) -> tensor<?x8x1x96xf16> {
  %o = qattn.attention %q keys(%kp, %ks, %ks2, %kz2) values(%kp, %ks, %ks2, %kz2) lengths(%lens) pages(%table)
      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [2], group = 16>, v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [2], group = 16>}
      : (tensor<?x8x1x96xf16>, tensor<?x64x48xi8>, tensor<?x2x1xf32>, tensor<?x2x4x96xi8>, tensor<?x2x4x96xi8>, tensor<?x64x48xi8>, tensor<?x2x1xf32>, tensor<?x2x4x96xi8>, tensor<?x2x4x96xi8>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x8x1x96xf16>
  return %o : tensor<?x8x1x96xf16>
}

// CHECK-LABEL: gpu.func @d96_int2_decode_tiles
// CHECK-NOT: cp.async
// CHECK: %[[SPREAD:.*]] = arith.constant 16704 : i32
// CHECK: %[[K:.*]] = vector.load %{{.*}} {alignment = 2 : i64} : memref<1099511627776xi8>, vector<6xi8>
// CHECK: %[[PAD:.*]] = vector.shuffle %[[K]], %{{.*}} [0, 1, 2, 3, 4, 5, 6, 7]
// CHECK: %[[WORDS:.*]] = vector.bitcast %[[PAD]] : vector<8xi8> to vector<2xi32>
// CHECK: %[[HALF:.*]] = vector.extract %[[WORDS]][1]
// CHECK: %[[SPREADHALF:.*]] = nvvm.prmt <default> %[[SPREAD]], %[[HALF]], %{{.*}} : i32
// CHECK: vector.insert %[[SPREADHALF]], %[[WORDS]] [1] : i32 into vector<2xi32>
// CHECK-NOT: cp.async
// CHECK-LABEL: gpu.func @d96_int2_combine_tiles

// Head dim 80 (4-bit): K's 10 code bytes a lane end in a half word, spread
// as at d96 2-bit; a lane's 10 V channels of a row's partials are stored as
// 4, 4 and 2; the combine's tasks of 32 channels end in a half task, whose
// upper lanes read the row's last 4 channels again and store nothing.
func.func @d80_int4(%q: tensor<?x8x1x80xf16>, %kp: tensor<?x64x80xi8>, %ks: tensor<?x2x1xf32>, %ks2: tensor<?x2x4x80xi8>, %kz2: tensor<?x2x4x80xi8>, %lens: tensor<?xi32>, %table: tensor<?x?xi32>) -> tensor<?x8x1x80xf16> {
  %o = qattn.attention %q keys(%kp, %ks, %ks2, %kz2) values(%kp, %ks, %ks2, %kz2) lengths(%lens) pages(%table)
      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4], group = 16>, v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [4], group = 16>}
      : (tensor<?x8x1x80xf16>, tensor<?x64x80xi8>, tensor<?x2x1xf32>, tensor<?x2x4x80xi8>, tensor<?x2x4x80xi8>, tensor<?x64x80xi8>, tensor<?x2x1xf32>, tensor<?x2x4x80xi8>, tensor<?x2x4x80xi8>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x8x1x80xf16>
  return %o : tensor<?x8x1x80xf16>
}

// CHECK-LABEL: gpu.func @d80_int4_decode_tiles
// CHECK: %[[SPREAD:.*]] = arith.constant 16704 : i32
// CHECK: vector.load %{{.*}} {alignment = 2 : i64} : memref<1099511627776xi8>, vector<10xi8>
// CHECK: nvvm.prmt <default> %[[SPREAD]]
// A lane's 10 channels of a partial row start 40 g bytes into it: stores
// 8-byte aligned (16 was a misaligned address on the H200 for odd g).
// CHECK: vector.store %{{.*}} {alignment = 8 : i64} : memref<1099511627776xf32>, vector<4xf32>
// CHECK: vector.store %{{.*}} {alignment = 8 : i64} : memref<1099511627776xf32>, vector<4xf32>
// CHECK: vector.store %{{.*}} {alignment = 8 : i64} : memref<1099511627776xf32>, vector<2xf32>
// CHECK-LABEL: gpu.func @d80_int4_combine_tiles
// CHECK: arith.minui %{{.*}}, %c76 : index
// CHECK: %[[IN:.*]] = arith.cmpi ult, %{{.*}}, %c80 : index
// CHECK-NEXT: scf.if %[[IN]] {
// CHECK: memref.store %{{.*}} : memref<1099511627776xf16>

// Head dim 256: a lane holds 64 K channels and 32 V ones; its K codes of a
// key (4-bit) are 32 bytes, read from the ring as two 16-byte-aligned
// halves of one vector. A row block's accumulators (64 registers a lane)
// and query fragments (32) leave the grid kernel the most registers a lane
// may have: 8 warps an SM (ptxas: 238 registers, no spills).
func.func @d256_int4(%q: tensor<?x8x1x256xf16>, %kp: tensor<?x64x256xi8>, %ks: tensor<?x2x1xf32>, %ks2: tensor<?x2x4x256xi8>, %kz2: tensor<?x2x4x256xi8>, %lens: tensor<?xi32>, %table: tensor<?x?xi32>) -> tensor<?x8x1x256xf16> {
  %o = qattn.attention %q keys(%kp, %ks, %ks2, %kz2) values(%kp, %ks, %ks2, %kz2) lengths(%lens) pages(%table)
      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4], group = 16>, v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [4], group = 16>}
      : (tensor<?x8x1x256xf16>, tensor<?x64x256xi8>, tensor<?x2x1xf32>, tensor<?x2x4x256xi8>, tensor<?x2x4x256xi8>, tensor<?x64x256xi8>, tensor<?x2x1xf32>, tensor<?x2x4x256xi8>, tensor<?x2x4x256xi8>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x8x1x256xf16>
  return %o : tensor<?x8x1x256xf16>
}

// CHECK-LABEL: gpu.func @d256_int4_decode_tiles
// CHECK-SAME: nvvm.minctasm = 8 : i32
// CHECK: scf.for
// CHECK: vector.load %{{.*}} {alignment = 16 : i64} : memref<{{[0-9]+}}xi32, #gpu.address_space<workgroup>>, vector<8xi32>
// CHECK: nvgpu.mma.sync

// Head dim 192: 48 K channels and 24 V ones a lane; its 4-bit K codes of a
// key (24 bytes) and V codes (12) go through the ring as the tile's rows of
// 96 bytes, unswizzled, read back as 6 and 3 words. Past d = 128 the grid
// kernel takes 8 warps an SM (ptxas: 216 registers, no spills).
func.func @d192_int4(%q: tensor<?x8x1x192xf16>, %kp: tensor<?x64x192xi8>, %ks: tensor<?x2x1xf32>, %ks2: tensor<?x2x4x192xi8>, %kz2: tensor<?x2x4x192xi8>, %lens: tensor<?xi32>, %table: tensor<?x?xi32>) -> tensor<?x8x1x192xf16> {
  %o = qattn.attention %q keys(%kp, %ks, %ks2, %kz2) values(%kp, %ks, %ks2, %kz2) lengths(%lens) pages(%table)
      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4], group = 16>, v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [4], group = 16>}
      : (tensor<?x8x1x192xf16>, tensor<?x64x192xi8>, tensor<?x2x1xf32>, tensor<?x2x4x192xi8>, tensor<?x2x4x192xi8>, tensor<?x64x192xi8>, tensor<?x2x1xf32>, tensor<?x2x4x192xi8>, tensor<?x2x4x192xi8>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x8x1x192xf16>
  return %o : tensor<?x8x1x192xf16>
}

// CHECK-LABEL: gpu.func @d192_int4_decode_tiles
// CHECK-SAME: nvvm.minctasm = 8 : i32
// CHECK: vector.load %{{.*}} {alignment = 16 : i64} : memref<1099511627776xf16>, vector<48xf16>
// CHECK-NOT: arith.xori
// CHECK: scf.for
// CHECK: vector.load %{{.*}} {alignment = 8 : i64} : memref<{{[0-9]+}}xi32, #gpu.address_space<workgroup>>, vector<6xi32>
// CHECK: nvgpu.mma.sync
// CHECK: vector.load %{{.*}} {alignment = 4 : i64} : memref<{{[0-9]+}}xi32, #gpu.address_space<workgroup>>, vector<3xi32>
// CHECK-NOT: arith.xori
// CHECK-LABEL: gpu.func @d192_int4_combine_tiles

// Head dim 32: 8 K channels and 4 V ones a lane, one 16-channel mma chunk
// of the queries per 8 lanes' pair (8 f16); 4-bit K codes of a key are one
// word, V's a half word (no copy size: the tile stays a register load).
func.func @d32_int4(%q: tensor<?x8x1x32xf16>, %kp: tensor<?x64x32xi8>, %ks: tensor<?x2x1xf32>, %ks2: tensor<?x2x4x32xi8>, %kz2: tensor<?x2x4x32xi8>, %lens: tensor<?xi32>, %table: tensor<?x?xi32>) -> tensor<?x8x1x32xf16> {
  %o = qattn.attention %q keys(%kp, %ks, %ks2, %kz2) values(%kp, %ks, %ks2, %kz2) lengths(%lens) pages(%table)
      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4], group = 16>, v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [4], group = 16>}
      : (tensor<?x8x1x32xf16>, tensor<?x64x32xi8>, tensor<?x2x1xf32>, tensor<?x2x4x32xi8>, tensor<?x2x4x32xi8>, tensor<?x64x32xi8>, tensor<?x2x1xf32>, tensor<?x2x4x32xi8>, tensor<?x2x4x32xi8>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x8x1x32xf16>
  return %o : tensor<?x8x1x32xf16>
}

// CHECK-LABEL: gpu.func @d32_int4_decode_tiles
// CHECK: vector.load %{{.*}} {alignment = 16 : i64} : memref<1099511627776xf16>, vector<8xf16>
// CHECK: scf.for
// CHECK: nvgpu.mma.sync({{.*}}) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>)
// CHECK-LABEL: gpu.func @d32_int4_combine_tiles

// 2-bit codes at d = 32: a lane's K codes of a key are 2 bytes, its V codes
// one byte (byte g of the key's 8-byte row), loaded as one (a 2-byte load was
// a misaligned address on the H200 for odd g).
func.func @d32_int2(%q: tensor<?x8x1x32xf16>, %kp: tensor<?x64x16xi8>, %ks: tensor<?x2x1xf32>, %ks2: tensor<?x2x4x32xi8>, %kz2: tensor<?x2x4x32xi8>, %lens: tensor<?xi32>, %table: tensor<?x?xi32>) -> tensor<?x8x1x32xf16> {
  %o = qattn.attention %q keys(%kp, %ks, %ks2, %kz2) values(%kp, %ks, %ks2, %kz2) lengths(%lens) pages(%table)
      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [2], group = 16>, v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [2], group = 16>}
      : (tensor<?x8x1x32xf16>, tensor<?x64x16xi8>, tensor<?x2x1xf32>, tensor<?x2x4x32xi8>, tensor<?x2x4x32xi8>, tensor<?x64x16xi8>, tensor<?x2x1xf32>, tensor<?x2x4x32xi8>, tensor<?x2x4x32xi8>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x8x1x32xf16>
  return %o : tensor<?x8x1x32xf16>
}

// CHECK-LABEL: gpu.func @d32_int2_decode_tiles
// CHECK: vector.load %{{.*}} {alignment = 2 : i64} : memref<1099511627776xi8>, vector<2xi8>
// CHECK: scf.for
// CHECK: vector.load %{{.*}} {alignment = 1 : i64} : memref<1099511627776xi8>, vector<1xi8>
// CHECK-LABEL: gpu.func @d32_int2_combine_tiles

// 2-bit codes at d = 80: a lane's 20 K channels are 5 bytes (a word and a
// byte, whose nibbles go to bytes 0 and 2 as keyPairs reads them), its 10 V
// channels 2.5 bytes, read from byte 20g / 8 (3 bytes) and shifted down by
// 20g mod 8 bits.
func.func @d80_int2(%q: tensor<?x8x1x80xf16>, %kp: tensor<?x64x40xi8>, %ks: tensor<?x2x1xf32>, %ks2: tensor<?x2x4x80xi8>, %kz2: tensor<?x2x4x80xi8>, %lens: tensor<?xi32>, %table: tensor<?x?xi32>) -> tensor<?x8x1x80xf16> {
  %o = qattn.attention %q keys(%kp, %ks, %ks2, %kz2) values(%kp, %ks, %ks2, %kz2) lengths(%lens) pages(%table)
      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [2], group = 16>, v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [2], group = 16>}
      : (tensor<?x8x1x80xf16>, tensor<?x64x40xi8>, tensor<?x2x1xf32>, tensor<?x2x4x80xi8>, tensor<?x2x4x80xi8>, tensor<?x64x40xi8>, tensor<?x2x1xf32>, tensor<?x2x4x80xi8>, tensor<?x2x4x80xi8>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x8x1x80xf16>
  return %o : tensor<?x8x1x80xf16>
}

// CHECK-LABEL: gpu.func @d80_int2_decode_tiles
// CHECK: vector.load %{{.*}} {alignment = 1 : i64} : memref<1099511627776xi8>, vector<5xi8>
// CHECK: %[[KW:.*]] = vector.bitcast %{{.*}} : vector<8xi8> to vector<2xi32>
// CHECK-NEXT: %[[TAIL:.*]] = vector.extract %[[KW]][1] : i32 from vector<2xi32>
// CHECK-NEXT: %[[LO:.*]] = arith.andi %[[TAIL]], %c15_i32 : i32
// CHECK-NEXT: %[[HI:.*]] = arith.andi %[[TAIL]], %c240_i32 : i32
// CHECK-NEXT: %[[UP:.*]] = arith.shli %[[HI]], %c12_i32 : i32
// CHECK-NEXT: %[[SPREAD:.*]] = arith.ori %[[LO]], %[[UP]] : i32
// CHECK-NEXT: vector.insert %[[SPREAD]], %[[KW]] [1] : i32 into vector<2xi32>
// CHECK: vector.load %{{.*}} {alignment = 1 : i64} : memref<1099511627776xi8>, vector<3xi8>
// CHECK: %[[VW:.*]] = vector.bitcast %{{.*}} : vector<4xi8> to vector<1xi32>
// CHECK-NEXT: %[[BITS:.*]] = arith.muli %{{.*}}, %c20 : index
// CHECK-NEXT: %[[OFF:.*]] = arith.remui %[[BITS]], %c8 : index
// CHECK-NEXT: %[[S:.*]] = arith.index_cast %[[OFF]] : index to i32
// CHECK-NEXT: %[[W:.*]] = vector.extract %[[VW]][0] : i32 from vector<1xi32>
// CHECK-NEXT: arith.shrui %[[W]], %[[S]] : i32
// CHECK-LABEL: gpu.func @d80_int2_combine_tiles

// msb_first 2-bit V at d = 80: a lane's codes end inside a byte, so it turns
// each byte's four codes to lsb_first order (fields 0-3 to 3-0) before the
// shift, and reads its channels in that order.
func.func @d80_int2_msb(%q: tensor<?x8x1x80xf16>, %kp: tensor<?x64x40xi8>, %ks: tensor<?x2x1xf32>, %ks2: tensor<?x2x4x80xi8>, %kz2: tensor<?x2x4x80xi8>, %lens: tensor<?xi32>, %table: tensor<?x?xi32>) -> tensor<?x8x1x80xf16> {
  %o = qattn.attention %q keys(%kp, %ks, %ks2, %kz2) values(%kp, %ks, %ks2, %kz2) lengths(%lens) pages(%table)
      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [2], group = 16>, v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [2], group = 16, order = msb_first>}
      : (tensor<?x8x1x80xf16>, tensor<?x64x40xi8>, tensor<?x2x1xf32>, tensor<?x2x4x80xi8>, tensor<?x2x4x80xi8>, tensor<?x64x40xi8>, tensor<?x2x1xf32>, tensor<?x2x4x80xi8>, tensor<?x2x4x80xi8>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x8x1x80xf16>
  return %o : tensor<?x8x1x80xf16>
}

// CHECK-LABEL: gpu.func @d80_int2_msb_decode_tiles
// CHECK: vector.load %{{.*}} {alignment = 1 : i64} : memref<1099511627776xi8>, vector<3xi8>
// CHECK: %[[VW:.*]] = vector.bitcast %{{.*}} : vector<4xi8> to vector<1xi32>
// CHECK-NEXT: %[[W:.*]] = vector.extract %[[VW]][0] : i32 from vector<1xi32>
// CHECK-NEXT: %[[F3:.*]] = arith.andi %[[W]], %c-1061109568_i32 : i32
// CHECK-NEXT: arith.shrui %[[F3]], %c6_i32 : i32
// CHECK-NEXT: %[[F2:.*]] = arith.andi %[[W]], %c808464432_i32 : i32
// CHECK-NEXT: arith.shrui %[[F2]], %c2_i32 : i32
// CHECK-NEXT: arith.ori
// CHECK-NEXT: %[[F1:.*]] = arith.andi %[[W]], %c202116108_i32 : i32
// CHECK-NEXT: arith.shli %[[F1]], %c2_i32 : i32
// CHECK-NEXT: %[[F0:.*]] = arith.andi %[[W]], %c50529027_i32 : i32
// CHECK-NEXT: arith.shli %[[F0]], %c6_i32 : i32
// CHECK-NEXT: arith.ori
// CHECK-NEXT: %[[LSB:.*]] = arith.ori
// CHECK-NEXT: %[[BITS:.*]] = arith.muli %{{.*}}, %c20 : index
// CHECK-NEXT: %[[OFF:.*]] = arith.remui %[[BITS]], %c8 : index
// CHECK-NEXT: %[[S:.*]] = arith.index_cast %[[OFF]] : index to i32
// CHECK-NEXT: arith.shrui %[[LSB]], %[[S]] : i32
// CHECK-LABEL: gpu.func @d80_int2_msb_combine_tiles
