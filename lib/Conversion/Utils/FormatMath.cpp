//===- FormatMath.cpp - scalar IR for the quantized formats ---------------===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//

#include "qattn/Conversion/FormatMath.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

#include <cmath>

using namespace mlir;
using namespace mlir::qattn;

namespace mlir::qattn::format {

Value indexConst(ImplicitLocOpBuilder &b, int64_t v) {
  return arith::ConstantIndexOp::create(b, v);
}

Value i32Const(ImplicitLocOpBuilder &b, int64_t v) {
  return arith::ConstantIntOp::create(b, b.getI32Type(), v);
}

Value f32Const(ImplicitLocOpBuilder &b, double v) {
  return arith::ConstantFloatOp::create(b, b.getF32Type(),
                                        APFloat(static_cast<float>(v)));
}

Value toF32(ImplicitLocOpBuilder &b, Value x) {
  if (x.getType().isF32())
    return x;
  return arith::ExtFOp::create(b, b.getF32Type(), x);
}

Value fromF32(ImplicitLocOpBuilder &b, Value x, Type type) {
  if (type.isF32())
    return x;
  return arith::TruncFOp::create(b, type, x);
}

Value roundHalfAway(ImplicitLocOpBuilder &b, Value x) {
  // math.round rounds halfway cases away from zero, like C's roundf.
  return math::RoundOp::create(b, x);
}

std::pair<Value, Value> stage1Scale(ImplicitLocOpBuilder &b, Value absMax,
                                    Type storageType) {
  Value s = arith::DivFOp::create(b, absMax, f32Const(b, 127.0));
  if (storageType.isF32())
    return {s, s};
  // The quantizer must divide by the value it stores, not the f32 one.
  Value stored = fromF32(b, s, storageType);
  return {stored, toF32(b, stored)};
}

Value quantizeInt8(ImplicitLocOpBuilder &b, Value x, Value s) {
  Value r = roundHalfAway(b, arith::DivFOp::create(b, x, s));
  r = arith::MaximumFOp::create(b, r, f32Const(b, -127.0));
  r = arith::MinimumFOp::create(b, r, f32Const(b, 127.0));
  Value q = arith::FPToSIOp::create(b, b.getI8Type(), r);
  Value isZero = arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, s,
                                       f32Const(b, 0.0));
  Value zero = arith::ConstantIntOp::create(b, b.getI8Type(), 0);
  return arith::SelectOp::create(b, isZero, zero, q);
}

/// round(num / den) for i32 operands, exact for |num| <= 255 (FORMAT.md).
static Value roundedQuotient(ImplicitLocOpBuilder &b, Value num, Value den) {
  Type f32 = b.getF32Type();
  Value q = arith::DivFOp::create(b, arith::SIToFPOp::create(b, f32, num),
                                  arith::SIToFPOp::create(b, f32, den));
  return arith::FPToSIOp::create(b, b.getI32Type(), roundHalfAway(b, q));
}

Stage2Params stage2Params(ImplicitLocOpBuilder &b, Value mn, Value mx,
                          int64_t bits, Stage2Anchor anchor) {
  Value levels = i32Const(b, (int64_t{1} << bits) - 1);
  Value range = arith::SubIOp::create(b, mx, mn);
  Value scale = arith::MaxSIOp::create(
      b, i32Const(b, 1), arith::CeilDivSIOp::create(b, range, levels));
  return stage2Clamp(b, scale, stage2Zero(b, mn, scale, anchor), bits,
                     anchor);
}

Value stage2Zero(ImplicitLocOpBuilder &b, Value mn, Value scale,
                 Stage2Anchor anchor) {
  if (anchor == Stage2Anchor::min)
    return mn;
  return roundedQuotient(b, arith::SubIOp::create(b, i32Const(b, 0), mn),
                         scale);
}

Stage2Params stage2Clamp(ImplicitLocOpBuilder &b, Value scale, Value zero,
                         int64_t bits, Stage2Anchor anchor) {
  Value levels = i32Const(b, (int64_t{1} << bits) - 1);
  if (anchor == Stage2Anchor::min) {
    // Codes count steps up from z2; the top one must stay <= 127.
    Value hi = arith::MinSIOp::create(
        b, levels,
        arith::FloorDivSIOp::create(
            b, arith::SubIOp::create(b, i32Const(b, 127), zero), scale));
    return {scale, zero, i32Const(b, 0), hi, anchor};
  }
  // Keep every code's dequantized value inside int8 (see FORMAT.md).
  Value lo = arith::MaxSIOp::create(
      b, i32Const(b, 0),
      arith::AddIOp::create(
          b, zero, arith::CeilDivSIOp::create(b, i32Const(b, -128), scale)));
  Value hi = arith::MinSIOp::create(
      b, levels,
      arith::AddIOp::create(
          b, zero, arith::FloorDivSIOp::create(b, i32Const(b, 127), scale)));
  return {scale, zero, lo, hi, anchor};
}

Value stage2Encode(ImplicitLocOpBuilder &b, Value q8, const Stage2Params &p) {
  Value code =
      p.anchor == Stage2Anchor::min
          ? roundedQuotient(b, arith::SubIOp::create(b, q8, p.zero), p.scale)
          : arith::AddIOp::create(b, roundedQuotient(b, q8, p.scale), p.zero);
  code = arith::MaxSIOp::create(b, code, p.lo);
  return arith::MinSIOp::create(b, code, p.hi);
}

Value stage2Decode(ImplicitLocOpBuilder &b, Value code, Value scale,
                   Value zero, Stage2Anchor anchor) {
  if (anchor == Stage2Anchor::min)
    return arith::AddIOp::create(b, zero, arith::MulIOp::create(b, code, scale));
  return arith::MulIOp::create(b, arith::SubIOp::create(b, code, zero), scale);
}

BitPosition codeBitPosition(ImplicitLocOpBuilder &b, Value channel,
                            int64_t bit, int64_t bits, PackOrder order) {
  // String bit c*bits + i holds code bit i (lsb_first) or bits-1-i (msb_first).
  int64_t slot = order == PackOrder::lsb_first ? bit : bits - 1 - bit;
  Value k = arith::AddIOp::create(
      b, arith::MulIOp::create(b, channel, indexConst(b, bits)),
      indexConst(b, slot));
  Value byte = arith::DivUIOp::create(b, k, indexConst(b, 8));
  Value inByte = arith::IndexCastOp::create(
      b, b.getI32Type(), arith::RemUIOp::create(b, k, indexConst(b, 8)));
  if (order == PackOrder::msb_first)
    inByte = arith::SubIOp::create(b, i32Const(b, 7), inByte);
  return {byte, inByte};
}

Value unpackCode(ImplicitLocOpBuilder &b, Value channel, int64_t bits,
                 PackOrder order, function_ref<Value(Value)> loadByte) {
  if (8 % bits == 0) {
    // 2- and 4-bit codes never straddle bytes: one shift and mask. The code's
    // lowest bit sits at its lsb_first slot, or bits-1 slots later for
    // msb_first.
    BitPosition low = codeBitPosition(b, channel, 0, bits, order);
    Value v = arith::ShRUIOp::create(b, loadByte(low.byte), low.shift);
    return arith::AndIOp::create(b, v, i32Const(b, (1 << bits) - 1));
  }
  Value code = i32Const(b, 0);
  for (int64_t bit = 0; bit < bits; ++bit) {
    BitPosition pos = codeBitPosition(b, channel, bit, bits, order);
    Value v = arith::ShRUIOp::create(b, loadByte(pos.byte), pos.shift);
    v = arith::AndIOp::create(b, v, i32Const(b, 1));
    v = arith::ShLIOp::create(b, v, i32Const(b, bit));
    code = arith::OrIOp::create(b, code, v);
  }
  return code;
}

SmallVector<float> sasCoefficients(int64_t degree) {
  // Interpolate exp at the Chebyshev nodes of [0, 1]: solve the Vandermonde
  // system in double with partial pivoting, then round to f32.
  int64_t n = degree + 1;
  std::vector<std::vector<double>> a(n, std::vector<double>(n + 1));
  for (int64_t k = 0; k < n; ++k) {
    double t = 0.5 * (1.0 + std::cos((2.0 * k + 1.0) * M_PI / (2.0 * n)));
    for (int64_t j = 0; j < n; ++j)
      a[k][j] = std::pow(t, static_cast<double>(j));
    a[k][n] = std::exp(t);
  }
  for (int64_t col = 0; col < n; ++col) {
    int64_t pivot = col;
    for (int64_t r = col + 1; r < n; ++r)
      if (std::fabs(a[r][col]) > std::fabs(a[pivot][col]))
        pivot = r;
    std::swap(a[col], a[pivot]);
    for (int64_t r = 0; r < n; ++r) {
      if (r == col)
        continue;
      double f = a[r][col] / a[col][col];
      for (int64_t j = col; j <= n; ++j)
        a[r][j] -= f * a[col][j];
    }
  }
  SmallVector<float> coeffs;
  for (int64_t k = 0; k < n; ++k)
    coeffs.push_back(static_cast<float>(a[k][n] / a[k][k]));
  return coeffs;
}

/// LUT[idx] = exp(-idx) as a chain of selects over the table's few entries.
static Value sasLut(ImplicitLocOpBuilder &b, Value idx, int64_t entries) {
  Value result = f32Const(b, 1.0);
  for (int64_t k = 1; k < entries; ++k) {
    Value hit = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, idx,
                                      i32Const(b, k));
    result = arith::SelectOp::create(
        b, hit, f32Const(b, static_cast<float>(std::exp(-double(k)))), result);
  }
  return result;
}

Value finiteRef(ImplicitLocOpBuilder &b, Value max) {
  Value isInf = arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, max,
                                      f32Const(b, -INFINITY));
  return arith::SelectOp::create(b, isInf, f32Const(b, 0.0), max);
}

Value softmaxTerm(ImplicitLocOpBuilder &b, Value x, SoftmaxAttr softmax) {
  if (softmax.getMode() == SoftmaxMode::exact)
    return math::ExpOp::create(b, x);
  double threshold = softmax.getThreshold().convertToDouble();
  Value intPart = math::FloorOp::create(b, x);
  Value frac = arith::SubFOp::create(b, x, intPart);
  Value idx = arith::FPToSIOp::create(
      b, b.getI32Type(), arith::NegFOp::create(b, intPart));
  int64_t entries = static_cast<int64_t>(std::ceil(-threshold)) + 1;
  SmallVector<float> coeffs = sasCoefficients(softmax.getDegree());
  Value poly = f32Const(b, coeffs.back());
  for (int64_t k = static_cast<int64_t>(coeffs.size()) - 2; k >= 0; --k)
    poly = arith::AddFOp::create(b, arith::MulFOp::create(b, poly, frac),
                                 f32Const(b, coeffs[k]));
  Value term = arith::MulFOp::create(b, sasLut(b, idx, entries), poly);
  Value below = arith::CmpFOp::create(b, arith::CmpFPredicate::OLT, x,
                                      f32Const(b, threshold));
  return arith::SelectOp::create(b, below, f32Const(b, 0.0), term);
}

} // namespace mlir::qattn::format
