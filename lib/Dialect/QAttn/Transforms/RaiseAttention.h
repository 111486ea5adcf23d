//===- RaiseAttention.h - matchers of qattn-raise-attention -----*- C++ -*-===//
//
// Part of the qattn project.
//
// The pieces qattn-raise-attention recognizes, one file each: contractions
// and the views of their operands (RaiseContraction.cpp), the softmax forms
// (RaiseSoftmax.cpp), scaling and masks (RaiseMask.cpp) and the chain that
// joins them (RaiseChain.cpp). The pass (QAttnRaiseAttention.cpp) rewrites
// what they matched.
//
// Every op is read in canonical loop names taken from its result: an op over
// rank-R scores or outputs [batch..., row, col] names its result dims 0..R-1
// and its reduced loop R. Reshapes that only merge or split the leading
// (batch) dims keep the row-major linear batch index, so the matchers look
// through them and each op may have its own rank.
//
//===----------------------------------------------------------------------===//

#ifndef QATTN_LIB_DIALECT_QATTN_TRANSFORMS_RAISEATTENTION_H
#define QATTN_LIB_DIALECT_QATTN_TRANSFORMS_RAISEATTENTION_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "llvm/ADT/SetVector.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir::qattn::raise {

/// An additive mask value at or below this hides its key: after the softmax
/// subtracts the row maximum, exp of it is 0 in f32 (and in f64 below -745)
/// unless the scores themselves reach this size.
inline constexpr double kMaskedBelow = -1.0e4;

/// Records the first reason a match fails; every matcher returns failure()
/// through it, so that each almost-match is diagnosed exactly once.
class MatchState {
public:
  Operation *at = nullptr;
  std::string why;
  /// Every op of the chain, for the use check and the cleanup after raising.
  llvm::SetVector<Operation *> matched;

  LogicalResult fail(Operation *op, const Twine &reason) {
    if (!at) {
      at = op;
      why = reason.str();
    }
    return failure();
  }
};

//===----------------------------------------------------------------------===//
// Contractions and operand views (RaiseContraction.cpp)
//===----------------------------------------------------------------------===//

/// A tensor reshape that merges or splits only leading dims, keeping the last
/// two as they are; null otherwise.
Operation *getLeadingReshape(Value v);

/// `v` without the leading-dim reshapes that produce it; they are recorded in
/// `state.matched` when given.
Value stripLeadingReshapes(Value v, MatchState *state = nullptr);

/// Loop position -> canonical name of a rank-2..5 elementwise op (rank loops)
/// or contraction (rank + 1 loops, the one missing from the result reduced).
FailureOr<SmallVector<int64_t>>
canonicalDims(MatchState &state, linalg::LinalgOp op, StringRef what);

/// The dims of an operand's indexing map as canonical names, or none if a
/// result is not a plain loop dimension.
std::optional<SmallVector<int64_t>> operandDims(linalg::LinalgOp op,
                                                OpOperand *operand,
                                                ArrayRef<int64_t> canonical);

/// [0, ..., rank - 3] followed by `tail`: the canonical dims of an operand.
SmallVector<int64_t> batchThen(int64_t rank, ArrayRef<int64_t> tail);

/// C[batch, row, col] = sum_red L[batch, row, red] R[...] (times a constant),
/// read through the LinalgOp interface: linalg.generic, linalg.matmul,
/// linalg.batch_matmul and their generalized forms.
struct Contraction {
  linalg::LinalgOp op;
  int64_t rank = 0;
  Value lhs, rhs;
  /// R is read [batch, col, red] (K for QK^T, V^T for P.V); else
  /// [batch, red, col].
  bool rhsReducedLast = false;
  /// R skips the batch dim before the rows: each of its heads serves this
  /// many (a grouped-query broadcast folded into the maps).
  int64_t rhsRepeat = 1;
  double scale = 1.0;
  /// P.V only: the row sums the probabilities are divided by inside the body
  /// (elementwise fusion moves the softmax's division there).
  Value rowDivisor;
};

/// Matches a contraction; with `allowRowDivisor` a third input indexed by
/// [batch, row] may divide the left operand.
FailureOr<Contraction> matchContraction(MatchState &state, linalg::LinalgOp op,
                                        StringRef what, bool allowRowDivisor);

/// Whether every element of `v` is 0: linalg.fill, a constant or a generic
/// that yields zero (what --linalg-generalize-named-ops makes of a fill).
bool isZeroTensor(Value v);

/// Where a contraction operand comes from: its tensor before leading-dim
/// reshapes, transposes of the last two dims and grouped-query broadcasts
/// (a new dim just before the last two, as `repeat_interleave` of KV heads).
struct OperandView {
  Value base;
  bool transposed = false;
  int64_t repeat = 1;
};
OperandView peelOperand(Value v, MatchState &state);

//===----------------------------------------------------------------------===//
// Softmax forms (RaiseSoftmax.cpp)
//===----------------------------------------------------------------------===//

/// Whether `op` is where a softmax is recognized: linalg.softmax, or the
/// elementwise exp of a decomposed one.
bool isSoftmaxSite(Operation *op);

struct SoftmaxMatch {
  Operation *site = nullptr;
  /// The scores the softmax normalizes, along their last dim.
  Value scores;
  /// What the P.V contraction reads: the probabilities, or the exponentials
  /// when it divides them by `rowSums` itself.
  Value probs;
  Value rowSums;
};
FailureOr<SoftmaxMatch> matchSoftmax(MatchState &state, Operation *site);

/// The linalg op with reduction loops that reads `probs` (through leading-dim
/// reshapes, or any reshapes with `anyReshape`) as its first input, or null.
linalg::LinalgOp getContractionUser(Value probs, bool anyReshape = false);

//===----------------------------------------------------------------------===//
// Scaling and masks (RaiseMask.cpp)
//===----------------------------------------------------------------------===//

/// The elementwise ops' effect on the scores, accumulated over the chain.
struct ScoreTerms {
  int64_t rows = 0, cols = 0;
  double scale = 1.0;
  std::vector<char> masked; // rows x cols
};

/// One elementwise step between QK^T and the softmax, `op` reading the
/// scores `chainInput`: a linalg op (generic or named) or an arith op on
/// tensors. Scales by positive constants and masks are folded into `terms`.
LogicalResult matchScoreStep(MatchState &state, Operation *op, Value chainInput,
                             ScoreTerms &terms);

/// Whether the union of the masks is qattn's causal mask (the last query
/// aligned to the last key), or no mask.
LogicalResult checkCausal(MatchState &state, Operation *at,
                          const ScoreTerms &terms, bool &causal);

/// A float constant in a body or a scalar or splat constant operand.
std::optional<double> scalarConstant(linalg::LinalgOp op, Value v);

/// The shortest decimal that reads back as `d` (0.5, not 5.000000e-01).
std::string formatDouble(double d);

//===----------------------------------------------------------------------===//
// The mask interpreter (RaiseMaskInterpreter.cpp)
//===----------------------------------------------------------------------===//

/// An index into a tensor or a loop point; batch and head positions are
/// unknown (the mask must not depend on them).
using MaskIndex = SmallVector<std::optional<int64_t>>;

/// An integer (index, iN, i1) or float value.
struct MaskScalar {
  bool isFloat = false;
  int64_t i = 0;
  double f = 0.0;
  double asDouble() const { return isFloat ? f : double(i); }
  static MaskScalar ofInt(int64_t v) { return {false, v, 0.0}; }
  static MaskScalar ofFloat(double v) { return {true, 0, v}; }
};

/// Evaluates values that do not depend on the scores, one element at a time.
class MaskInterpreter {
public:
  /// Failures without an op of their own are reported at `step`.
  MaskInterpreter(MatchState &state, Operation *step)
      : state(state), step(step) {}

  /// `v` at loop point `at` of `owner` (a linalg op or tensor.generate whose
  /// body holds v); for a tensor `v`, its element at index `at`.
  FailureOr<MaskScalar> eval(Value v, Operation *owner, const MaskIndex &at);

private:
  FailureOr<MaskScalar> element(Value tensor, const MaskIndex &index);
  FailureOr<MaskScalar> arith(Operation *op, Operation *owner,
                              const MaskIndex &at);
  LogicalResult unsupported(Operation *op) {
    return state.fail(op, "computes a mask with '" +
                              op->getName().getStringRef() +
                              "', which the pass cannot evaluate");
  }
  LogicalResult variesWithBatch(Operation *op) {
    return state.fail(op, "masks the scores with values that vary with the "
                          "batch or head");
  }

  MatchState &state;
  Operation *step;
};

//===----------------------------------------------------------------------===//
// The chain (RaiseChain.cpp)
//===----------------------------------------------------------------------===//

/// A recognized softmax(s Q K^T + M) V, with its operands in the views the
/// contractions read them.
struct AttentionMatch {
  OperandView q, k, v;
  double scale = 1.0;
  bool causal = false;
  /// The P.V contraction whose result is replaced.
  Operation *root = nullptr;
  SmallVector<Operation *> matched;
};

/// Matches the attention around a softmax site.
FailureOr<AttentionMatch> matchAttention(MatchState &state, Operation *site);

/// Whether `site` is a softmax whose probabilities feed a contraction: only
/// those chains are worth a remark when they do not match.
bool isAttentionShaped(Operation *site);

} // namespace mlir::qattn::raise

#endif // QATTN_LIB_DIALECT_QATTN_TRANSFORMS_RAISEATTENTION_H
