//===- FormatMath.h - scalar IR for the quantized formats -------*- C++ -*-===//
//
// Part of the qattn project.
//
// Emits the scalar arithmetic of docs/FORMAT.md (rounding, stage-1 and stage-2
// quantization, bit packing, the SAS exponential) as arith/math ops. Every
// lowering that touches the format calls these, so each rule is written once.
//
//===----------------------------------------------------------------------===//

#ifndef QATTN_CONVERSION_FORMATMATH_H
#define QATTN_CONVERSION_FORMATMATH_H

#include "qattn/Dialect/QAttn/IR/QAttnDialect.h"

#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::qattn::format {

Value indexConst(ImplicitLocOpBuilder &b, int64_t v);
Value i32Const(ImplicitLocOpBuilder &b, int64_t v);
Value f32Const(ImplicitLocOpBuilder &b, double v);

/// Converts a float of any width to f32.
Value toF32(ImplicitLocOpBuilder &b, Value x);
/// Converts an f32 to `type` (f32, f16 or bf16), rounding to nearest even.
Value fromF32(ImplicitLocOpBuilder &b, Value x, Type type);

/// round(x), halfway cases away from zero.
Value roundHalfAway(ImplicitLocOpBuilder &b, Value x);

/// Stage-1 scale from a block's max |X|: m / 127 rounded to the storage type.
/// Returns the stored value (`storageType`) and its f32 reading.
std::pair<Value, Value> stage1Scale(ImplicitLocOpBuilder &b, Value absMax,
                                    Type storageType);

/// q8 = 0 if s == 0, else clamp(round(x / s), -127, 127); x, s f32; i8 result.
Value quantizeInt8(ImplicitLocOpBuilder &b, Value x, Value s);

/// The per-(group, channel) constants of stage 2 (i32 values) and where
/// the grid starts: at multiples of `scale` (zero) or at `zero` (min).
struct Stage2Params {
  Value scale, zero, lo, hi;
  Stage2Anchor anchor = Stage2Anchor::zero;
};
/// s2, z2 and the code clamp [lo, hi] from the group's i32 min and max.
Stage2Params stage2Params(ImplicitLocOpBuilder &b, Value mn, Value mx,
                          int64_t bits,
                          Stage2Anchor anchor = Stage2Anchor::zero);
/// The zero point of a group with minimum `mn` (i32): round(-mn / scale),
/// or `mn` itself with anchor = min.
Value stage2Zero(ImplicitLocOpBuilder &b, Value mn, Value scale,
                 Stage2Anchor anchor = Stage2Anchor::zero);
/// Stage-2 parameters with the scale `scale` and zero point `zero` (i32):
/// the code clamp [lo, hi] that keeps dequantized values inside int8.
Stage2Params stage2Clamp(ImplicitLocOpBuilder &b, Value scale, Value zero,
                         int64_t bits,
                         Stage2Anchor anchor = Stage2Anchor::zero);
/// The candidates `#qattn.fit<mse>` tries, in order: scale offsets (added to
/// the min/max scale) outside, zero-point offsets (added to round(-mn / s2))
/// inside. The first candidate is the min/max fit.
inline constexpr int64_t kMseScaleOffsets[] = {0, 1, 2};
inline constexpr int64_t kMseZeroOffsets[] = {0, -1, 1};
/// Code of an int8 value (as i32): clamp(round(q8 / s2) + z2, lo, hi), or
/// clamp(round((q8 - z2) / s2), lo, hi) with anchor = min.
Value stage2Encode(ImplicitLocOpBuilder &b, Value q8, const Stage2Params &p);
/// (code - z2) * s2 with i32 operands, or z2 + code * s2 with anchor = min.
Value stage2Decode(ImplicitLocOpBuilder &b, Value code, Value scale,
                   Value zero, Stage2Anchor anchor = Stage2Anchor::zero);

/// Where bit `bit` of the code of channel `channel` lives in a head's bytes.
struct BitPosition {
  Value byte;  // index, relative to the head's first byte
  Value shift; // i32, bit position inside the byte
};
/// `channel` is an index value; `bit` counts from the least significant bit.
BitPosition codeBitPosition(ImplicitLocOpBuilder &b, Value channel,
                            int64_t bit, int64_t bits, PackOrder order);

/// Right shift that brings a 2- or 4-bit code whose string bits start at
/// `firstBit` (a multiple of `bits`) to the low end of its byte.
constexpr int64_t codeShift(int64_t firstBit, int64_t bits, PackOrder order) {
  return order == PackOrder::lsb_first ? firstBit % 8
                                       : 8 - bits - firstBit % 8;
}

/// Reads a packed code through `loadByte` (head-relative byte index -> i32
/// holding the unsigned byte). Returns the code as i32.
Value unpackCode(ImplicitLocOpBuilder &b, Value channel, int64_t bits,
                 PackOrder order, function_ref<Value(Value)> loadByte);

/// The f32 coefficients (constant term first) of the SAS polynomial.
SmallVector<float> sasCoefficients(int64_t degree);

/// The reference a row's exponentials are taken from: its max, or 0 while
/// the max is -inf (only masked keys, or none, seen), so that no inf - inf
/// appears.
Value finiteRef(ImplicitLocOpBuilder &b, Value max);

/// The unnormalized softmax term of a max-subtracted score x <= 0 (f32).
Value softmaxTerm(ImplicitLocOpBuilder &b, Value x, SoftmaxAttr softmax);

} // namespace mlir::qattn::format

#endif // QATTN_CONVERSION_FORMATMATH_H
