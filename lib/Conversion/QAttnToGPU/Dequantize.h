//===- Dequantize.h - packed codes and group constants as f16x2 -*- C++ -*-===//
//
// Part of the qattn project.
//
// Exact stage-2 dequantization in f16x2 registers, free of any kernel's
// state: a pair of codes read in place within their bytes (1024 + M q), the
// group constants (s2, z2) of two channels as the matching f16x2 pairs, and
// the one subtract-multiply (or FMA) that makes q8 = (q - z2) * s2. The tile
// layer's GPU lowering uses them.
//
//===----------------------------------------------------------------------===//

#ifndef QATTN_LIB_CONVERSION_QATTNTOGPU_DEQUANTIZE_H
#define QATTN_LIB_CONVERSION_QATTNTOGPU_DEQUANTIZE_H

#include "Fragments.h"

namespace mlir::qattn::kernels {

// f16 has unit steps in [1024, 2048): or'ed onto bits b (< 1024) the
// pattern of 1024 reads as 1024 + b.
inline constexpr int64_t kMagic1024 = 0x6400;

/// The bytes of a bytePair as an f16x2 pair: each masked to a byte,
/// xor'ed with `flip`, or'ed with the exponent of 1024 (so it reads as
/// 1024 + the byte), then (x - minus) * times + plus.
inline Value constPair(ImplicitLocOpBuilder &b, Value bytes, Value flip,
                       const std::array<Value, 3> &affine) {
  // The magic's bits lie above the byte: xor sets them like or.
  Value magic = i32Const(b, kMagic1024 << 16 | kMagic1024);
  if (flip)
    magic = arith::XOrIOp::create(b, magic, flip);
  Value pair = half2(b, maskXor(b, bytes, 0x00ff00ff, magic));
  auto [minus, times, plus] = affine;
  return fma2(b, arith::SubFOp::create(b, pair, minus), times, plus);
}
/// dequantPair reads a code at bit `shift` of a 16-bit half in place
/// within its byte: 1024 + M q with M = 2^(shift % 8). The group
/// constants carry M: s2 / M, and z2 as 1024 + M z2 (anchor = min: z2).
inline int64_t codeScale(int64_t shift) { return int64_t(1) << (shift % 8); }
/// Whether codes at bit `shift` dequantize by one f16x2 FMA, x (s2 / M) +
/// c with c = -(1024 / M + z2) s2 (anchor = min: z2 - (1024 / M) s2), in
/// place of a subtract and a multiply: exact while c is an integer below
/// 2^11, which holds for every constant the encoder fits make (s2 at most
/// ceil(254 / (2^b - 1)) + 2 with fit = mse, |z2 s2| <= 127 + 1.5 s2;
/// docs/FORMAT.md) where M is large: 4-bit codes in the high nibble,
/// 2-bit codes in the top two bits. stageConstants makes c once per
/// channel (pair) and step, next to s2 and z2; made per use (for K's two
/// keys) it made ptxas spill at 128 registers (H200: B1 N32K 28.4 -> 28.7
/// us, B8 N4K 26.3 -> 26.9).
inline bool fusesAt(int64_t shift, int64_t bits) {
  int64_t s2 = llvm::divideCeil(254, (int64_t(1) << bits) - 1) + 2;
  return 2 * (1024 / codeScale(shift) * s2 + 127) + 3 * s2 <= 2 * 2048;
}
/// fusesAt's c from dequantPair's constants `s` and `z` (f16 or f16x2).
inline Value fusedConstant(ImplicitLocOpBuilder &b, Value s, Value z,
                           Stage2Anchor anchor) {
  if (anchor == Stage2Anchor::min) {
    Value minus1024 =
        isa<VectorType>(s.getType())
            ? half2Const(b, -1024, -1024)
            : arith::ConstantOp::create(b, b.getF16FloatAttr(-1024))
                  .getResult();
    return fma2(b, minus1024, s, z);
  }
  return arith::NegFOp::create(b, arith::MulFOp::create(b, z, s));
}
/// (minus, times, plus) of constPair that turn 1024 + the byte into the
/// constant: s2 is 1024 + s2 less 1024, over M; z2 is first biased to the
/// unsigned z2 + 128 (zeroFlip), so less 1152 it is z2.
using Affine = std::array<double, 3>;
inline Affine scaleAffine(int64_t m) { return {1024, 1.0 / m, 0}; }
inline Affine zeroAffine(int64_t m, Stage2Anchor anchor) {
  if (anchor == Stage2Anchor::min)
    return {1152, 1, 0};
  return {1152, double(m), 1024};
}
/// constPair's operands for `lo` in the low half and `hi` in the high one.
inline std::array<Value, 3> affinePair(ImplicitLocOpBuilder &b,
                                       const Affine &lo, const Affine &hi) {
  return {half2Const(b, lo[0], hi[0]), half2Const(b, lo[1], hi[1]),
          half2Const(b, lo[2], hi[2])};
}
inline Value zeroFlip(ImplicitLocOpBuilder &b) {
  return i32Const(b, 0x00800080);
}
/// (s2, z2 as dequantPair wants it: fusesAt's c where it fuses) of
/// channels lo and hi, whose `bits`-bit codes sit at bit `shift` of their
/// half, as f16x2 pairs. The s2 and z2 bytes come as (words holding byte
/// lo, words holding byte hi), often the same words twice. `fitBits` (0:
/// `bits`) is the width the encoder fit the constants for, which bounds s2:
/// 3-bit codes widened to 4 bits in registers keep 3-bit constants.
inline std::pair<Value, Value>
groupPairs(ImplicitLocOpBuilder &b, std::pair<Value, Value> s2,
           std::pair<Value, Value> z2, int64_t lo, int64_t hi, int64_t shift,
           int64_t bits, Stage2Anchor anchor, int64_t fitBits = 0) {
  int64_t m = codeScale(shift);
  Affine sc = scaleAffine(m), z = zeroAffine(m, anchor);
  Value s = constPair(b, bytePair(b, s2.first, lo, s2.second, hi), Value(),
                      affinePair(b, sc, sc));
  Value zc = constPair(b, bytePair(b, z2.first, lo, z2.second, hi), zeroFlip(b),
                       affinePair(b, z, z));
  bool fused = fusesAt(shift, fitBits ? fitBits : bits);
  return {s, fused ? fusedConstant(b, s, zc, anchor) : zc};
}

/// q8 = (q - z2) * s2 from the codes at bit `shift` of both halves of
/// `codes`. The code is masked in place within its byte (one shift serves
/// a word's upper bytes) and or'ed with 1024: x = 1024 + M q, M = 2^(shift
/// % 8). Then (x - (1024 + M z2)) * (s2 / M), exact in f16 (an integer
/// multiple of M below 2^15 less another, then a power-of-two rescale of
/// an integer in [-128, 127]). With anchor = min, q8 = z2 + q * s2:
/// (x - 1024) * (s2 / M) + z2, exact as well.
/// Where fusesAt(shift, fitBits or bits) (groupPairs' `fitBits`), `z` is
/// its c and the pair takes one FMA.
inline Value dequantPair(ImplicitLocOpBuilder &b, Value codes, int64_t shift,
                         int64_t bits, Value s, Value z, Stage2Anchor anchor,
                         int64_t fitBits = 0) {
  uint32_t mask = ((1 << bits) - 1) << shift % 8;
  Value pair =
      half2(b, maskXor(b, shr(b, codes, shift / 8 * 8), mask << 16 | mask,
                       i32Const(b, kMagic1024 << 16 | kMagic1024)));
  if (fusesAt(shift, fitBits ? fitBits : bits))
    return fma2(b, pair, s, z);
  if (anchor == Stage2Anchor::min)
    return fma2(b, arith::SubFOp::create(b, pair, half2Const(b, 1024, 1024)), s,
                z);
  return arith::MulFOp::create(b, arith::SubFOp::create(b, pair, z), s);
}

} // namespace mlir::qattn::kernels

#endif // QATTN_LIB_CONVERSION_QATTNTOGPU_DEQUANTIZE_H
