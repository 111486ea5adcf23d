//===- RaiseMask.cpp - scaling and masks for qattn-raise-attention --------===//
//
// Part of the qattn project.
//
// Between QK^T and the softmax a program scales the scores and masks them.
// Masks come in many spellings: a select on linalg.index inside the scaling
// op, iota tensors (tensor.generate, linalg.generic on linalg.index, dense
// constants) compared into an i1 tensor, arith.select or an additive 0/-inf
// tensor on whole tensors. Rather than pattern-match each spelling, the
// mask is evaluated (RaiseMaskInterpreter.cpp): every value that does not
// depend on the scores is computed for each (query, key) pair, and the union
// of the hidden pairs is compared with qattn's causal mask.
//
//===----------------------------------------------------------------------===//

#include "RaiseAttention.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"

#include <cmath>

using namespace mlir;
using namespace mlir::qattn;
using namespace mlir::qattn::raise;

using Index = MaskIndex;
using Scalar = MaskScalar;
using Interpreter = MaskInterpreter;

std::string raise::formatDouble(double d) {
  SmallString<16> s;
  APFloat(d).toString(s);
  return s.str().str();
}

std::optional<double> raise::scalarConstant(linalg::LinalgOp op, Value v) {
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    if (arg.getOwner() != op.getBlock() ||
        arg.getArgNumber() >= unsigned(op.getNumDpsInputs()))
      return std::nullopt;
    v = op.getDpsInputOperand(arg.getArgNumber())->get();
  }
  Attribute attr;
  if (!matchPattern(v, m_Constant(&attr)))
    return std::nullopt;
  if (auto f = dyn_cast<FloatAttr>(attr))
    return f.getValueAsDouble();
  if (auto dense = dyn_cast<DenseFPElementsAttr>(attr))
    if (dense.isSplat())
      return dense.getSplatValue<APFloat>().convertToDouble();
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Scaling and masking steps
//===----------------------------------------------------------------------===//

namespace {
/// The scores' expression in one step: the scores enter as `chain`; values
/// that do not depend on them are evaluated at (query, key) points of
/// `owner` (null for arith ops on tensors).
class StepMatcher {
public:
  StepMatcher(MatchState &state, Operation *step, Operation *owner, Value chain,
              int64_t rank, ScoreTerms &terms)
      : state(state), interp(state, step), owner(owner), chain(chain),
        rank(rank), terms(terms) {}

  ///   e := scores | e * c | c * e | e / c | e + M | M + e | e - M
  ///      | select(cond, e, m) | select(cond, m, e)
  /// with c > 0 a constant, M a mask of 0 and <= -1e4 entries and m <= -1e4.
  LogicalResult match(Value v);

private:
  Index point(int64_t i, int64_t j) const {
    Index at(rank, std::nullopt);
    at[rank - 2] = i;
    at[rank - 1] = j;
    return at;
  }
  /// A constant factor: a scalar constant or a splat operand.
  std::optional<double> constant(Value v) {
    if (auto op = dyn_cast_or_null<linalg::LinalgOp>(owner))
      return scalarConstant(op, v);
    DenseFPElementsAttr dense;
    if (matchPattern(v, m_Constant(&dense)) && dense.isSplat())
      return dense.getSplatValue<APFloat>().convertToDouble();
    return std::nullopt;
  }
  LogicalResult scaleBy(Operation *def, double c, Value rest);
  /// scores + mask, or scores - mask with `subtract`.
  LogicalResult addMask(Operation *def, Value mask, Value rest,
                        bool subtract = false);
  LogicalResult selectMask(arith::SelectOp select);

  MatchState &state;
  Interpreter interp;
  Operation *owner;
  Value chain;
  int64_t rank;
  ScoreTerms &terms;
};
} // namespace

/// Whether `v` is computed from the scores `chain` within one step.
static bool dependsOn(Value v, Value chain) {
  if (v == chain)
    return true;
  Operation *def = v.getDefiningOp();
  if (!def || isa<linalg::LinalgOp>(def))
    return false;
  return llvm::any_of(def->getOperands(),
                      [&](Value operand) { return dependsOn(operand, chain); });
}

LogicalResult StepMatcher::scaleBy(Operation *def, double c, Value rest) {
  if (!(c > 0.0) || !std::isfinite(c))
    return state.fail(def, "scales the scores by " + formatDouble(c) +
                               " (only positive finite scales are raised)");
  terms.scale *= c;
  return match(rest);
}

LogicalResult StepMatcher::addMask(Operation *def, Value mask, Value rest,
                                   bool subtract) {
  for (int64_t i = 0; i < terms.rows; ++i)
    for (int64_t j = 0; j < terms.cols; ++j) {
      FailureOr<Scalar> m = interp.eval(mask, owner, point(i, j));
      if (failed(m))
        return failure();
      double value = subtract ? -m->asDouble() : m->asDouble();
      if (value <= kMaskedBelow)
        terms.masked[i * terms.cols + j] = 1;
      else if (value != 0.0)
        return state.fail(def, "adds " + formatDouble(value) +
                                   " to the score of query " + Twine(i) +
                                   " and key " + Twine(j) +
                                   ": a bias, not a mask of 0 and -inf");
    }
  return match(rest);
}

LogicalResult StepMatcher::selectMask(arith::SelectOp select) {
  bool scoresIfTrue = dependsOn(select.getTrueValue(), chain);
  if (scoresIfTrue == dependsOn(select.getFalseValue(), chain))
    return state.fail(select, "selects between two values that both or "
                              "neither depend on the scores");
  Value rest = scoresIfTrue ? select.getTrueValue() : select.getFalseValue();
  Value fill = scoresIfTrue ? select.getFalseValue() : select.getTrueValue();
  for (int64_t i = 0; i < terms.rows; ++i)
    for (int64_t j = 0; j < terms.cols; ++j) {
      FailureOr<Scalar> cond =
          interp.eval(select.getCondition(), owner, point(i, j));
      if (failed(cond))
        return failure();
      if ((cond->i != 0) == scoresIfTrue)
        continue;
      FailureOr<Scalar> m = interp.eval(fill, owner, point(i, j));
      if (failed(m))
        return failure();
      if (!(m->asDouble() <= kMaskedBelow))
        return state.fail(select, "replaces the score of query " + Twine(i) +
                                      " and key " + Twine(j) + " by " +
                                      formatDouble(m->asDouble()) +
                                      ", not by -inf or a value <= -1e4");
      terms.masked[i * terms.cols + j] = 1;
    }
  return match(rest);
}

LogicalResult StepMatcher::match(Value v) {
  if (v == chain)
    return success();
  Operation *def = v.getDefiningOp();
  if (!def || !dependsOn(v, chain))
    return state.fail(owner ? owner : chain.getDefiningOp(),
                      "yields a value that does not depend on the scores");
  if (auto mul = dyn_cast<arith::MulFOp>(def)) {
    if (std::optional<double> c = constant(mul.getRhs()))
      return scaleBy(def, *c, mul.getLhs());
    if (std::optional<double> c = constant(mul.getLhs()))
      return scaleBy(def, *c, mul.getRhs());
    return state.fail(def, "scales the scores by a value that is not a "
                           "constant");
  }
  if (auto div = dyn_cast<arith::DivFOp>(def)) {
    std::optional<double> c = constant(div.getRhs());
    if (!c || dependsOn(div.getRhs(), chain))
      return state.fail(def, "divides the scores by a value that is not a "
                             "constant");
    return scaleBy(def, 1.0 / *c, div.getLhs());
  }
  if (auto add = dyn_cast<arith::AddFOp>(def)) {
    bool lhsScores = dependsOn(add.getLhs(), chain);
    if (lhsScores == dependsOn(add.getRhs(), chain))
      return state.fail(def, "adds two values that both or neither depend "
                             "on the scores");
    return lhsScores ? addMask(def, add.getRhs(), add.getLhs())
                     : addMask(def, add.getLhs(), add.getRhs());
  }
  // scores - M: torch's `scores - (1 - keep) * 1e4` and the like.
  if (auto sub = dyn_cast<arith::SubFOp>(def)) {
    if (!dependsOn(sub.getLhs(), chain) || dependsOn(sub.getRhs(), chain))
      return state.fail(def, "subtracts the scores from a value (only a "
                             "mask may be subtracted from them)");
    return addMask(def, sub.getRhs(), sub.getLhs(), /*subtract=*/true);
  }
  if (auto select = dyn_cast<arith::SelectOp>(def))
    return selectMask(select);
  return state.fail(def, "applies '" + def->getName().getStringRef() +
                             "' to the scores (only scaling by a constant "
                             "and masking are raised)");
}

LogicalResult raise::matchScoreStep(MatchState &state, Operation *op,
                                    Value chainInput, ScoreTerms &terms) {
  auto type = cast<RankedTensorType>(chainInput.getType());
  int64_t rank = type.getRank();
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) {
    FailureOr<SmallVector<int64_t>> canonical =
        canonicalDims(state, linalgOp, "the op between QK^T and the softmax");
    if (failed(canonical))
      return failure();
    AffineMap out =
        linalgOp.getMatchingIndexingMap(linalgOp.getDpsInitOperand(0));
    if (linalgOp.getNumLoops() != unsigned(rank) || !out.isIdentity())
      return state.fail(op, "is not elementwise over the scores");
    OpOperand *scores = nullptr;
    for (OpOperand *input : linalgOp.getDpsInputOperands())
      if (input->get() == chainInput)
        scores = input;
    if (!scores || !linalgOp.getMatchingIndexingMap(scores).isIdentity())
      return state.fail(op, "does not read the scores elementwise");
    if (linalgOp.payloadUsesValueFromOperand(linalgOp.getDpsInitOperand(0)))
      return state.fail(op, "reads its output operand");
    auto yield = cast<linalg::YieldOp>(linalgOp.getBlock()->getTerminator());
    StepMatcher step(state, op, op, linalgOp.getMatchingBlockArgument(scores),
                     rank, terms);
    return step.match(yield.getValues()[0]);
  }
  if (op->getName().getDialectNamespace() != "arith" ||
      op->getNumResults() != 1 || op->getResult(0).getType() != type)
    return state.fail(op, "is neither a linalg op nor an arith op on the "
                          "scores");
  StepMatcher step(state, op, /*owner=*/nullptr, chainInput, rank, terms);
  return step.match(op->getResult(0));
}

LogicalResult raise::checkCausal(MatchState &state, Operation *at,
                                 const ScoreTerms &terms, bool &causal) {
  causal = llvm::any_of(terms.masked, [](char m) { return m != 0; });
  if (!causal)
    return success();
  int64_t offset = terms.cols - terms.rows;
  for (int64_t i = 0; i < terms.rows; ++i)
    for (int64_t j = 0; j < terms.cols; ++j) {
      bool hidden = terms.masked[i * terms.cols + j];
      if (hidden != (j > i + offset))
        return state.fail(at, "masks the scores, but not causally with the "
                              "last query aligned to the last key: query " +
                                  Twine(i) +
                                  (hidden ? " does not see" : " sees") +
                                  " key " + Twine(j));
    }
  if (offset < 0)
    return state.fail(at, "masks causally with more queries than keys");
  return success();
}
