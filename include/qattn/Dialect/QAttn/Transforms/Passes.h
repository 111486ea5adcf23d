//===- Passes.h - qattn dialect transforms ----------------------*- C++ -*-===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//

#ifndef QATTN_DIALECT_QATTN_TRANSFORMS_PASSES_H
#define QATTN_DIALECT_QATTN_TRANSFORMS_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::qattn {

#define GEN_PASS_DECL
#include "qattn/Dialect/QAttn/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "qattn/Dialect/QAttn/Transforms/Passes.h.inc"

} // namespace mlir::qattn

#endif // QATTN_DIALECT_QATTN_TRANSFORMS_PASSES_H
