//===- RaiseContraction.cpp - QK^T and P.V for qattn-raise-attention ------===//
//
// Part of the qattn project.
//
// The two contractions of an attention and where their operands come from.
// A contraction is read through the LinalgOp interface only (indexing maps,
// iterator types, the body), so linalg.generic, linalg.matmul and
// linalg.batch_matmul go through one set of checks, before and after
// --linalg-generalize-named-ops. Operands are followed back through the
// reshapes that flatten batch and heads for a batch_matmul, the transposes
// that make K^T and the broadcasts that repeat KV heads for grouped queries.
//
//===----------------------------------------------------------------------===//

#include "RaiseAttention.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::qattn;
using namespace mlir::qattn::raise;

//===----------------------------------------------------------------------===//
// Canonical loop names
//===----------------------------------------------------------------------===//

SmallVector<int64_t> raise::batchThen(int64_t rank, ArrayRef<int64_t> tail) {
  SmallVector<int64_t> dims;
  for (int64_t d = 0; d < rank - 2; ++d)
    dims.push_back(d);
  llvm::append_range(dims, tail);
  return dims;
}

FailureOr<SmallVector<int64_t>>
raise::canonicalDims(MatchState &state, linalg::LinalgOp op, StringRef what) {
  if (op.getNumDpsInits() != 1 || op->getNumResults() != 1 ||
      !op.hasPureTensorSemantics())
    return state.fail(op, what + " is not a tensor op with one result");
  unsigned loops = op.getNumLoops();
  AffineMap out = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  unsigned rank = out.getNumResults();
  if (rank < 2 || rank > 5 || !out.isProjectedPermutation() ||
      (loops != rank && loops != rank + 1))
    return state.fail(op, what + " does not index a rank-2 to rank-5 result "
                                 "by its loops");
  SmallVector<int64_t> canonical(loops, rank);
  for (unsigned r = 0; r < rank; ++r)
    canonical[out.getDimPosition(r)] = r;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  for (unsigned l = 0; l < loops; ++l) {
    bool reduced = canonical[l] == int64_t(rank);
    if (reduced != (iterators[l] == utils::IteratorType::reduction))
      return state.fail(op, what + " reduces over a loop that indexes its "
                                   "result");
  }
  return canonical;
}

std::optional<SmallVector<int64_t>>
raise::operandDims(linalg::LinalgOp op, OpOperand *operand,
                   ArrayRef<int64_t> canonical) {
  SmallVector<int64_t> dims;
  for (AffineExpr e : op.getMatchingIndexingMap(operand).getResults()) {
    auto d = dyn_cast<AffineDimExpr>(e);
    if (!d)
      return std::nullopt;
    dims.push_back(canonical[d.getPosition()]);
  }
  return dims;
}

//===----------------------------------------------------------------------===//
// Bodies and inits
//===----------------------------------------------------------------------===//

/// `v` without a float extension (mixed-precision bodies widen the inputs).
static Value stripExt(Value v) {
  if (auto ext = v.getDefiningOp<arith::ExtFOp>())
    return ext.getIn();
  return v;
}

/// a * b (either order) of the body's block arguments `a` and `b`, or, with
/// `divisor`, (a / s) * b or (a * b) / s.
static bool isProduct(Value v, Value a, Value b, Value divisor) {
  auto plain = [&](Value x, Value lhs, Value rhs) {
    auto mul = x.getDefiningOp<arith::MulFOp>();
    if (!mul)
      return false;
    Value p = stripExt(mul.getLhs()), q = stripExt(mul.getRhs());
    return (p == lhs && q == rhs) || (p == rhs && q == lhs);
  };
  if (!divisor)
    return plain(v, a, b);
  if (auto div = v.getDefiningOp<arith::DivFOp>())
    return stripExt(div.getRhs()) == divisor && plain(div.getLhs(), a, b);
  auto mul = v.getDefiningOp<arith::MulFOp>();
  if (!mul)
    return false;
  for (auto [x, y] : {std::pair(mul.getLhs(), mul.getRhs()),
                      std::pair(mul.getRhs(), mul.getLhs())}) {
    auto div = x.getDefiningOp<arith::DivFOp>();
    if (div && stripExt(div.getLhs()) == a &&
        stripExt(div.getRhs()) == divisor && stripExt(y) == b)
      return true;
  }
  return false;
}

/// acc + a * b (optionally times or over a constant: the scale folded into
/// the contraction), the operands possibly widened by arith.extf.
static LogicalResult matchMulAddBody(MatchState &state, linalg::LinalgOp op,
                                     StringRef what, Value b, Value divisor,
                                     double &scale) {
  Block *body = op.getBlock();
  Value a = body->getArgument(0),
        acc = op.getMatchingBlockArgument(op.getDpsInitOperand(0));
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  auto add = yield.getValues()[0].getDefiningOp<arith::AddFOp>();
  if (!add)
    return state.fail(op, what + " does not accumulate with arith.addf");
  Value term = add.getLhs() == acc   ? add.getRhs()
               : add.getRhs() == acc ? add.getLhs()
                                     : Value();
  if (!term)
    return state.fail(op, what + " does not add to its accumulator");
  scale = 1.0;
  if (isProduct(term, a, b, divisor))
    return success();
  if (auto mul = term.getDefiningOp<arith::MulFOp>()) {
    for (auto [p, c] : {std::pair(mul.getLhs(), mul.getRhs()),
                        std::pair(mul.getRhs(), mul.getLhs())}) {
      std::optional<double> s = scalarConstant(op, c);
      if (s && isProduct(p, a, b, divisor)) {
        scale = *s;
        return success();
      }
    }
  }
  if (auto div = term.getDefiningOp<arith::DivFOp>()) {
    std::optional<double> s = scalarConstant(op, div.getRhs());
    if (s && *s != 0.0 && isProduct(div.getLhs(), a, b, divisor)) {
      scale = 1.0 / *s;
      return success();
    }
  }
  if (divisor)
    return state.fail(op, what + " is not a sum of products of its operands "
                                 "divided by the softmax's row sums");
  return state.fail(op, what + " is not a sum of products (optionally scaled "
                               "by a constant)");
}

bool raise::isZeroTensor(Value v) {
  if (matchPattern(v, m_AnyZeroFloat()))
    return true;
  if (auto fill = v.getDefiningOp<linalg::FillOp>())
    return matchPattern(fill.getInputs()[0], m_AnyZeroFloat());
  auto generic = v.getDefiningOp<linalg::GenericOp>();
  if (!generic || generic.getNumReductionLoops() != 0 ||
      generic->getNumResults() != 1)
    return false;
  Value yielded =
      cast<linalg::YieldOp>(generic.getBlock()->getTerminator()).getValues()[0];
  if (matchPattern(yielded, m_AnyZeroFloat()))
    return true;
  auto arg = dyn_cast<BlockArgument>(yielded);
  return arg && arg.getOwner() == generic.getBlock() &&
         arg.getArgNumber() < unsigned(generic.getNumDpsInputs()) &&
         isZeroTensor(generic.getDpsInputOperand(arg.getArgNumber())->get());
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

FailureOr<Contraction> raise::matchContraction(MatchState &state,
                                               linalg::LinalgOp op,
                                               StringRef what,
                                               bool allowRowDivisor) {
  int64_t inputs = op.getNumDpsInputs();
  if (inputs != 2 && !(allowRowDivisor && inputs == 3))
    return state.fail(op, what + " is not a contraction of two operands");
  FailureOr<SmallVector<int64_t>> canonical = canonicalDims(state, op, what);
  if (failed(canonical))
    return failure();
  Contraction c;
  c.op = op;
  c.rank = op.getMatchingIndexingMap(op.getDpsInitOperand(0)).getNumResults();
  int64_t row = c.rank - 2, col = c.rank - 1, red = c.rank;
  if (op.getNumLoops() != unsigned(c.rank + 1))
    return state.fail(op, what + " is not a contraction (expected one "
                                 "reduced loop besides its result's)");
  // With three inputs one is the row divisor; the other is R.
  OpOperand *rhsOperand = op.getDpsInputOperand(1);
  OpOperand *divisor = inputs == 3 ? op.getDpsInputOperand(2) : nullptr;
  if (divisor && operandDims(op, rhsOperand, *canonical) ==
                     std::optional(batchThen(c.rank, {row})))
    std::swap(rhsOperand, divisor);
  std::optional<SmallVector<int64_t>> lhs =
      operandDims(op, op.getDpsInputOperand(0), *canonical);
  std::optional<SmallVector<int64_t>> rhs =
      operandDims(op, rhsOperand, *canonical);
  if (!lhs || *lhs != batchThen(c.rank, {row, red}))
    return state.fail(op, what + " does not read its left operand as "
                                 "[batch, row, reduced]");
  // Elementwise fusion folds a grouped-query broadcast into the maps: the
  // right operand then skips the batch dim just before the rows.
  if (rhs && c.rank >= 3 && rhs->size() == size_t(c.rank - 1) &&
      !llvm::is_contained(*rhs, row - 1)) {
    rhs->insert(rhs->begin() + (row - 1), row - 1);
    c.rhsRepeat =
        cast<ShapedType>(op->getResult(0).getType()).getDimSize(row - 1);
  }
  if (rhs && *rhs == batchThen(c.rank, {col, red}))
    c.rhsReducedLast = true;
  else if (!rhs || *rhs != batchThen(c.rank, {red, col}))
    return state.fail(op, what + " reads its right operand in an unsupported "
                                 "layout");
  for (Value operand : op->getOperands())
    if (!isa<FloatType>(getElementTypeOrSelf(operand.getType())))
      return state.fail(op, what + " is not on floats");
  Value divisorArg;
  if (divisor) {
    std::optional<SmallVector<int64_t>> dims =
        operandDims(op, divisor, *canonical);
    if (!dims || *dims != batchThen(c.rank, {row}))
      return state.fail(op, what + " reads a third operand that is not "
                                   "indexed by [batch, row]");
    c.rowDivisor = divisor->get();
    divisorArg = op.getMatchingBlockArgument(divisor);
  }
  if (failed(matchMulAddBody(state, op, what,
                             op.getMatchingBlockArgument(rhsOperand),
                             divisorArg, c.scale)))
    return failure();
  if (!isZeroTensor(op.getDpsInitOperand(0)->get()))
    return state.fail(op, what + " does not accumulate into zeros");
  c.lhs = op.getDpsInputOperand(0)->get();
  c.rhs = rhsOperand->get();
  return c;
}

//===----------------------------------------------------------------------===//
// Operand views
//===----------------------------------------------------------------------===//

/// Whether reassociation groups keep the last two dims on their own.
static bool keepsLastTwo(ArrayRef<ReassociationIndices> groups) {
  return groups.size() >= 2 && groups.back().size() == 1 &&
         groups[groups.size() - 2].size() == 1;
}

Operation *raise::getLeadingReshape(Value v) {
  if (auto c = v.getDefiningOp<tensor::CollapseShapeOp>())
    return keepsLastTwo(c.getReassociationIndices()) ? c : nullptr;
  if (auto e = v.getDefiningOp<tensor::ExpandShapeOp>())
    return keepsLastTwo(e.getReassociationIndices()) ? e : nullptr;
  return nullptr;
}

Value raise::stripLeadingReshapes(Value v, MatchState *state) {
  while (Operation *reshape = getLeadingReshape(v)) {
    if (state)
      state->matched.insert(reshape);
    v = reshape->getOperand(0);
  }
  return v;
}

/// A copy of its only input, the result's dims `perm` of the input's.
static linalg::LinalgOp getCopyOp(Value v) {
  auto op = v.getDefiningOp<linalg::LinalgOp>();
  if (!op || op.getNumDpsInputs() != 1 || op.getNumDpsInits() != 1 ||
      op.getNumReductionLoops() != 0 || !op.hasPureTensorSemantics() ||
      !op.getMatchingIndexingMap(op.getDpsInitOperand(0)).isPermutation())
    return nullptr;
  auto yield = cast<linalg::YieldOp>(op.getBlock()->getTerminator());
  if (yield.getValues()[0] != op.getBlock()->getArgument(0))
    return nullptr;
  return op;
}

/// The input dims a copy reads, as a map from its result's dims.
static AffineMap readMap(linalg::LinalgOp op) {
  AffineMap out = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  return op.getMatchingIndexingMap(op.getDpsInputOperand(0))
      .compose(inversePermutation(out));
}

/// Whether a copy swaps the last two dims of its input.
static bool isLastTwoTranspose(linalg::LinalgOp op) {
  AffineMap in = readMap(op);
  unsigned n = in.getNumResults();
  if (n < 2 || n != op.getNumLoops() || !in.isPermutation())
    return false;
  for (unsigned r = 0; r < n; ++r) {
    unsigned want = r == n - 2 ? n - 1 : r == n - 1 ? n - 2 : r;
    if (in.getDimPosition(r) != want)
      return false;
  }
  return true;
}

/// Whether a copy adds one dim just before the last two of its input.
static bool isHeadRepeat(linalg::LinalgOp op) {
  AffineMap in = readMap(op);
  unsigned n = op.getNumLoops();
  if (n < 3 || in.getNumResults() != n - 1)
    return false;
  for (unsigned r = 0; r + 1 < n; ++r) {
    auto d = dyn_cast<AffineDimExpr>(in.getResult(r));
    if (!d || d.getPosition() != (r < n - 3 ? r : r + 1))
      return false;
  }
  return true;
}

OperandView raise::peelOperand(Value v, MatchState &state) {
  OperandView view;
  while (true) {
    if (Operation *reshape = getLeadingReshape(v)) {
      state.matched.insert(reshape);
      v = reshape->getOperand(0);
      continue;
    }
    // linalg.transpose and linalg.broadcast are copies through the LinalgOp
    // interface too: their maps say what they do.
    linalg::LinalgOp copy = getCopyOp(v);
    if (!copy)
      break;
    auto type = cast<RankedTensorType>(v.getType());
    if (isLastTwoTranspose(copy)) {
      view.transposed = !view.transposed;
    } else if (isHeadRepeat(copy) && type.getRank() >= 3 &&
               !type.isDynamicDim(type.getRank() - 3)) {
      view.repeat *= type.getDimSize(type.getRank() - 3);
    } else {
      break;
    }
    state.matched.insert(copy);
    v = copy.getDpsInputOperand(0)->get();
  }
  view.base = v;
  return view;
}
