//===- RaiseSoftmax.cpp - softmax forms for qattn-raise-attention ---------===//
//
// Part of the qattn project.
//
// A softmax along the keys arrives as linalg.softmax or decomposed into
// linalg ops, as upstream's decomposition of linalg.softmax (the
// AggregatedOpInterface, `transform.structured.decompose_interface`) and
// frontends write it:
//
//   m = max_j x            (a reduction, maxnumf or maximumf)
//   e = exp(x - m)         (elementwise)
//   s = sum_j e            (a reduction, addf into zeros)
//   p = e / s              (elementwise)
//
// After --linalg-fuse-elementwise-ops the division moves into the P.V
// contraction's body and reshapes move between the pieces; both are
// accepted. The maximum's init does not change the result (any row-constant
// shift cancels in e / s) as long as it cannot exceed the scores: -inf, the
// lowest float, or NaN under maxnumf.
//
// The matcher anchors on the exp, the one op no other subgraph shares.
//
//===----------------------------------------------------------------------===//

#include "RaiseAttention.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"

#include <cmath>

using namespace mlir;
using namespace mlir::qattn;
using namespace mlir::qattn::raise;

/// The elementwise exp of a decomposed softmax: yields math.exp of a value.
static bool isExpSite(Operation *op) {
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  if (!linalgOp || linalgOp.getNumReductionLoops() != 0 ||
      linalgOp->getNumResults() != 1 || !linalgOp.hasPureTensorSemantics())
    return false;
  auto yield = cast<linalg::YieldOp>(linalgOp.getBlock()->getTerminator());
  return yield.getValues()[0].getDefiningOp<math::ExpOp>() != nullptr;
}

bool raise::isSoftmaxSite(Operation *op) {
  // On buffers (after bufferization) a softmax has no result to follow.
  if (op->getNumResults() != 1)
    return false;
  return isa<linalg::SoftmaxOp>(op) || isExpSite(op);
}

/// The users of `v` past leading-dim reshapes (any reshape with
/// `anyReshape`).
static SmallVector<OpOperand *> usesThroughReshapes(Value v,
                                                    bool anyReshape = false) {
  SmallVector<OpOperand *> uses;
  for (OpOperand &use : v.getUses()) {
    Operation *user = use.getOwner();
    bool reshape =
        user->getNumResults() == 1 &&
        (anyReshape ? isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp>(user)
                    : getLeadingReshape(user->getResult(0)) == user);
    if (reshape)
      llvm::append_range(uses,
                         usesThroughReshapes(user->getResult(0), anyReshape));
    else
      uses.push_back(&use);
  }
  return uses;
}

linalg::LinalgOp raise::getContractionUser(Value probs, bool anyReshape) {
  for (OpOperand *use : usesThroughReshapes(probs, anyReshape)) {
    auto op = dyn_cast<linalg::LinalgOp>(use->getOwner());
    if (op && op.getNumReductionLoops() > 0 && op.getNumDpsInputs() >= 2 &&
        use->getOperandNumber() == 0)
      return op;
  }
  return nullptr;
}

namespace {
enum class Combiner { max, sum };

/// Decomposed-softmax pieces; every match records its ops in `state`.
class SoftmaxMatcher {
public:
  explicit SoftmaxMatcher(MatchState &state) : state(state) {}
  FailureOr<SoftmaxMatch> match(linalg::LinalgOp exp);

private:
  FailureOr<Value> rowReduction(Operation *user, Value v, Combiner kind);
  LogicalResult rowOperand(linalg::LinalgOp op, BlockArgument arg,
                           StringRef what);
  MatchState &state;
};
} // namespace

/// The input of a reduction along the last dim of `v`'s producer (through
/// leading-dim reshapes) that combines with `kind`.
FailureOr<Value> SoftmaxMatcher::rowReduction(Operation *user, Value v,
                                              Combiner kind) {
  StringRef what = kind == Combiner::max ? "the row maximum" : "the row sum";
  v = stripLeadingReshapes(v, &state);
  auto op = v.getDefiningOp<linalg::LinalgOp>();
  if (!op || op.getNumDpsInputs() != 1 || op.getNumDpsInits() != 1 ||
      op.getNumReductionLoops() != 1 || !op.hasPureTensorSemantics())
    return state.fail(user, what + " is not computed by a linalg reduction");
  unsigned loops = op.getNumLoops();
  AffineMap in = op.getMatchingIndexingMap(op.getDpsInputOperand(0));
  AffineMap out = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  if (!in.isIdentity() || out.getNumResults() != loops - 1 ||
      iterators.back() != utils::IteratorType::reduction ||
      out != in.dropResult(loops - 1))
    return state.fail(op, what + " does not reduce along the last dim");
  Block *body = op.getBlock();
  Value yielded = cast<linalg::YieldOp>(body->getTerminator()).getValues()[0];
  Operation *combine = yielded.getDefiningOp();
  bool combines =
      combine && combine->getNumOperands() == 2 &&
      llvm::is_contained(combine->getOperands(), body->getArgument(0)) &&
      llvm::is_contained(combine->getOperands(), body->getArgument(1)) &&
      (kind == Combiner::max ? isa<arith::MaxNumFOp, arith::MaximumFOp>(combine)
                             : isa<arith::AddFOp>(combine));
  if (!combines)
    return state.fail(op, what + " does not combine with " +
                              (kind == Combiner::max
                                   ? "arith.maxnumf or arith.maximumf"
                                   : "arith.addf"));
  Value init = op.getDpsInitOperand(0)->get();
  if (kind == Combiner::sum && !isZeroTensor(init))
    return state.fail(op, "the row sum does not start at zero");
  if (kind == Combiner::max) {
    // The init may only be a value that the scores cannot stay below.
    std::optional<double> start;
    if (auto fill = init.getDefiningOp<linalg::FillOp>()) {
      FloatAttr attr;
      if (matchPattern(fill.getInputs()[0], m_Constant(&attr)))
        start = attr.getValueAsDouble();
    } else if (auto generic = init.getDefiningOp<linalg::GenericOp>()) {
      FloatAttr attr;
      Value y = cast<linalg::YieldOp>(generic.getBlock()->getTerminator())
                    .getValues()[0];
      if (generic.getNumDpsInputs() == 0 && matchPattern(y, m_Constant(&attr)))
        start = attr.getValueAsDouble();
    }
    bool ok =
        start && ((std::isinf(*start) && *start < 0) || *start <= -3.0e38 ||
                  (std::isnan(*start) && isa<arith::MaxNumFOp>(combine)));
    if (!ok)
      return state.fail(op, "the row maximum does not start at -inf");
  }
  state.matched.insert(op);
  return op.getDpsInputOperand(0)->get();
}

/// `arg` reads an operand indexed by [batch, row].
LogicalResult SoftmaxMatcher::rowOperand(linalg::LinalgOp op, BlockArgument arg,
                                         StringRef what) {
  FailureOr<SmallVector<int64_t>> canonical =
      canonicalDims(state, op, "the softmax");
  if (failed(canonical))
    return failure();
  int64_t rank = op.getNumLoops();
  std::optional<SmallVector<int64_t>> dims =
      operandDims(op, op.getDpsInputOperand(arg.getArgNumber()), *canonical);
  if (!dims || *dims != batchThen(rank, {rank - 2}))
    return state.fail(op, what + " is not read once per row");
  return success();
}

FailureOr<SoftmaxMatch> SoftmaxMatcher::match(linalg::LinalgOp exp) {
  SoftmaxMatch m;
  m.site = exp;
  FailureOr<SmallVector<int64_t>> canonical =
      canonicalDims(state, exp, "the softmax's exp");
  if (failed(canonical))
    return failure();
  Block *body = exp.getBlock();
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  auto expOp = yield.getValues()[0].getDefiningOp<math::ExpOp>();
  auto sub = expOp.getOperand().getDefiningOp<arith::SubFOp>();
  auto x = sub ? dyn_cast<BlockArgument>(sub.getLhs()) : BlockArgument();
  auto rowMax = sub ? dyn_cast<BlockArgument>(sub.getRhs()) : BlockArgument();
  if (!x || !rowMax || x.getOwner() != body || rowMax.getOwner() != body ||
      x.getArgNumber() >= unsigned(exp.getNumDpsInputs()) ||
      rowMax.getArgNumber() >= unsigned(exp.getNumDpsInputs()))
    return state.fail(exp, "computes exp of a value that is not the scores "
                           "minus their row maximum");
  OpOperand *scores = exp.getDpsInputOperand(x.getArgNumber());
  if (!exp.getMatchingIndexingMap(scores).isIdentity() ||
      !exp.getMatchingIndexingMap(exp.getDpsInitOperand(0)).isIdentity())
    return state.fail(exp, "does not compute exp elementwise over the scores");
  if (failed(rowOperand(exp, rowMax, "the maximum the exp subtracts")))
    return failure();
  FailureOr<Value> maxInput = rowReduction(
      exp, exp.getDpsInputOperand(rowMax.getArgNumber())->get(), Combiner::max);
  if (failed(maxInput))
    return failure();
  m.scores = scores->get();
  if (stripLeadingReshapes(*maxInput, &state) !=
      stripLeadingReshapes(m.scores, &state))
    return state.fail(exp, "subtracts the maximum of other scores than it "
                           "exponentiates");
  state.matched.insert(exp);

  // The exponentials go to the row sum and to the division (or to P.V,
  // which then divides).
  Value e = exp->getResult(0);
  SmallVector<OpOperand *> uses = usesThroughReshapes(e, /*anyReshape=*/true);
  OpOperand *sumUse = nullptr, *next = nullptr;
  for (OpOperand *use : uses) {
    auto user = dyn_cast<linalg::LinalgOp>(use->getOwner());
    if (!sumUse && user && user.getNumDpsInputs() == 1 &&
        user.getNumReductionLoops() == 1)
      sumUse = use;
    else if (!next)
      next = use;
    else
      return state.fail(exp, "the softmax's exponentials have a use outside "
                             "the attention");
  }
  if (!sumUse || !next)
    return state.fail(exp, "the exponentials are not both summed and "
                           "divided by their sum");
  Value sums = sumUse->getOwner()->getResult(0);
  FailureOr<Value> sumInput = rowReduction(exp, sums, Combiner::sum);
  if (failed(sumInput))
    return failure();
  // The reshapes between the exp and its users belong to the chain too.
  if (stripLeadingReshapes(next->get(), &state) != e ||
      stripLeadingReshapes(sumUse->get(), &state) != e)
    return state.fail(exp, "the exponentials reach their users through a "
                           "reshape of more than the batch and head dims (as "
                           "reshape propagation leaves unit dims); only "
                           "reshapes that keep the query and key dims are "
                           "followed");

  auto div = dyn_cast<linalg::LinalgOp>(next->getOwner());
  if (div && div.getNumReductionLoops() == 0 && div.getNumDpsInputs() == 2) {
    // p = e / s as its own op.
    Block *divBody = div.getBlock();
    auto quotient = cast<linalg::YieldOp>(divBody->getTerminator())
                        .getValues()[0]
                        .getDefiningOp<arith::DivFOp>();
    auto num =
        quotient ? dyn_cast<BlockArgument>(quotient.getLhs()) : BlockArgument();
    auto den =
        quotient ? dyn_cast<BlockArgument>(quotient.getRhs()) : BlockArgument();
    if (!num || !den || num.getOwner() != divBody ||
        den.getOwner() != divBody ||
        num.getArgNumber() != next->getOperandNumber() ||
        den.getArgNumber() >= 2 ||
        !div.getMatchingIndexingMap(next).isIdentity() ||
        !div.getMatchingIndexingMap(div.getDpsInitOperand(0)).isIdentity())
      return state.fail(div, "does not divide the exponentials by their row "
                             "sums elementwise");
    if (failed(canonicalDims(state, div, "the softmax's division")) ||
        failed(rowOperand(div, den, "the row sum the softmax divides by")))
      return failure();
    Value denominator = div.getDpsInputOperand(den.getArgNumber())->get();
    if (stripLeadingReshapes(denominator, &state) != sums)
      return state.fail(div, "divides the exponentials by another value than "
                             "their row sums");
    state.matched.insert(div);
    m.probs = div->getResult(0);
    return m;
  }
  // P.V divides: the contraction's third operand must be the row sums.
  m.probs = next->get();
  m.rowSums = sums;
  return m;
}

FailureOr<SoftmaxMatch> raise::matchSoftmax(MatchState &state,
                                            Operation *site) {
  if (auto softmax = dyn_cast<linalg::SoftmaxOp>(site)) {
    auto type = cast<RankedTensorType>(softmax.getInput().getType());
    if (type.getRank() < 2 || type.getRank() > 4)
      return state.fail(softmax, "softmax is not over rank-2 to rank-4 "
                                 "scores");
    if (softmax.getDimension() != uint64_t(type.getRank() - 1))
      return state.fail(softmax, "softmax runs along dimension " +
                                     Twine(softmax.getDimension()) +
                                     ", not the key dimension " +
                                     Twine(type.getRank() - 1));
    if (!softmax->getResult(0).hasOneUse())
      return state.fail(softmax, "softmax result has more than one use");
    state.matched.insert(softmax);
    SoftmaxMatch m;
    m.site = softmax;
    m.scores = softmax.getInput();
    m.probs = softmax->getResult(0);
    return m;
  }
  SoftmaxMatcher matcher(state);
  return matcher.match(cast<linalg::LinalgOp>(site));
}
