//===- ShapeChecks.h - shape diagnostics shared by the verifiers -*- C++ -*-===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//

#ifndef QATTN_LIB_DIALECT_QATTN_IR_SHAPECHECKS_H
#define QATTN_LIB_DIALECT_QATTN_IR_SHAPECHECKS_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"

#include <string>

namespace mlir::qattn {

/// "[1, ?, 64]".
inline std::string shapeStr(ArrayRef<int64_t> shape) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << '[';
  llvm::interleaveComma(shape, os, [&](int64_t size) {
    if (ShapedType::isDynamic(size))
      os << '?';
    else
      os << size;
  });
  os << ']';
  return s;
}

/// Whether two sizes agree where both are known (`?` matches any size).
inline bool compatibleDim(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

/// Checks that `type` has `expected`'s rank and its sizes where both are
/// known: a derived size is `?` where the size it derives from is.
inline LogicalResult expectShape(Operation *op, StringRef name,
                                 RankedTensorType type,
                                 ArrayRef<int64_t> expected) {
  ArrayRef<int64_t> shape = type.getShape();
  if (shape.size() == expected.size() &&
      llvm::all_of(llvm::zip(shape, expected), [](auto dims) {
        return compatibleDim(std::get<0>(dims), std::get<1>(dims));
      }))
    return success();
  return op->emitOpError() << "expected " << name << " of shape "
                           << shapeStr(expected) << ", got " << type;
}

} // namespace mlir::qattn

#endif // QATTN_LIB_DIALECT_QATTN_IR_SHAPECHECKS_H
