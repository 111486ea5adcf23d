//===- Fragments.h - f16x2 registers and mma.sync fragments -----*- C++ -*-===//
//
// Part of the qattn project.
//
// The register-level pieces of the tensor-core decode path, free of any
// kernel's state: f16x2 pairs, byte selection and lop3 on 32-bit words, the
// m8n8 transpose, mma operand fragments, and the order in which a lane holds
// the channels of packed 2/4-bit codes. The tile layer's GPU lowering uses
// them.
//
//===----------------------------------------------------------------------===//

#ifndef QATTN_LIB_CONVERSION_QATTNTOGPU_FRAGMENTS_H
#define QATTN_LIB_CONVERSION_QATTNTOGPU_FRAGMENTS_H

#include "KernelCommon.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <string>

namespace mlir::qattn::kernels {

//===----------------------------------------------------------------------===//
// Bits and halves
//===----------------------------------------------------------------------===//

inline Value shr(ImplicitLocOpBuilder &b, Value x, int64_t s) {
  return s ? arith::ShRUIOp::create(b, x, i32Const(b, s)).getResult() : x;
}

/// The bits of an i32 as an f16x2 pair (vector<2xf16>).
inline Value half2(ImplicitLocOpBuilder &b, Value bits32) {
  Value v = vector::FromElementsOp::create(
      b, VectorType::get({1}, b.getI32Type()), ValueRange{bits32});
  return vector::BitCastOp::create(b, VectorType::get({2}, b.getF16Type()), v);
}

inline Value half2Const(ImplicitLocOpBuilder &b, double lo, double hi) {
  auto type = VectorType::get({2}, b.getF16Type());
  auto attr = DenseElementsAttr::get(
      type, ArrayRef<Attribute>{b.getF16FloatAttr(lo), b.getF16FloatAttr(hi)});
  return arith::ConstantOp::create(b, cast<TypedAttr>(attr));
}

/// x * y + z on f16x2 as one fma.rn.f16x2. math.fma would reach the GPU
/// lowering's libdevice call: per half, widened to f32 and back (PTX).
inline Value fma2(ImplicitLocOpBuilder &b, Value x, Value y, Value z) {
  return LLVM::FMAOp::create(b, x, y, z);
}

/// (x & mask) ^ c as one lop3. Written as an and and an or (or xor) of two
/// constants, it stays two instructions: LLVM emits no lop3, and ptxas,
/// which encodes one immediate per LOP3, does not merge them (SASS).
inline Value maskXor(ImplicitLocOpBuilder &b, Value x, uint32_t mask, Value c) {
  return inlineAsm(b, b.getI32Type(), ValueRange{x, c},
                   "lop3.b32 $0, $1, " + std::to_string(mask) + ", $2, 0x6a;",
                   "=r,r,r", /*pure=*/true);
}

/// Byte `lo` of the little-endian words `loWords` (vector of i32) and byte
/// `hi` of `hiWords` in the low bytes of the two halves of an i32 (prmt;
/// other bytes junk).
inline Value bytePair(ImplicitLocOpBuilder &b, Value loWords, int64_t lo,
                      Value hiWords, int64_t hi) {
  Value x = vector::ExtractOp::create(b, loWords, ArrayRef<int64_t>{lo / 4});
  Value y = vector::ExtractOp::create(b, hiWords, ArrayRef<int64_t>{hi / 4});
  // Selector nibble k picks result byte k from {x: 0-3, y: 4-7}.
  int64_t sel = (lo % 4) | (4 + hi % 4) << 8;
  return NVVM::PermuteOp::create(b, b.getI32Type(), x, y, i32Const(b, sel),
                                 NVVM::PermuteMode::DEFAULT);
}

/// Loads `bytes` bytes at `idx` of an i8 buffer as a vector of `wordBits`
/// words (the start is a multiple of `bytes`, rows multiples of 16 bytes).
inline Value loadWords(ImplicitLocOpBuilder &b, Value buffer, ValueRange idx,
                       int64_t bytes, int64_t wordBits) {
  Value v = vector::LoadOp::create(b, VectorType::get({bytes}, b.getI8Type()),
                                   buffer, idx, /*nontemporal=*/false,
                                   llvm::Align(std::min<int64_t>(bytes, 16)));
  return vector::BitCastOp::create(
      b, VectorType::get({bytes * 8 / wordBits}, b.getIntegerType(wordBits)), v);
}

/// A one-element vector of i16 as a one-element vector of i32.
inline Value widen(ImplicitLocOpBuilder &b, Value half) {
  Value h = vector::ExtractOp::create(b, half, ArrayRef<int64_t>{0});
  return vector::FromElementsOp::create(
      b, VectorType::get({1}, b.getI32Type()),
      ValueRange{arith::ExtUIOp::create(b, b.getI32Type(), h)});
}

/// Half `h` of an f16x2 pair in both halves (ptxas reads it through an
/// operand selector, .H0_H0 / .H1_H1).
inline Value broadcastHalf(ImplicitLocOpBuilder &b, Value pair, int64_t h) {
  return vector::ShuffleOp::create(b, pair, pair, ArrayRef<int64_t>{h, h});
}

//===----------------------------------------------------------------------===//
// mma.sync fragments
//===----------------------------------------------------------------------===//

/// The lane's f16x2 `pair` of an 8x8 matrix fragment (row g, columns 2t,
/// 2t + 1) replaced by its pair of the transposed matrix. No NVVM op has
/// movmatrix, so it is inline PTX.
inline Value transpose8x8(ImplicitLocOpBuilder &b, Value pair) {
  Value bits = vector::ExtractOp::create(
      b, vector::BitCastOp::create(b, VectorType::get({1}, b.getI32Type()), pair),
      ArrayRef<int64_t>{0});
  return half2(b, inlineAsm(b, b.getI32Type(), bits,
                            "movmatrix.sync.aligned.m8n8.trans.b16 $0, $1;",
                            "=r,r"));
}

/// Stacks f16x2 registers into an mma operand fragment.
inline Value fragment(ImplicitLocOpBuilder &b, ArrayRef<Value> pairs) {
  auto type = VectorType::get({int64_t(pairs.size()), 2}, b.getF16Type());
  Value v = zeros(b, type);
  for (auto [i, p] : llvm::enumerate(pairs))
    v = vector::InsertOp::create(b, p, v, ArrayRef<int64_t>{int64_t(i)});
  return v;
}

//===----------------------------------------------------------------------===//
// Channel order of packed codes
//===----------------------------------------------------------------------===//

/// Which local channel (0 .. n-1 of a lane's run of n channels) a code whose
/// bits start at `bit` of the run's bit string belongs to.
inline int64_t channelOfBit(int64_t bit, int64_t bits, PackOrder order) {
  int64_t inByte = bit % 8;
  int64_t k = order == PackOrder::lsb_first ? inByte / bits
                                            : (8 - bits - inByte) / bits;
  return bit / 8 * (8 / bits) + k;
}

/// A lane's K channel pairs (of its d/4 channels), in the order its mma B
/// registers hold them: the codes at bits s and 16 + s of each word. A
/// trailing half word (2-bit codes at d = 96: 48 bits a lane) is read
/// spread (spreadHalfWord: its two bytes at bytes 0 and 2), so its pairs are
/// the codes at bits s and 8 + s of the half word; a trailing byte (2-bit
/// codes at d = 80: 40 bits) likewise (spreadByte: its nibbles at bytes 0
/// and 2), its pairs the codes at bits s and 4 + s of the byte.
inline SmallVector<std::pair<int64_t, int64_t>>
keyPairs(int64_t headDim, int64_t bits, PackOrder order) {
  SmallVector<std::pair<int64_t, int64_t>> pairs;
  int64_t laneBits = headDim / 4 * bits, words = laneBits / 32;
  for (int64_t w = 0; w < words; ++w)
    for (int64_t s = 0; s < 16; s += bits)
      pairs.push_back({channelOfBit(32 * w + s, bits, order),
                       channelOfBit(32 * w + 16 + s, bits, order)});
  int64_t trailing = laneBits % 32;
  assert((trailing == 0 || trailing == 8 || trailing == 16) &&
         "a lane's K codes end in a whole word, half word or byte");
  for (int64_t s = 0; s < trailing / 2; s += bits)
    pairs.push_back({channelOfBit(32 * words + s, bits, order),
                     channelOfBit(32 * words + trailing / 2 + s, bits, order)});
  return pairs;
}

/// `words` (a K piece whose last word holds only a half word of codes, in
/// its low 16 bits) with that half word's two bytes moved to bytes 0 and 2,
/// the layout keyPairs reads it in.
inline Value spreadHalfWord(ImplicitLocOpBuilder &b, Value words) {
  auto type = cast<VectorType>(words.getType());
  int64_t last = type.getNumElements() - 1;
  Value word = vector::ExtractOp::create(b, words, ArrayRef<int64_t>{last});
  Value spread =
      NVVM::PermuteOp::create(b, b.getI32Type(), word, i32Const(b, 0),
                              i32Const(b, 0x4140), NVVM::PermuteMode::DEFAULT);
  return vector::InsertOp::create(b, spread, words, ArrayRef<int64_t>{last});
}

/// `words` (a K piece whose last word holds only a byte of codes, in its low
/// 8 bits) with that byte's two nibbles moved to bytes 0 and 2, the layout
/// keyPairs reads it in.
inline Value spreadByte(ImplicitLocOpBuilder &b, Value words) {
  auto type = cast<VectorType>(words.getType());
  int64_t last = type.getNumElements() - 1;
  Value word = vector::ExtractOp::create(b, words, ArrayRef<int64_t>{last});
  Value low = arith::AndIOp::create(b, word, i32Const(b, 0xf));
  Value high = arith::ShLIOp::create(
      b, arith::AndIOp::create(b, word, i32Const(b, 0xf0)), i32Const(b, 12));
  return vector::InsertOp::create(b, arith::OrIOp::create(b, low, high), words,
                                  ArrayRef<int64_t>{last});
}

/// A lane's V channels (of its d/8), in the order of the P.V n tiles.
inline SmallVector<int64_t> valueChannels(int64_t headDim, int64_t bits,
                                          PackOrder order) {
  SmallVector<int64_t> channels;
  for (int64_t bit = 0; bit < headDim / 8 * bits; bit += bits)
    channels.push_back(channelOfBit(bit, bits, order));
  return channels;
}

} // namespace mlir::qattn::kernels

#endif // QATTN_LIB_CONVERSION_QATTNTOGPU_FRAGMENTS_H
