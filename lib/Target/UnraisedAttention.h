//===- UnraisedAttention.h - attention left in linalg -----------*- C++ -*-===//
//
// Part of the qattn project.
//
// qattn-compile lowers whatever it is given, and the reference pipeline lowers
// plain linalg as readily as qattn ops: an attention that
// qattn-raise-attention did not raise would become float code, with nothing
// quantized and nothing in the manifest to check it against. Both targets ask
// these helpers first.
//
//===----------------------------------------------------------------------===//

#ifndef QATTN_LIB_TARGET_UNRAISEDATTENTION_H
#define QATTN_LIB_TARGET_UNRAISEDATTENTION_H

#include "mlir/IR/BuiltinOps.h"

namespace mlir::qattn {

/// Emits an error at every `linalg.softmax` and at every softmax written out
/// in linalg (an op whose body takes an exp, with a contraction before it and
/// a reduction and a contraction after it: QK^T, exp, its row sum, P.V), each
/// pointing at qattn-raise-attention; fails if there was any.
LogicalResult checkAttentionRaised(ModuleOp module);

/// Replaces every `linalg.softmax` by upstream's decomposition into
/// linalg.generic ops (its AggregatedOpInterface), which the CPU reference
/// pipeline lowers; linalg.softmax itself it does not.
LogicalResult decomposeSoftmax(ModuleOp module);

} // namespace mlir::qattn

#endif // QATTN_LIB_TARGET_UNRAISEDATTENTION_H
