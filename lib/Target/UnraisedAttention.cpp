//===- UnraisedAttention.cpp - attention left in linalg -------------------===//
//
// Part of the qattn project.
//
// The detection is deliberately plain: a linalg.softmax, or an op that takes
// an exp between two contractions with a reduction after it (the softmax's
// row sum). It does not decide whether qattn-raise-attention could have
// raised the chain, only that an attention-shaped chain is there; the pass
// says why it left one alone.
//
//===----------------------------------------------------------------------===//

#include "UnraisedAttention.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace mlir::qattn;

/// What each diagnostic ends with: the two ways forward.
static constexpr const char *kWhatToDo =
    "; qattn-compile would compile it unquantized, as float code. Run "
    "qattn-raise-attention first (qattn-opt --qattn-raise-attention) to "
    "quantize it as qattn.attention, or pass qattn-compile "
    "--allow-unquantized to compile float attention on purpose";

//===----------------------------------------------------------------------===//
// The dataflow between the contractions
//===----------------------------------------------------------------------===//

/// Whether the walk goes on through `op`: the tensor computations that a
/// frontend puts between QK^T and P.V (linalg, reshapes, elementwise arith
/// and math, masks). Calls, loops and function boundaries end it.
static bool isFollowed(Operation *op) {
  return isa_and_nonnull<linalg::LinalgDialect, tensor::TensorDialect,
                         arith::ArithDialect, math::MathDialect>(
      op->getDialect());
}

/// Whether the body of `op` takes an exp (exp2 too: softmax in base 2).
static bool takesExp(linalg::LinalgOp op) {
  Block *body = op.getBlock();
  return body && llvm::any_of(body->getOperations(), [](Operation &inner) {
           return isa<math::ExpOp, math::Exp2Op>(inner);
         });
}

/// A matmul-like op: a linalg op that multiplies two or more inputs and
/// reduces a loop, and takes no exp (a fused softmax step may multiply).
/// Named contractions (matmul, batch_matmul, contract) are such ops, and so
/// are the generic ones that fold a scale into the body (mul, div, add),
/// which upstream's isaContractionOpInterface turns down.
static bool isContraction(Operation *op) {
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  if (!linalgOp || !linalgOp.getBlock() ||
      linalgOp.getNumReductionLoops() == 0 || takesExp(linalgOp))
    return false;
  // Scalars (a scale passed in as a 0-d tensor) are no matmul operands.
  int64_t operands =
      llvm::count_if(linalgOp.getDpsInputOperands(), [&](OpOperand *input) {
        return linalgOp.getMatchingIndexingMap(input).getNumResults() > 0;
      });
  if (operands < 2)
    return false;
  return llvm::any_of(linalgOp.getBlock()->getOperations(),
                      [](Operation &inner) {
                        return isa<arith::MulFOp, arith::MulIOp>(inner);
                      });
}

/// A row max or sum: a linalg op with a reduction loop that is no
/// contraction.
static bool isReduction(Operation *op) {
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  return linalgOp && linalgOp.getNumReductionLoops() > 0 && !isContraction(op);
}

/// The nearest contraction that `from` depends on, if any.
static Operation *findProducerContraction(Operation *from) {
  SmallVector<Operation *> queue = {from};
  llvm::DenseSet<Operation *> seen = {from};
  for (size_t i = 0; i < queue.size(); ++i) {
    for (Value operand : queue[i]->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (!def || !seen.insert(def).second)
        continue;
      if (isContraction(def))
        return def;
      if (isFollowed(def))
        queue.push_back(def);
    }
  }
  return nullptr;
}

namespace {
/// What depends on an op, up to the first contractions.
struct Consumers {
  Operation *contraction = nullptr; // the nearest one
  bool reduced = false;             // a reduction on the way to any of them
};
} // namespace

static Consumers findConsumers(Operation *from) {
  Consumers found;
  SmallVector<Operation *> queue = {from};
  llvm::DenseSet<Operation *> seen = {from};
  for (size_t i = 0; i < queue.size(); ++i) {
    for (Operation *user : queue[i]->getUsers()) {
      if (!seen.insert(user).second)
        continue;
      if (isContraction(user)) {
        if (!found.contraction)
          found.contraction = user;
        continue;
      }
      if (!isFollowed(user))
        continue;
      found.reduced |= isReduction(user);
      queue.push_back(user);
    }
  }
  return found;
}

//===----------------------------------------------------------------------===//
// The checks
//===----------------------------------------------------------------------===//

/// An error at `op` that names it, without the generic form of the op that
/// emitOpError would attach (a whole linalg.generic body).
static InFlightDiagnostic emitErrorAt(Operation *op) {
  return emitError(op->getLoc()) << "'" << op->getName() << "' op ";
}

/// Reports a linalg.softmax; names its contractions where it has them.
static void reportSoftmax(linalg::SoftmaxOp softmax) {
  Operation *qk = findProducerContraction(softmax);
  Operation *pv = findConsumers(softmax).contraction;
  if (!qk || !pv) {
    emitErrorAt(softmax) << "is left in the module, where qattn-compile "
                            "expects attention raised to qattn.attention"
                         << kWhatToDo;
    return;
  }
  InFlightDiagnostic diag =
      emitErrorAt(softmax)
      << "is the softmax of an attention that is still in linalg" << kWhatToDo;
  diag.attachNote(qk->getLoc()) << "its QK^T contraction";
  diag.attachNote(pv->getLoc()) << "its P.V contraction";
}

/// Reports `op` if it is the exp of a softmax written out in linalg.
static bool reportExpChain(linalg::LinalgOp op) {
  if (!takesExp(op))
    return false;
  Operation *qk = findProducerContraction(op);
  if (!qk)
    return false;
  Consumers after = findConsumers(op);
  // The reduction tells a softmax from an activation (SiLU, GELU) between
  // the two matmuls of an MLP: those have an exp and no row sum.
  if (!after.contraction || !(after.reduced || op.getNumReductionLoops() > 0))
    return false;
  InFlightDiagnostic diag =
      emitErrorAt(op)
      << "takes the exp of a softmax between two contractions: an attention "
         "that is still in linalg"
      << kWhatToDo;
  diag.attachNote(qk->getLoc()) << "its QK^T contraction";
  diag.attachNote(after.contraction->getLoc()) << "its P.V contraction";
  return true;
}

LogicalResult mlir::qattn::checkAttentionRaised(ModuleOp module) {
  bool found = false;
  module.walk([&](Operation *op) {
    if (auto softmax = dyn_cast<linalg::SoftmaxOp>(op)) {
      reportSoftmax(softmax);
      found = true;
    } else if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) {
      found |= reportExpChain(linalgOp);
    }
  });
  return failure(found);
}

LogicalResult mlir::qattn::decomposeSoftmax(ModuleOp module) {
  SmallVector<linalg::SoftmaxOp> softmaxes;
  module.walk([&](linalg::SoftmaxOp op) { softmaxes.push_back(op); });
  IRRewriter rewriter(module.getContext());
  for (linalg::SoftmaxOp softmax : softmaxes) {
    // Upstream's decomposition builds tensors: on buffers it would produce
    // ops that do not verify.
    if (!softmax.hasPureTensorSemantics())
      return emitErrorAt(softmax)
             << "on buffers cannot be compiled for the CPU; write it on "
                "tensors (qattn-compile bufferizes)";
    rewriter.setInsertionPoint(softmax);
    FailureOr<SmallVector<Value>> parts =
        cast<linalg::AggregatedOpInterface>(softmax.getOperation())
            .decomposeOperation(rewriter);
    if (failed(parts))
      return emitErrorAt(softmax)
             << "could not be decomposed into linalg.generic ops for the CPU "
                "reference lowering";
    rewriter.replaceOp(softmax, *parts);
  }
  return success();
}
