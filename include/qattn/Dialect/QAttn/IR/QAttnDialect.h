//===- QAttnDialect.h - qattn dialect, enums and attributes -----*- C++ -*-===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//

#ifndef QATTN_DIALECT_QATTN_IR_QATTNDIALECT_H
#define QATTN_DIALECT_QATTN_IR_QATTNDIALECT_H

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/DialectImplementation.h"

#include "qattn/Dialect/QAttn/IR/QAttnDialect.h.inc"
#include "qattn/Dialect/QAttn/IR/QAttnEnums.h.inc"

namespace mlir::qattn {
/// Parses `[b0, b1, ...]`, the bit widths of a stage-2 scheme.
FailureOr<SmallVector<int64_t>> parseBitList(AsmParser &parser);
void printBitList(AsmPrinter &printer, ArrayRef<int64_t> bits);
} // namespace mlir::qattn

#define GET_ATTRDEF_CLASSES
#include "qattn/Dialect/QAttn/IR/QAttnAttrs.h.inc"

#endif // QATTN_DIALECT_QATTN_IR_QATTNDIALECT_H
