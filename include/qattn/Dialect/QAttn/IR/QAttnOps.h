//===- QAttnOps.h - qattn operations ----------------------------*- C++ -*-===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//

#ifndef QATTN_DIALECT_QATTN_IR_QATTNOPS_H
#define QATTN_DIALECT_QATTN_IR_QATTNOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "qattn/Dialect/QAttn/IR/QAttnDialect.h"

#define GET_OP_CLASSES
#include "qattn/Dialect/QAttn/IR/QAttnOps.h.inc"

namespace mlir::qattn {
/// What the GPU passes say of an attention with kv_lens, a page table or a
/// dynamic size, which only the CPU reference lowers for now.
inline constexpr const char *kNoShapeGenericKernel =
    "with per-sequence lengths, a page table or dynamic sizes has no GPU "
    "kernel yet (the CPU reference lowers it)";
} // namespace mlir::qattn

#endif // QATTN_DIALECT_QATTN_IR_QATTNOPS_H
