//===- Tensor.h - Host tensors ----------------------------------*- C++ -*-===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//
//
// A dense row-major host buffer with a dtype and a shape: what the runtime
// hands to an artifact's functions, reads from and writes to .npy files, and
// converts to float64 to compare results against a reference.
//
//===----------------------------------------------------------------------===//

#ifndef QATTN_RUNTIME_TENSOR_H
#define QATTN_RUNTIME_TENSOR_H

#include "qattn/Runtime/Types.h"

#include <cstdint>
#include <vector>

namespace qattn::rt {

/// Rounds `value` to the nearest IEEE binary16 number, ties to even (NaN stays
/// NaN, overflow gives infinity), and returns its bit pattern.
uint16_t toF16Bits(double value);
double fromF16Bits(uint16_t bits);

/// The same for bfloat16 (8 exponent bits, 7 mantissa bits). Rounding from
/// double directly, not through float, avoids double rounding.
uint16_t toBF16Bits(double value);
double fromBF16Bits(uint16_t bits);

class Tensor {
public:
  /// A zero-filled tensor. Throws Error if the shape has a negative size or
  /// more than kMaxElements elements.
  Tensor(DType dtype, Shape shape);

  DType getDType() const { return dtype; }
  const Shape &getShape() const { return shape; }
  int64_t getNumElements() const { return elementCount; }
  size_t getByteSize() const { return storage.size(); }

  /// The elements, row-major. The storage comes from operator new, which is
  /// aligned for every dtype, as the calling convention's memrefs require.
  void *data() { return storage.data(); }
  const void *data() const { return storage.data(); }

  /// Element `index` (row-major) as a double; exact for every dtype but i64
  /// values beyond 2^53.
  double getDouble(int64_t index) const;

  /// Stores `value` into element `index` of a float tensor, rounding to the
  /// nearest representable value, ties to even.
  void setDouble(int64_t index, double value);

  /// All elements as doubles.
  std::vector<double> toDoubles() const;

  /// A copy of this float tensor in float dtype `target`, rounded to nearest
  /// even.
  Tensor convertTo(DType target) const;

private:
  DType dtype;
  Shape shape;
  int64_t elementCount;
  std::vector<uint8_t> storage;
};

} // namespace qattn::rt

#endif // QATTN_RUNTIME_TENSOR_H
