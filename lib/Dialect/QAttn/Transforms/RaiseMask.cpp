//===- RaiseMask.cpp - scaling and masks for qattn-raise-attention --------===//
//
// Part of the qattn project.
//
// Between QK^T and the softmax a program scales the scores and masks them.
// Masks come in many spellings: a select on linalg.index inside the scaling
// op, iota tensors (tensor.generate, linalg.generic on linalg.index, dense
// constants) compared into an i1 tensor, arith.select or an additive 0/-inf
// tensor on whole tensors. Rather than pattern-match each spelling, the
// mask is evaluated: every value that does not depend on the scores is
// computed for each (query, key) pair by a small interpreter over arith,
// linalg and tensor ops, and the union of the hidden pairs is compared with
// qattn's causal mask. A mask that varies with the batch or head is refused
// where the interpreter first meets a batch index.
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
// The mask interpreter
//===----------------------------------------------------------------------===//

namespace {
/// An index into a tensor or a loop point; batch and head positions are
/// unknown (the mask must not depend on them).
using Index = SmallVector<std::optional<int64_t>>;

/// An integer (index, iN, i1) or float value.
struct Scalar {
  bool isFloat = false;
  int64_t i = 0;
  double f = 0.0;
  double asDouble() const { return isFloat ? f : double(i); }
  static Scalar ofInt(int64_t v) { return {false, v, 0.0}; }
  static Scalar ofFloat(double v) { return {true, 0, v}; }
};

/// Evaluates values that do not depend on the scores, one element at a time.
class Interpreter {
public:
  /// Failures without an op of their own are reported at `step`.
  Interpreter(MatchState &state, Operation *step) : state(state), step(step) {}

  /// `v` at loop point `at` of `owner` (a linalg op or tensor.generate whose
  /// body holds v); for a tensor `v`, its element at index `at`.
  FailureOr<Scalar> eval(Value v, Operation *owner, const Index &at);

private:
  FailureOr<Scalar> element(Value tensor, const Index &index);
  FailureOr<Scalar> arith(Operation *op, Operation *owner, const Index &at);
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
} // namespace

/// The index `map` reads at loop point `at`.
static Index applyMap(AffineMap map, const Index &at) {
  Index index;
  for (AffineExpr e : map.getResults()) {
    if (auto d = dyn_cast<AffineDimExpr>(e))
      index.push_back(at[d.getPosition()]);
    else if (auto c = dyn_cast<AffineConstantExpr>(e))
      index.push_back(c.getValue());
    else
      index.push_back(std::nullopt);
  }
  return index;
}

FailureOr<Scalar> Interpreter::eval(Value v, Operation *owner,
                                    const Index &at) {
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    Operation *parent = arg.getOwner()->getParentOp();
    if (parent != owner)
      return state.fail(parent, "masks the scores with a block argument of "
                                "another op");
    if (isa<tensor::GenerateOp>(parent)) {
      std::optional<int64_t> i = at[arg.getArgNumber()];
      if (!i)
        return variesWithBatch(parent);
      return Scalar::ofInt(*i);
    }
    auto op = cast<linalg::LinalgOp>(parent);
    if (arg.getArgNumber() >= unsigned(op.getNumDpsInputs()))
      return state.fail(op, "reads its output operand");
    OpOperand *input = op.getDpsInputOperand(arg.getArgNumber());
    if (!isa<ShapedType>(input->get().getType()))
      return eval(input->get(), nullptr, {});
    return element(input->get(),
                   applyMap(op.getMatchingIndexingMap(input), at));
  }
  if (isa<RankedTensorType>(v.getType()))
    return element(v, at);
  Operation *def = v.getDefiningOp();
  if (auto index = dyn_cast<linalg::IndexOp>(def)) {
    if (def->getParentOp() != owner || !at[index.getDim()])
      return variesWithBatch(def);
    return Scalar::ofInt(*at[index.getDim()]);
  }
  return arith(def, owner, at);
}

FailureOr<Scalar> Interpreter::arith(Operation *op, Operation *owner,
                                     const Index &at) {
  Attribute attr;
  if (matchPattern(op->getResult(0), m_Constant(&attr))) {
    if (auto f = dyn_cast<FloatAttr>(attr))
      return Scalar::ofFloat(f.getValueAsDouble());
    if (auto i = dyn_cast<IntegerAttr>(attr))
      return Scalar::ofInt(i.getType().isInteger(1)
                               ? int64_t(i.getValue().getZExtValue())
                               : i.getValue().getSExtValue());
    return unsupported(op);
  }
  SmallVector<Scalar> args;
  for (Value operand : op->getOperands()) {
    FailureOr<Scalar> s = eval(operand, owner, at);
    if (failed(s))
      return failure();
    args.push_back(*s);
  }
  auto in = [&](unsigned k) { return args[k].i; };
  auto fl = [&](unsigned k) { return args[k].asDouble(); };
  if (isa<arith::IndexCastOp, arith::IndexCastUIOp, arith::ExtSIOp,
          arith::ExtUIOp, arith::TruncIOp>(op))
    return args[0];
  if (isa<arith::SIToFPOp, arith::UIToFPOp, arith::ExtFOp, arith::TruncFOp>(op))
    return Scalar::ofFloat(fl(0));
  if (isa<arith::FPToSIOp, arith::FPToUIOp>(op))
    return Scalar::ofInt(int64_t(fl(0)));
  if (auto select = dyn_cast<arith::SelectOp>(op))
    return in(0) ? args[1] : args[2];
  if (isa<arith::AddIOp>(op))
    return Scalar::ofInt(in(0) + in(1));
  if (isa<arith::SubIOp>(op))
    return Scalar::ofInt(in(0) - in(1));
  if (isa<arith::MulIOp>(op))
    return Scalar::ofInt(in(0) * in(1));
  if (isa<arith::AndIOp>(op))
    return Scalar::ofInt(in(0) & in(1));
  if (isa<arith::OrIOp>(op))
    return Scalar::ofInt(in(0) | in(1));
  if (isa<arith::XOrIOp>(op))
    return Scalar::ofInt(in(0) ^ in(1));
  if (isa<arith::AddFOp>(op))
    return Scalar::ofFloat(fl(0) + fl(1));
  if (isa<arith::SubFOp>(op))
    return Scalar::ofFloat(fl(0) - fl(1));
  if (isa<arith::MulFOp>(op))
    return Scalar::ofFloat(fl(0) * fl(1));
  if (isa<arith::NegFOp>(op))
    return Scalar::ofFloat(-fl(0));
  if (auto cmp = dyn_cast<arith::CmpIOp>(op)) {
    // Indices are small and non-negative, so the unsigned predicates agree
    // with the signed ones.
    int64_t a = in(0), b = in(1);
    switch (cmp.getPredicate()) {
    case arith::CmpIPredicate::eq:
      return Scalar::ofInt(a == b);
    case arith::CmpIPredicate::ne:
      return Scalar::ofInt(a != b);
    case arith::CmpIPredicate::slt:
    case arith::CmpIPredicate::ult:
      return Scalar::ofInt(a < b);
    case arith::CmpIPredicate::sle:
    case arith::CmpIPredicate::ule:
      return Scalar::ofInt(a <= b);
    case arith::CmpIPredicate::sgt:
    case arith::CmpIPredicate::ugt:
      return Scalar::ofInt(a > b);
    case arith::CmpIPredicate::sge:
    case arith::CmpIPredicate::uge:
      return Scalar::ofInt(a >= b);
    }
  }
  if (auto cmp = dyn_cast<arith::CmpFOp>(op)) {
    double a = fl(0), b = fl(1);
    switch (cmp.getPredicate()) {
    case arith::CmpFPredicate::OEQ:
    case arith::CmpFPredicate::UEQ:
      return Scalar::ofInt(a == b);
    case arith::CmpFPredicate::ONE:
    case arith::CmpFPredicate::UNE:
      return Scalar::ofInt(a != b);
    case arith::CmpFPredicate::OLT:
    case arith::CmpFPredicate::ULT:
      return Scalar::ofInt(a < b);
    case arith::CmpFPredicate::OLE:
    case arith::CmpFPredicate::ULE:
      return Scalar::ofInt(a <= b);
    case arith::CmpFPredicate::OGT:
    case arith::CmpFPredicate::UGT:
      return Scalar::ofInt(a > b);
    case arith::CmpFPredicate::OGE:
    case arith::CmpFPredicate::UGE:
      return Scalar::ofInt(a >= b);
    default:
      break;
    }
  }
  return unsupported(op);
}

FailureOr<Scalar> Interpreter::element(Value tensor, const Index &index) {
  auto type = cast<RankedTensorType>(tensor.getType());
  Operation *def = tensor.getDefiningOp();
  if (!def)
    return state.fail(step, "masks the scores with a tensor that is not "
                            "computed from constants");
  // An unknown (batch) position is fine along a dim of size 1.
  Index at(index);
  for (auto [d, i] : llvm::enumerate(at))
    if (!i && type.getDimSize(d) == 1)
      i = 0;

  DenseElementsAttr dense;
  if (matchPattern(tensor, m_Constant(&dense))) {
    int64_t linear = 0;
    if (!dense.isSplat())
      for (auto [d, i] : llvm::enumerate(at)) {
        if (!i)
          return variesWithBatch(def);
        linear = linear * type.getDimSize(d) + *i;
      }
    Type elt = dense.getElementType();
    if (isa<FloatType>(elt))
      return Scalar::ofFloat((dense.isSplat()
                                  ? dense.getSplatValue<APFloat>()
                                  : dense.getValues<APFloat>()[linear])
                                 .convertToDouble());
    APInt v = dense.isSplat() ? dense.getSplatValue<APInt>()
                              : dense.getValues<APInt>()[linear];
    return Scalar::ofInt(elt.isInteger(1) ? int64_t(v.getZExtValue())
                                          : v.getSExtValue());
  }
  if (auto fill = dyn_cast<linalg::FillOp>(def))
    return eval(fill.getInputs()[0], nullptr, {});
  if (auto generate = dyn_cast<tensor::GenerateOp>(def))
    return eval(
        cast<tensor::YieldOp>(generate.getBody().front().getTerminator())
            .getValue(),
        generate, at);
  if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(def)) {
    ArrayRef<int64_t> src = collapse.getSrcType().getShape();
    Index srcAt;
    for (auto [g, group] :
         llvm::enumerate(collapse.getReassociationIndices())) {
      std::optional<int64_t> linear = at[g];
      for (int64_t d : llvm::reverse(group)) {
        srcAt.push_back(linear ? std::optional<int64_t>(*linear % src[d])
                               : std::nullopt);
        if (linear)
          linear = *linear / src[d];
      }
      std::reverse(srcAt.end() - group.size(), srcAt.end());
    }
    return element(collapse.getSrc(), srcAt);
  }
  if (auto expand = dyn_cast<tensor::ExpandShapeOp>(def)) {
    Index srcAt;
    for (const ReassociationIndices &group : expand.getReassociationIndices()) {
      std::optional<int64_t> linear = 0;
      for (int64_t d : group)
        linear =
            linear && at[d]
                ? std::optional<int64_t>(*linear * type.getDimSize(d) + *at[d])
                : std::nullopt;
      srcAt.push_back(linear);
    }
    return element(expand.getSrc(), srcAt);
  }
  if (auto op = dyn_cast<linalg::LinalgOp>(def)) {
    // Elementwise ops, linalg.broadcast and linalg.transpose alike: the
    // result's map gives each loop its position.
    if (op.getNumReductionLoops() != 0 || op.getNumDpsInits() != 1 ||
        !op.hasPureTensorSemantics())
      return unsupported(def);
    AffineMap out = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
    if (!out.isPermutation())
      return unsupported(def);
    Index point(op.getNumLoops());
    for (unsigned r = 0; r < out.getNumResults(); ++r)
      point[out.getDimPosition(r)] = at[r];
    auto yield = cast<linalg::YieldOp>(op.getBlock()->getTerminator());
    return eval(yield.getValues()[0], op, point);
  }
  if (def->getNumResults() == 1 &&
      def->getName().getDialectNamespace() == "arith")
    return arith(def, nullptr, at);
  return unsupported(def);
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

  ///   e := scores | e * c | c * e | e / c | e + M | M + e
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
  LogicalResult addMask(Operation *def, Value mask, Value rest);
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

LogicalResult StepMatcher::addMask(Operation *def, Value mask, Value rest) {
  for (int64_t i = 0; i < terms.rows; ++i)
    for (int64_t j = 0; j < terms.cols; ++j) {
      FailureOr<Scalar> m = interp.eval(mask, owner, point(i, j));
      if (failed(m))
        return failure();
      double value = m->asDouble();
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
