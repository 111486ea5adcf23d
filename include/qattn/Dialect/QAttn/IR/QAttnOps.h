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
/// Discardable attributes of the tile layer's key loops and tile ops:
/// written by qattn-tile and qattn-pipeline, read by the later passes.
/// A key loop (scf.for) qattn-pipeline software-pipelines.
inline constexpr char kKeyLoopAttr[] = "qattn.key_loop";
/// The pipeline depth of a key loop (i64): set, qattn-pipeline keeps it.
inline constexpr char kPipelineStagesAttr[] = "qattn.pipeline_stages";
/// A key loop whose ring slots qattn-pipeline fixes under static-slots=auto.
inline constexpr char kStaticSlotsAttr[] = "qattn.static_slots";
/// The ring slot (i64) qattn-pipeline fixed on a tile load or wait.
inline constexpr char kRingSlotAttr[] = "qattn.ring_slot";
} // namespace mlir::qattn

#endif // QATTN_DIALECT_QATTN_IR_QATTNOPS_H
