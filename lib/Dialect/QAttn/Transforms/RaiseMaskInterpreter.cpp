//===- RaiseMaskInterpreter.cpp - masks by value, qattn-raise-attention ---===//
//===//
//
// Part of the qattn project.
//
// Masks are checked by value, not by spelling: every value a mask is built
// from is computed here for one (query, key) pair at a time, from
// constants, linalg.index, tensor.generate, elementwise linalg ops (named
// ones, linalg.broadcast and linalg.transpose included), reshapes and arith
// ops on scalars or whole tensors. Batch and head positions are unknown, so
// a mask that depends on them fails where it first reads one.
//
//===----------------------------------------------------------------------===//

#include "RaiseAttention.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::qattn;
using namespace mlir::qattn::raise;

using Index = MaskIndex;
using Scalar = MaskScalar;
using Interpreter = MaskInterpreter;

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
      return state.fail(step, "masks the scores with a value that is not "
                              "computed from constants (an argument of '" +
                                  parent->getName().getStringRef() + "')");
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
