//===- QAttnRaiseAttention.cpp - plain linalg attention to qattn ops ------===//
//
// Part of the qattn project.
//
// An ML compiler's attention arrives as upstream ops on tensors: a QK^T
// contraction, elementwise scaling and masking, linalg.softmax and a P.V
// contraction. Recognizing that chain lets such a compiler adopt qattn's
// quantized KV cache by adding one pass, with the scheme as pass options.
//
// The matcher anchors on linalg.softmax (the op no other subgraph shares) and
// walks out from it. Candidates are matched first and rewritten afterwards,
// rather than by a greedy pattern, so that each almost-match is diagnosed
// exactly once with the reason it was left alone.
//
//===----------------------------------------------------------------------===//

#include "qattn/Dialect/QAttn/IR/QAttnOps.h"
#include "qattn/Dialect/QAttn/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/Support/DebugLog.h"

#include <functional>

#define DEBUG_TYPE "qattn-raise-attention"

namespace mlir::qattn {
#define GEN_PASS_DEF_QATTNRAISEATTENTION
#include "qattn/Dialect/QAttn/Transforms/Passes.h.inc"
} // namespace mlir::qattn

using namespace mlir;
using namespace mlir::qattn;

/// An additive mask value at or below this hides its key: after the softmax
/// subtracts the row maximum, exp of it is 0 in f32 (and in f64 below -745)
/// unless the scores themselves reach this size.
static constexpr double kMaskedBelow = -1.0e4;

/// Canonical loop names of the 4-D attention contractions:
/// scores[b, h, i, j] = sum_c Q[b, h, i, c] K[b, h, j, c] and
/// out[b, h, i, c] = sum_j P[b, h, i, j] V[b, h, j, c], the reduced loop last.
enum : int64_t { kB = 0, kH = 1, kRow = 2, kCol = 3, kRed = 4 };

namespace {

/// Why a candidate was not raised, and where.
struct Mismatch {
  Operation *at = nullptr;
  std::string why;
};

/// A recognized softmax(s Q K^T + M) V.
struct AttentionMatch {
  Value q, k, v;              // [B, Hq, Nq, d], [B, Hkv, Nk, d], [B, Hkv, Nk, d]
  double scale = 1.0;
  bool causal = false;
  Operation *root = nullptr;  // the P.V contraction whose result is replaced
  SmallVector<Operation *> matched; // every op of the chain, root first
};

/// Records the first reason a match fails; every matcher returns failure()
/// through it.
class Matcher {
public:
  Mismatch mismatch;

  LogicalResult fail(Operation *at, const Twine &why) {
    if (!mismatch.at) {
      mismatch.at = at;
      mismatch.why = why.str();
    }
    return failure();
  }

  FailureOr<AttentionMatch> match(linalg::SoftmaxOp softmax);

private:
  /// The elementwise ops' effect on the scores, accumulated over the chain.
  struct ScoreTerms {
    int64_t rows = 0, cols = 0;
    double scale = 1.0;
    std::vector<char> masked; // rows x cols
  };

  FailureOr<SmallVector<int64_t>> canonicalDims(linalg::LinalgOp op,
                                                StringRef what);
  LogicalResult matchContraction(linalg::LinalgOp op, StringRef what,
                                 ArrayRef<int64_t> lhsDims,
                                 ArrayRef<ArrayRef<int64_t>> rhsDims,
                                 int64_t &rhsForm, double &scale);
  LogicalResult matchMulAddBody(linalg::LinalgOp op, StringRef what,
                                double &scale);
  LogicalResult matchZeroInit(linalg::LinalgOp op, StringRef what);
  LogicalResult matchElementwise(linalg::LinalgOp op, Value chainInput,
                                 ScoreTerms &terms);
  LogicalResult matchScoreExpr(linalg::LinalgOp op, BlockArgument chainArg,
                               Value v, ScoreTerms &terms);
  FailureOr<std::function<int64_t(int64_t, int64_t)>>
  buildIndexFn(linalg::LinalgOp op, Value v);
  FailureOr<std::function<double(int64_t, int64_t)>>
  constantGrid(linalg::LinalgOp op, BlockArgument arg);
  LogicalResult checkCausal(Operation *at, const ScoreTerms &terms,
                            bool &causal);
};
} // namespace

//===----------------------------------------------------------------------===//
// Small helpers
//===----------------------------------------------------------------------===//

/// The dims of an indexing map as canonical loop names, or none if a result
/// is not a plain loop dimension.
static std::optional<SmallVector<int64_t>>
mapDims(AffineMap map, ArrayRef<int64_t> canonical) {
  SmallVector<int64_t> dims;
  for (AffineExpr e : map.getResults()) {
    auto d = dyn_cast<AffineDimExpr>(e);
    if (!d)
      return std::nullopt;
    dims.push_back(canonical[d.getPosition()]);
  }
  return dims;
}

/// `v` without a float extension (mixed-precision bodies widen the inputs).
static Value stripExt(Value v) {
  if (auto ext = v.getDefiningOp<arith::ExtFOp>())
    return ext.getIn();
  return v;
}

/// The operand of `op` that feeds block argument `arg`, or null for the
/// output's argument.
static Value inputOf(linalg::LinalgOp op, BlockArgument arg) {
  if (arg.getOwner() != op.getBlock() ||
      arg.getArgNumber() >= unsigned(op.getNumDpsInputs()))
    return nullptr;
  return op.getDpsInputOperand(arg.getArgNumber())->get();
}

/// A float constant inside the body, or an input that is a scalar or splat
/// constant.
static std::optional<double> scalarConstant(linalg::LinalgOp op, Value v) {
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    v = inputOf(op, arg);
    if (!v)
      return std::nullopt;
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

/// Whether `v` is the same scalar in every element: used for the masked-out
/// branch of a select.
static bool isMaskValue(linalg::LinalgOp op, Value v) {
  std::optional<double> c = scalarConstant(op, v);
  return c && *c <= kMaskedBelow;
}

/// The shortest decimal that reads back as `d` (0.5, not 5.000000e-01).
static std::string formatDouble(double d) {
  SmallString<16> s;
  APFloat(d).toString(s);
  return s.str().str();
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

/// Loop position -> canonical name (b, h, row, col, red) of a 4-D batched
/// contraction or elementwise op: the output map names the parallel loops,
/// the one loop it leaves out is the reduction.
FailureOr<SmallVector<int64_t>> Matcher::canonicalDims(linalg::LinalgOp op,
                                                       StringRef what) {
  if (op.getNumDpsInits() != 1 || op->getNumResults() != 1 ||
      !op.hasPureTensorSemantics())
    return fail(op, what + " is not a tensor op with one result");
  unsigned loops = op.getNumLoops();
  AffineMap out = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  if (out.getNumResults() != 4 || !out.isProjectedPermutation() ||
      (loops != 4 && loops != 5))
    return fail(op, what + " does not index a rank-4 result by its loops");
  SmallVector<int64_t> canonical(loops, kRed);
  for (unsigned r = 0; r < 4; ++r)
    canonical[out.getDimPosition(r)] = r;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  for (unsigned l = 0; l < loops; ++l) {
    bool reduced = canonical[l] == kRed;
    if (reduced != (iterators[l] == utils::IteratorType::reduction))
      return fail(op, what + " reduces over a loop that indexes its result");
  }
  return canonical;
}

/// acc + a * b (optionally times or over a constant: the scale folded into
/// the contraction), the operands possibly widened by arith.extf.
LogicalResult Matcher::matchMulAddBody(linalg::LinalgOp op, StringRef what,
                                       double &scale) {
  Block *body = op.getBlock();
  Value a = body->getArgument(0), b = body->getArgument(1),
        acc = body->getArgument(2);
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  auto add = yield.getValues()[0].getDefiningOp<arith::AddFOp>();
  if (!add)
    return fail(op, what + " does not accumulate with arith.addf");
  Value term = add.getLhs() == acc   ? add.getRhs()
               : add.getRhs() == acc ? add.getLhs()
                                     : Value();
  if (!term)
    return fail(op, what + " does not add to its accumulator");
  auto isProduct = [&](Value v) {
    auto mul = v.getDefiningOp<arith::MulFOp>();
    if (!mul)
      return false;
    Value x = stripExt(mul.getLhs()), y = stripExt(mul.getRhs());
    return (x == a && y == b) || (x == b && y == a);
  };
  scale = 1.0;
  if (isProduct(term))
    return success();
  if (auto mul = term.getDefiningOp<arith::MulFOp>()) {
    for (auto [p, c] : {std::pair(mul.getLhs(), mul.getRhs()),
                        std::pair(mul.getRhs(), mul.getLhs())}) {
      std::optional<double> s = scalarConstant(op, c);
      if (isProduct(p) && s) {
        scale = *s;
        return success();
      }
    }
  }
  if (auto div = term.getDefiningOp<arith::DivFOp>()) {
    std::optional<double> s = scalarConstant(op, div.getRhs());
    if (isProduct(div.getLhs()) && s && *s != 0.0) {
      scale = 1.0 / *s;
      return success();
    }
  }
  return fail(op, what + " is not a sum of products (optionally scaled by a "
                         "constant)");
}

/// The accumulator starts at zero: linalg.fill of 0.0 or a zero constant.
LogicalResult Matcher::matchZeroInit(linalg::LinalgOp op, StringRef what) {
  Value init = op.getDpsInitOperand(0)->get();
  if (auto fill = init.getDefiningOp<linalg::FillOp>())
    if (matchPattern(fill.getInputs()[0], m_AnyZeroFloat()))
      return success();
  if (matchPattern(init, m_AnyZeroFloat()))
    return success();
  return fail(op, what + " does not accumulate into zeros");
}

/// A 4-D batched contraction C[b,h,row,col] = sum_red L[lhsDims] R[rhsDims]
/// with one of the accepted right-hand layouts (its index is `rhsForm`).
LogicalResult Matcher::matchContraction(linalg::LinalgOp op, StringRef what,
                                        ArrayRef<int64_t> lhsDims,
                                        ArrayRef<ArrayRef<int64_t>> rhsDims,
                                        int64_t &rhsForm, double &scale) {
  if (op.getNumDpsInputs() != 2)
    return fail(op, what + " is not a contraction of two operands");
  FailureOr<SmallVector<int64_t>> canonical = canonicalDims(op, what);
  if (failed(canonical))
    return failure();
  if (op.getNumLoops() != 5)
    return fail(op, what + " is not a batched contraction (expected 4 "
                           "parallel loops and 1 reduction)");
  std::optional<SmallVector<int64_t>> lhs = mapDims(
      op.getMatchingIndexingMap(op.getDpsInputOperand(0)), *canonical);
  std::optional<SmallVector<int64_t>> rhs = mapDims(
      op.getMatchingIndexingMap(op.getDpsInputOperand(1)), *canonical);
  if (!lhs || ArrayRef<int64_t>(*lhs) != lhsDims)
    return fail(op, what + " does not read its left operand as [B, H, row, "
                           "reduced]");
  rhsForm = -1;
  for (auto [index, dims] : llvm::enumerate(rhsDims))
    if (rhs && ArrayRef<int64_t>(*rhs) == dims)
      rhsForm = index;
  if (rhsForm < 0)
    return fail(op, what + " reads its right operand in an unsupported "
                           "layout");
  for (Value operand : op->getOperands())
    if (!isa<FloatType>(getElementTypeOrSelf(operand.getType())))
      return fail(op, what + " is not on floats");
  if (failed(matchMulAddBody(op, what, scale)) ||
      failed(matchZeroInit(op, what)))
    return failure();
  return success();
}

/// The [B, Hkv, N, d] tensor behind a contraction's K or V operand: the
/// grouped-query broadcast collapse_shape(broadcast(x to [B, Hkv, r, N, d]),
/// [[0], [1, 2], [3], [4]]) gives x (query head h reads KV head h / r, as in
/// qattn.attention); anything else is taken as it is, one KV head per query
/// head.
static Value kvSource(Value operand) {
  auto collapse = operand.getDefiningOp<tensor::CollapseShapeOp>();
  if (!collapse)
    return operand;
  SmallVector<ReassociationIndices> groups =
      collapse.getReassociationIndices();
  SmallVector<ReassociationIndices> gqa = {{0}, {1, 2}, {3}, {4}};
  if (groups != gqa)
    return operand;
  Value expanded = collapse.getSrc();
  if (auto bcast = expanded.getDefiningOp<linalg::BroadcastOp>())
    return bcast.getDimensions() == ArrayRef<int64_t>{2} ? bcast.getInput()
                                                        : operand;
  auto generic = expanded.getDefiningOp<linalg::GenericOp>();
  if (!generic || generic.getNumDpsInputs() != 1 ||
      generic.getNumParallelLoops() != 5 || generic.getNumLoops() != 5 ||
      !generic.getMatchingIndexingMap(generic.getDpsInitOperand(0))
           .isIdentity())
    return operand;
  MLIRContext *ctx = generic.getContext();
  AffineMap dropHeadCopy =
      AffineMap::get(5, 0,
                     {getAffineDimExpr(0, ctx), getAffineDimExpr(1, ctx),
                      getAffineDimExpr(3, ctx), getAffineDimExpr(4, ctx)},
                     ctx);
  auto yield = cast<linalg::YieldOp>(generic.getBlock()->getTerminator());
  if (generic.getMatchingIndexingMap(generic.getDpsInputOperand(0)) !=
          dropHeadCopy ||
      yield.getValues()[0] != generic.getBlock()->getArgument(0))
    return operand;
  return generic.getDpsInputOperand(0)->get();
}

//===----------------------------------------------------------------------===//
// Scaling and masking between QK^T and the softmax
//===----------------------------------------------------------------------===//

/// A constant input of an elementwise op as a function of (query, key); it
/// may not vary with the batch or head.
FailureOr<std::function<double(int64_t, int64_t)>>
Matcher::constantGrid(linalg::LinalgOp op, BlockArgument arg) {
  Value input = inputOf(op, arg);
  DenseElementsAttr dense;
  if (!input || !matchPattern(input, m_Constant(&dense)))
    return fail(op, "combines the scores with an operand that is not a "
                    "constant");
  auto type = cast<ShapedType>(dense.getType());
  AffineMap map = op.getMatchingIndexingMap(
      op.getDpsInputOperand(arg.getArgNumber()));
  SmallVector<int64_t> strides(type.getRank(), 1);
  for (int64_t r = type.getRank() - 2; r >= 0; --r)
    strides[r] = strides[r + 1] * type.getDimSize(r + 1);
  // Each result of the map is a loop (i or j; b or h only if of size 1) or 0.
  int64_t rowStride = 0, colStride = 0;
  for (auto [r, e] : llvm::enumerate(map.getResults())) {
    if (auto d = dyn_cast<AffineDimExpr>(e)) {
      if (d.getPosition() == kRow)
        rowStride = strides[r];
      else if (d.getPosition() == kCol)
        colStride = strides[r];
      else if (type.getDimSize(r) != 1)
        return fail(op, "masks the scores with a constant that varies with "
                        "the batch or head");
      continue;
    }
    auto c = dyn_cast<AffineConstantExpr>(e);
    if (!c || c.getValue() != 0)
      return fail(op, "indexes a constant operand with " + [&] {
        std::string s;
        llvm::raw_string_ostream os(s);
        os << map;
        return s;
      }());
  }
  if (dense.getElementType().isInteger(1)) {
    auto values = llvm::to_vector(dense.getValues<bool>());
    return std::function<double(int64_t, int64_t)>(
        [values, rowStride, colStride](int64_t i, int64_t j) -> double {
          return values[i * rowStride + j * colStride];
        });
  }
  if (!isa<FloatType>(dense.getElementType()))
    return fail(op, "masks the scores with a constant that is neither float "
                    "nor i1");
  SmallVector<double> values;
  for (const APFloat &f : dense.getValues<APFloat>())
    values.push_back(f.convertToDouble());
  return std::function<double(int64_t, int64_t)>(
      [values, rowStride, colStride](int64_t i, int64_t j) {
        return values[i * rowStride + j * colStride];
      });
}

/// An integer or i1 value of an elementwise body as a function of the query
/// (`linalg.index 2`) and key (`linalg.index 3`): the select condition of an
/// iota-style causal mask, evaluated for every pair rather than pattern-
/// matched, so that any spelling of `j <= i + (Nk - Nq)` is recognized.
FailureOr<std::function<int64_t(int64_t, int64_t)>>
Matcher::buildIndexFn(linalg::LinalgOp op, Value v) {
  using Fn = std::function<int64_t(int64_t, int64_t)>;
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    FailureOr<std::function<double(int64_t, int64_t)>> grid =
        constantGrid(op, arg);
    if (failed(grid))
      return failure();
    return Fn([g = *grid](int64_t i, int64_t j) { return int64_t(g(i, j)); });
  }
  Operation *def = v.getDefiningOp();
  if (auto index = dyn_cast<linalg::IndexOp>(def)) {
    if (index.getDim() == kRow)
      return Fn([](int64_t i, int64_t) { return i; });
    if (index.getDim() == kCol)
      return Fn([](int64_t, int64_t j) { return j; });
    return fail(op, "masks the scores by the batch or head index");
  }
  IntegerAttr constant;
  if (matchPattern(v, m_Constant(&constant))) {
    int64_t c = constant.getType().isInteger(1)
                    ? int64_t(constant.getValue().getZExtValue())
                    : constant.getValue().getSExtValue();
    return Fn([c](int64_t, int64_t) { return c; });
  }
  if (isa<arith::IndexCastOp, arith::IndexCastUIOp, arith::ExtSIOp,
          arith::ExtUIOp, arith::TruncIOp>(def))
    return buildIndexFn(op, def->getOperand(0));
  if (def && def->getNumOperands() == 2 &&
      isa<arith::AddIOp, arith::SubIOp, arith::MulIOp, arith::AndIOp,
          arith::OrIOp, arith::XOrIOp, arith::CmpIOp>(def)) {
    FailureOr<Fn> lhs = buildIndexFn(op, def->getOperand(0));
    if (failed(lhs))
      return failure();
    FailureOr<Fn> rhs = buildIndexFn(op, def->getOperand(1));
    if (failed(rhs))
      return failure();
    Fn l = *lhs, r = *rhs;
    if (isa<arith::AddIOp>(def))
      return Fn([l, r](int64_t i, int64_t j) { return l(i, j) + r(i, j); });
    if (isa<arith::SubIOp>(def))
      return Fn([l, r](int64_t i, int64_t j) { return l(i, j) - r(i, j); });
    if (isa<arith::MulIOp>(def))
      return Fn([l, r](int64_t i, int64_t j) { return l(i, j) * r(i, j); });
    if (isa<arith::AndIOp>(def))
      return Fn([l, r](int64_t i, int64_t j) { return l(i, j) & r(i, j); });
    if (isa<arith::OrIOp>(def))
      return Fn([l, r](int64_t i, int64_t j) { return l(i, j) | r(i, j); });
    if (isa<arith::XOrIOp>(def))
      return Fn([l, r](int64_t i, int64_t j) { return l(i, j) ^ r(i, j); });
    // Indices are small and non-negative, so the unsigned predicates agree
    // with the signed ones.
    arith::CmpIPredicate pred = cast<arith::CmpIOp>(def).getPredicate();
    return Fn([l, r, pred](int64_t i, int64_t j) -> int64_t {
      int64_t a = l(i, j), b = r(i, j);
      switch (pred) {
      case arith::CmpIPredicate::eq: return a == b;
      case arith::CmpIPredicate::ne: return a != b;
      case arith::CmpIPredicate::slt:
      case arith::CmpIPredicate::ult: return a < b;
      case arith::CmpIPredicate::sle:
      case arith::CmpIPredicate::ule: return a <= b;
      case arith::CmpIPredicate::sgt:
      case arith::CmpIPredicate::ugt: return a > b;
      case arith::CmpIPredicate::sge:
      case arith::CmpIPredicate::uge: return a >= b;
      }
      return 0;
    });
  }
  return fail(def ? def : op.getOperation(),
              "computes the mask condition with an unsupported op");
}

/// The body's value `v` as (scale x scores) with masked keys, where the
/// scores enter as `chainArg`:
///   e := scores | e * c | c * e | e / c | e + M | M + e
///      | select(cond, e, m) | select(cond, m, e)
/// with c > 0 a constant, M a constant mask of 0 and <= -1e4 entries and m a
/// constant <= -1e4.
LogicalResult Matcher::matchScoreExpr(linalg::LinalgOp op,
                                      BlockArgument chainArg, Value v,
                                      ScoreTerms &terms) {
  if (v == chainArg)
    return success();
  Operation *def = v.getDefiningOp();
  if (!def || def->getBlock() != op.getBlock())
    return fail(op, "yields a value that does not depend on the scores");
  auto scaleBy = [&](double c, Value rest) -> LogicalResult {
    if (!(c > 0.0) || !std::isfinite(c))
      return fail(def, "scales the scores by " + formatDouble(c) +
                           " (only positive finite scales are raised)");
    terms.scale *= c;
    return matchScoreExpr(op, chainArg, rest, terms);
  };
  if (auto mul = dyn_cast<arith::MulFOp>(def)) {
    if (std::optional<double> c = scalarConstant(op, mul.getRhs()))
      return scaleBy(*c, mul.getLhs());
    if (std::optional<double> c = scalarConstant(op, mul.getLhs()))
      return scaleBy(*c, mul.getRhs());
    return fail(def, "scales the scores by a value that is not a constant");
  }
  if (auto div = dyn_cast<arith::DivFOp>(def)) {
    std::optional<double> c = scalarConstant(op, div.getRhs());
    if (!c)
      return fail(def, "divides the scores by a value that is not a constant");
    return scaleBy(1.0 / *c, div.getLhs());
  }
  if (auto add = dyn_cast<arith::AddFOp>(def)) {
    for (auto [rest, mask] : {std::pair(add.getLhs(), add.getRhs()),
                              std::pair(add.getRhs(), add.getLhs())}) {
      auto arg = dyn_cast<BlockArgument>(mask);
      if (!arg || arg == chainArg || !inputOf(op, arg))
        continue;
      FailureOr<std::function<double(int64_t, int64_t)>> grid =
          constantGrid(op, arg);
      if (failed(grid))
        return failure();
      for (int64_t i = 0; i < terms.rows; ++i)
        for (int64_t j = 0; j < terms.cols; ++j) {
          double m = (*grid)(i, j);
          if (m <= kMaskedBelow)
            terms.masked[i * terms.cols + j] = 1;
          else if (m != 0.0)
            return fail(def, "adds " + formatDouble(m) + " to the score of "
                                 "query " + Twine(i) + " and key " + Twine(j) +
                                 ": a bias, not a mask of 0 and -inf");
        }
      return matchScoreExpr(op, chainArg, rest, terms);
    }
    return fail(def, "adds to the scores a value that is not a constant mask");
  }
  if (auto select = dyn_cast<arith::SelectOp>(def)) {
    bool hideWhenTrue;
    Value rest;
    if (isMaskValue(op, select.getFalseValue())) {
      hideWhenTrue = false;
      rest = select.getTrueValue();
    } else if (isMaskValue(op, select.getTrueValue())) {
      hideWhenTrue = true;
      rest = select.getFalseValue();
    } else {
      return fail(def, "selects between scores and a value that is not a "
                       "constant of -inf or <= -1e4");
    }
    FailureOr<std::function<int64_t(int64_t, int64_t)>> cond =
        buildIndexFn(op, select.getCondition());
    if (failed(cond))
      return failure();
    for (int64_t i = 0; i < terms.rows; ++i)
      for (int64_t j = 0; j < terms.cols; ++j)
        if (((*cond)(i, j) != 0) == hideWhenTrue)
          terms.masked[i * terms.cols + j] = 1;
    return matchScoreExpr(op, chainArg, rest, terms);
  }
  return fail(def, "applies '" + def->getName().getStringRef() +
                       "' to the scores (only scaling by a constant and "
                       "masking are raised)");
}

/// One elementwise op of the chain: all loops parallel, the scores read and
/// the result written in the same [B, H, Nq, Nk] order.
LogicalResult Matcher::matchElementwise(linalg::LinalgOp op, Value chainInput,
                                        ScoreTerms &terms) {
  FailureOr<SmallVector<int64_t>> canonical =
      canonicalDims(op, "the op between QK^T and the softmax");
  if (failed(canonical))
    return failure();
  AffineMap out = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  if (op.getNumLoops() != 4 || !out.isIdentity())
    return fail(op, "is not elementwise over the [B, H, Nq, Nk] scores");
  OpOperand *scores = nullptr;
  for (OpOperand *input : op.getDpsInputOperands())
    if (input->get() == chainInput)
      scores = input;
  if (!scores || !op.getMatchingIndexingMap(scores).isIdentity())
    return fail(op, "does not read the scores elementwise");
  if (op.payloadUsesValueFromOperand(op.getDpsInitOperand(0)))
    return fail(op, "reads its output operand");
  BlockArgument chainArg = op.getMatchingBlockArgument(scores);
  auto yield = cast<linalg::YieldOp>(op.getBlock()->getTerminator());
  return matchScoreExpr(op, chainArg, yield.getValues()[0], terms);
}

/// Compares the union of the masks with qattn's causal mask, which aligns the
/// last query with the last key.
LogicalResult Matcher::checkCausal(Operation *at, const ScoreTerms &terms,
                                   bool &causal) {
  causal = llvm::any_of(terms.masked, [](char m) { return m != 0; });
  if (!causal)
    return success();
  int64_t offset = terms.cols - terms.rows;
  for (int64_t i = 0; i < terms.rows; ++i)
    for (int64_t j = 0; j < terms.cols; ++j) {
      bool hidden = terms.masked[i * terms.cols + j];
      if (hidden != (j > i + offset))
        return fail(at, "masks the scores, but not causally with the last "
                        "query aligned to the last key: query " +
                            Twine(i) + (hidden ? " does not see" : " sees") +
                            " key " + Twine(j));
    }
  if (offset < 0)
    return fail(at, "masks causally with more queries than keys");
  return success();
}

//===----------------------------------------------------------------------===//
// The whole chain
//===----------------------------------------------------------------------===//

FailureOr<AttentionMatch> Matcher::match(linalg::SoftmaxOp softmax) {
  AttentionMatch m;
  auto inType = dyn_cast<RankedTensorType>(softmax.getInput().getType());
  if (!inType || inType.getRank() != 4 || !inType.hasStaticShape())
    return fail(softmax, "softmax is not over static [B, H, Nq, Nk] scores");
  if (softmax.getDimension() != 3)
    return fail(softmax, "softmax runs along dimension " +
                             Twine(softmax.getDimension()) +
                             ", not the key dimension 3");

  // P.V: the softmax's only user.
  if (!softmax->getResult(0).hasOneUse())
    return fail(softmax, "softmax result has more than one use");
  auto pv = dyn_cast<linalg::LinalgOp>(*softmax->getResult(0).user_begin());
  if (!pv || pv.getNumDpsInputs() != 2 ||
      pv.getDpsInputOperand(0)->get() != softmax->getResult(0))
    return fail(softmax, "softmax result is not the left operand of a "
                         "contraction");
  int64_t vForm;
  double pvScale;
  if (failed(matchContraction(pv, "the P.V contraction",
                              {kB, kH, kRow, kRed}, {{kB, kH, kRed, kCol}},
                              vForm, pvScale)))
    return failure();
  if (pvScale != 1.0)
    return fail(pv, "the P.V contraction scales its products");

  // Back from the softmax through the elementwise ops to QK^T.
  m.matched = {pv, softmax};
  ScoreTerms terms;
  terms.rows = inType.getDimSize(2);
  terms.cols = inType.getDimSize(3);
  terms.masked.assign(terms.rows * terms.cols, 0);
  Value scores = softmax.getInput();
  linalg::LinalgOp qk;
  while (true) {
    auto def = scores.getDefiningOp<linalg::LinalgOp>();
    if (!def)
      return fail(softmax, "softmax input is not computed by linalg ops");
    if (!scores.hasOneUse())
      return fail(def, "has a result used outside the attention");
    m.matched.push_back(def);
    if (def.getNumReductionLoops() != 0) {
      qk = def;
      break;
    }
    // The chain continues through the input that is not a constant.
    SmallVector<Value> variable;
    for (OpOperand *input : def.getDpsInputOperands())
      if (!matchPattern(input->get(), m_Constant()))
        variable.push_back(input->get());
    if (variable.size() != 1)
      return fail(def, "does not combine the scores with constants only");
    Value next = variable.front();
    if (failed(matchElementwise(def, next, terms)))
      return failure();
    scores = next;
  }
  int64_t kForm;
  double qkScale;
  if (failed(matchContraction(qk, "the QK^T contraction", {kB, kH, kRow, kRed},
                              {{kB, kH, kCol, kRed}, {kB, kH, kRed, kCol}},
                              kForm, qkScale)))
    return failure();
  if (!(qkScale > 0.0) || !std::isfinite(qkScale))
    return fail(qk, "scales the scores by " + formatDouble(qkScale) +
                        " (only positive finite scales are raised)");
  m.scale = terms.scale * qkScale;
  if (failed(checkCausal(softmax, terms, m.causal)))
    return failure();

  // The operands: Q as it is, K (through a transpose when QK^T reads K^T)
  // and V from behind their grouped-query broadcasts.
  m.q = qk.getDpsInputOperand(0)->get();
  Value kOperand = qk.getDpsInputOperand(1)->get();
  if (kForm == 1) {
    auto transpose = kOperand.getDefiningOp<linalg::TransposeOp>();
    if (!transpose ||
        transpose.getPermutation() != ArrayRef<int64_t>{0, 1, 3, 2})
      return fail(qk, "reads K^T [B, H, d, Nk] that is not a linalg.transpose "
                      "of K [B, H, Nk, d]");
    kOperand = transpose.getInput();
  }
  Value vOperand = pv.getDpsInputOperand(1)->get();
  m.k = kvSource(kOperand);
  m.v = kvSource(vOperand);
  auto kType = cast<RankedTensorType>(m.k.getType());
  auto vType = cast<RankedTensorType>(m.v.getType());
  if (kType.getShape() != vType.getShape()) {
    // One broadcast and not the other: attend to the per-query-head copies.
    m.k = kOperand;
    m.v = vOperand;
    kType = cast<RankedTensorType>(m.k.getType());
    vType = cast<RankedTensorType>(m.v.getType());
  }
  auto qType = cast<RankedTensorType>(m.q.getType());
  auto outType = cast<RankedTensorType>(pv->getResult(0).getType());
  for (RankedTensorType t : {qType, kType, vType, outType})
    if (!t.hasStaticShape() || t.getRank() != 4 ||
        !isa<Float32Type, Float16Type, BFloat16Type>(t.getElementType()))
      return fail(pv, "attention operands and result must be static rank-4 "
                      "f32, f16 or bf16 tensors");
  if (vType.getDimSize(3) != qType.getDimSize(3))
    return fail(pv, "value head dimension " + Twine(vType.getDimSize(3)) +
                        " differs from the query's " +
                        Twine(qType.getDimSize(3)));
  if (kType.getShape() != vType.getShape())
    return fail(pv, "keys and values differ in shape");
  if (qType.getDimSize(1) % kType.getDimSize(1) != 0)
    return fail(pv, "query heads are not a multiple of the KV heads");
  m.root = pv;
  return m;
}

//===----------------------------------------------------------------------===//
// Rewrite
//===----------------------------------------------------------------------===//

namespace {
/// The quantized form of K or V: qattn.quantize, then qattn.progressive_quantize
/// unless the scheme keeps int8.
struct QuantizedKV {
  Value data, scales, groupScales, zeros;
  Stage2Attr stage2;
};

struct QAttnRaiseAttentionPass
    : qattn::impl::QAttnRaiseAttentionBase<QAttnRaiseAttentionPass> {
  using QAttnRaiseAttentionBase::QAttnRaiseAttentionBase;

  Stage1Attr stage1;
  Stage2Anchor stage2Anchor = Stage2Anchor::zero;
  Stage2FitAttr fitAttr; // null for the default minmax

  /// Validates the options into attributes; false after an error.
  bool parseOptions() {
    ModuleOp module = getOperation();
    auto error = [&]() {
      return mlir::emitError(module.getLoc()) << "qattn-raise-attention: ";
    };
    for (auto [name, bits] : {std::pair("k-bits", int64_t(kBits)),
                              std::pair("v-bits", int64_t(vBits))})
      if (bits != 8 && (bits < 2 || bits > 4)) {
        error() << name << " must be 8 (stage 1 only) or 2, 3, 4 (stage 2), got "
                << bits;
        return false;
      }
    if (block <= 0 || group <= 0 || block % group != 0) {
      error() << "expected a positive group (" << int64_t(group)
              << ") that divides the positive block (" << int64_t(block) << ")";
      return false;
    }
    std::optional<Stage2Anchor> a = symbolizeStage2Anchor(anchor);
    if (!a) {
      error() << "anchor must be zero or min, got '" << anchor << "'";
      return false;
    }
    stage2Anchor = *a;
    std::optional<Stage2Fit> f = symbolizeStage2Fit(fit);
    if (!f) {
      error() << "fit must be minmax or mse, got '" << fit << "'";
      return false;
    }
    if (*f != Stage2Fit::minmax)
      fitAttr = Stage2FitAttr::get(&getContext(), *f);
    stage1 = Stage1Attr::get(&getContext(), block, ScaleType::f32,
                             Granularity::block);
    return true;
  }

  /// qattn.quantize of a float [B, H, N, d] tensor.
  std::pair<Value, Value> quantize(OpBuilder &b, Location loc, Value x) {
    auto type = cast<RankedTensorType>(x.getType());
    auto dataType = RankedTensorType::get(type.getShape(), b.getI8Type());
    auto scalesType = RankedTensorType::get(
        stage1.getScaleShape(type.getShape()), stage1.getScaleElementType());
    auto op = QuantizeOp::create(b, loc, dataType, scalesType, x, stage1);
    return {op.getData(), op.getScales()};
  }

  QuantizedKV quantizeKV(OpBuilder &b, Location loc, Value x, int64_t bits) {
    QuantizedKV kv;
    std::tie(kv.data, kv.scales) = quantize(b, loc, x);
    if (bits == 8)
      return kv;
    ArrayRef<int64_t> shape = cast<RankedTensorType>(x.getType()).getShape();
    kv.stage2 = Stage2Attr::get(&getContext(), ArrayRef<int64_t>{bits}, group,
                                PackOrder::lsb_first, stage2Anchor);
    auto i8 = b.getI8Type();
    auto codesType = RankedTensorType::get(
        {shape[0], shape[2], kv.stage2.getRowBytes(shape[1], shape[3])}, i8);
    auto groupType = RankedTensorType::get(
        {shape[0], shape[1], (shape[2] + group - 1) / group, shape[3]}, i8);
    auto op = ProgressiveQuantizeOp::create(b, loc, codesType, groupType,
                                            groupType, kv.data, kv.stage2,
                                            fitAttr);
    kv.data = op.getCodes();
    kv.groupScales = op.getScales();
    kv.zeros = op.getZeros();
    return kv;
  }

  void raise(const AttentionMatch &m) {
    OpBuilder b(m.root);
    Location loc = m.root->getLoc();
    Value q = m.q, qScales;
    Stage1Attr qStage1;
    if (quantizeQ) {
      std::tie(q, qScales) = quantize(b, loc, m.q);
      qStage1 = stage1;
    }
    QuantizedKV k = quantizeKV(b, loc, m.k, kBits);
    QuantizedKV v = quantizeKV(b, loc, m.v, vBits);
    auto attn = AttentionOp::create(
        b, loc, m.root->getResult(0).getType(), q, qScales, k.data, k.scales,
        k.groupScales, k.zeros, v.data, v.scales, v.groupScales, v.zeros,
        /*k_buffer=*/Value(), Value(), Value(), Value(), /*kv_lens=*/Value(),
        /*page_table=*/Value(), qStage1, stage1,
        k.stage2, stage1, v.stage2, b.getF32FloatAttr(float(m.scale)),
        m.causal, /*softmax=*/SoftmaxAttr(), /*gpu_tiling=*/GpuTilingAttr());
    m.root->getResult(0).replaceAllUsesWith(attn.getResult());
    LDBG() << "raised " << attn;

    // The chain is dead now, and so are the fills, broadcasts and transposes
    // that only it used.
    SmallVector<Operation *> worklist(m.matched.begin(), m.matched.end());
    while (!worklist.empty()) {
      Operation *op = worklist.pop_back_val();
      if (!op->use_empty() || !isMemoryEffectFree(op))
        continue;
      // Bodies capture constants (the scale, -inf) from above.
      SetVector<Value> used(op->getOperands().begin(), op->getOperands().end());
      getUsedValuesDefinedAbove(op->getRegions(), used);
      for (Value value : used)
        if (Operation *def = value.getDefiningOp())
          worklist.push_back(def);
      op->erase();
      // An op can be queued twice (two operands); skip the stale entry.
      llvm::erase(worklist, op);
    }
  }

  void runOnOperation() override {
    if (!parseOptions())
      return signalPassFailure();
    SmallVector<AttentionMatch> matches;
    bool failedStrict = false;
    getOperation()->walk([&](linalg::SoftmaxOp softmax) {
      // Only a softmax whose probabilities feed a contraction looks like
      // attention; a classifier's softmax is no almost-match worth a remark.
      if (!llvm::any_of(softmax->getUsers(), [](Operation *user) {
            auto op = dyn_cast<linalg::LinalgOp>(user);
            return op && op.getNumDpsInputs() == 2 &&
                   op.getNumReductionLoops() > 0;
          })) {
        LDBG() << "not an attention softmax: " << softmax;
        return;
      }
      Matcher matcher;
      FailureOr<AttentionMatch> m = matcher.match(softmax);
      if (succeeded(m)) {
        matches.push_back(std::move(*m));
        return;
      }
      const Mismatch &why = matcher.mismatch;
      InFlightDiagnostic diag =
          strict ? why.at->emitError() : why.at->emitRemark();
      diag << "qattn-raise-attention: not raised: " << why.why;
      if (why.at != softmax.getOperation())
        diag.attachNote(softmax.getLoc()) << "for this softmax";
      failedStrict |= strict;
    });
    if (failedStrict)
      return signalPassFailure();
    for (const AttentionMatch &m : matches)
      raise(m);
  }
};
} // namespace
