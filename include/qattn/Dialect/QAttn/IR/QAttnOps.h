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

#endif // QATTN_DIALECT_QATTN_IR_QATTNOPS_H
