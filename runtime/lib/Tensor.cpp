//===- Tensor.cpp - Host tensors ------------------------------------------===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//

#include "qattn/Runtime/Tensor.h"

#include "qattn/Runtime/Error.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <limits>

using namespace qattn::rt;

//===----------------------------------------------------------------------===//
// Narrow float formats
//===----------------------------------------------------------------------===//

namespace {
/// An IEEE-style binary format with a sign bit, `expBits` exponent bits and
/// `manBits` stored mantissa bits (f16: 5/10, bf16: 8/7).
struct BinaryFormat {
  int expBits;
  int manBits;

  uint32_t expMask() const { return (1u << expBits) - 1; }
  uint32_t signBit() const { return 1u << (expBits + manBits); }
  int bias() const { return (1 << (expBits - 1)) - 1; }
  /// The exponent of the smallest normal number, shared by the subnormals.
  int minExp() const { return 1 - bias(); }
  uint32_t infinity() const { return expMask() << manBits; }
  uint32_t quietNaN() const { return infinity() | 1u << (manBits - 1); }
};

constexpr BinaryFormat kF16 = {5, 10};
constexpr BinaryFormat kBF16 = {8, 7};

/// Rounds `x` to the nearest integer, ties to even, independently of the
/// floating-point environment's rounding mode. `x` is non-negative.
uint64_t roundHalfEven(double x) {
  double whole = std::floor(x);
  double frac = x - whole;
  uint64_t n = uint64_t(whole);
  if (frac > 0.5 || (frac == 0.5 && (n & 1)))
    ++n;
  return n;
}

uint32_t encode(double value, BinaryFormat fmt) {
  uint32_t sign = std::signbit(value) ? fmt.signBit() : 0;
  if (std::isnan(value))
    return sign | fmt.quietNaN();
  double mag = std::fabs(value);
  if (std::isinf(mag))
    return sign | fmt.infinity();
  if (mag == 0)
    return sign;
  int exp;
  std::frexp(mag, &exp); // mag = f * 2^exp with f in [0.5, 1).
  // The exponent of the result's leading bit; subnormals share minExp.
  exp = std::max(exp - 1, fmt.minExp());
  // Scaling by a power of two is exact, so this is the significand in units
  // of the result's last place, and rounding it is the only rounding step.
  uint64_t sig = roundHalfEven(std::ldexp(mag, fmt.manBits - exp));
  // A normal significand carries the implicit leading bit, which adds one to
  // the exponent field; a subnormal's does not and its field is 0. Adding
  // the two fields lets a carry out of the mantissa (rounding up to the next
  // binade, or from the largest subnormal to the smallest normal) land in
  // the exponent by itself.
  uint64_t bits = (uint64_t(exp - fmt.minExp()) << fmt.manBits) + sig;
  if (bits >= fmt.infinity())
    return sign | fmt.infinity();
  return sign | uint32_t(bits);
}

double decode(uint32_t bits, BinaryFormat fmt) {
  uint32_t field = (bits >> fmt.manBits) & fmt.expMask();
  uint32_t mantissa = bits & ((1u << fmt.manBits) - 1);
  double mag;
  if (field == fmt.expMask())
    mag = mantissa ? std::numeric_limits<double>::quiet_NaN()
                   : std::numeric_limits<double>::infinity();
  else if (field == 0)
    mag = std::ldexp(double(mantissa), fmt.minExp() - fmt.manBits);
  else
    mag = std::ldexp(double(mantissa | 1u << fmt.manBits),
                     int(field) - fmt.bias() - fmt.manBits);
  return (bits & fmt.signBit()) ? -mag : mag;
}
} // namespace

uint16_t qattn::rt::toF16Bits(double value) {
  return uint16_t(encode(value, kF16));
}
double qattn::rt::fromF16Bits(uint16_t bits) { return decode(bits, kF16); }
uint16_t qattn::rt::toBF16Bits(double value) {
  return uint16_t(encode(value, kBF16));
}
double qattn::rt::fromBF16Bits(uint16_t bits) { return decode(bits, kBF16); }

//===----------------------------------------------------------------------===//
// Tensor
//===----------------------------------------------------------------------===//

namespace {
template <typename T> T load(const uint8_t *bytes, int64_t index) {
  T value;
  std::memcpy(&value, bytes + index * sizeof(T), sizeof(T));
  return value;
}

template <typename T> void store(uint8_t *bytes, int64_t index, T value) {
  std::memcpy(bytes + index * sizeof(T), &value, sizeof(T));
}

int64_t checkedNumElements(const Shape &shape) {
  std::optional<int64_t> count = numElements(shape);
  if (!count)
    fail("tensor shape ", formatShape(shape), " is invalid or too large");
  return *count;
}
} // namespace

Tensor::Tensor(DType dtype, Shape shape)
    : dtype(dtype), shape(std::move(shape)),
      elementCount(checkedNumElements(this->shape)),
      storage(size_t(elementCount) * dtypeSize(dtype)) {}

double Tensor::getDouble(int64_t index) const {
  assert(index >= 0 && index < elementCount && "element index out of range");
  const uint8_t *bytes = storage.data();
  switch (dtype) {
  case DType::F64:
    return load<double>(bytes, index);
  case DType::F32:
    return load<float>(bytes, index);
  case DType::F16:
    return fromF16Bits(load<uint16_t>(bytes, index));
  case DType::BF16:
    return fromBF16Bits(load<uint16_t>(bytes, index));
  case DType::I64:
    return double(load<int64_t>(bytes, index));
  case DType::I32:
    return load<int32_t>(bytes, index);
  case DType::I8:
    return load<int8_t>(bytes, index);
  }
  return 0; // Unreachable: the switch covers every DType.
}

void Tensor::setDouble(int64_t index, double value) {
  assert(index >= 0 && index < elementCount && "element index out of range");
  assert(isFloat(dtype) && "setDouble needs a float tensor");
  uint8_t *bytes = storage.data();
  switch (dtype) {
  case DType::F64:
    store<double>(bytes, index, value);
    return;
  case DType::F32:
    // The conversion rounds to nearest even in the default FP environment.
    store<float>(bytes, index, float(value));
    return;
  case DType::F16:
    store<uint16_t>(bytes, index, toF16Bits(value));
    return;
  case DType::BF16:
    store<uint16_t>(bytes, index, toBF16Bits(value));
    return;
  default: // The integer dtypes, which the assertion above excludes.
    return;
  }
}

std::vector<double> Tensor::toDoubles() const {
  std::vector<double> values(static_cast<size_t>(elementCount));
  for (int64_t i = 0; i < elementCount; ++i)
    values[size_t(i)] = getDouble(i);
  return values;
}

Tensor Tensor::convertTo(DType target) const {
  assert(isFloat(dtype) && isFloat(target) && "convertTo needs float dtypes");
  Tensor result(target, shape);
  for (int64_t i = 0; i < elementCount; ++i)
    result.setDouble(i, getDouble(i));
  return result;
}
