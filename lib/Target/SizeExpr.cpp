//===- SizeExpr.cpp - host sizes as manifest size expressions -------------===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//

#include "SizeExpr.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace mlir::qattn;
namespace json = llvm::json;

/// The manifest's size grammar (docs/ARTIFACT.md), in host ops.
static constexpr llvm::StringLiteral kSizeGrammar =
    "a size is a positive integer, a dimension of an argument or a result "
    "(memref.dim), or arith.muli, arith.addi, arith.divui/divsi, "
    "arith.minui/minsi, arith.maxui/maxsi, and arith.ceildivui/ceildivsi by a "
    "positive constant of sizes";

Operation *mlir::qattn::getSizeOp(Value value) {
  Operation *op = value.getDefiningOp();
  while (isa_and_nonnull<arith::IndexCastOp, arith::IndexCastUIOp>(op))
    op = op->getOperand(0).getDefiningOp();
  return op;
}

bool mlir::qattn::isSizeComputation(Operation *op) {
  return isa<arith::ArithDialect>(op->getDialect()) || isa<memref::DimOp>(op);
}

namespace {
/// One trace, and where it stopped: the op that no size expresses (null for
/// a block argument) and the rest of the sentence that says why.
struct Trace {
  ArrayRef<const json::Array *> shapes;
  Operation *stopOp = nullptr;
  std::string why;

  FailureOr<json::Value> size(Value value);
  FailureOr<json::Value> sumOrProduct(Operation *op, StringLiteral key);
  FailureOr<json::Value> ceilDiv(Operation *op);
  FailureOr<json::Value> floorDiv(Operation *op);
  FailureOr<json::Value> dim(memref::DimOp op);

  FailureOr<json::Value> stop(Operation *op, StringRef reason) {
    stopOp = op;
    why = reason.str();
    return failure();
  }
};
} // namespace

FailureOr<json::Value> Trace::size(Value value) {
  Operation *op = getSizeOp(value);
  if (!op)
    return failure();
  if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
    auto attr = dyn_cast<IntegerAttr>(constant.getValue());
    if (!attr || !attr.getValue().isStrictlyPositive())
      return stop(op, "which is not a positive integer");
    return json::Value(attr.getInt());
  }
  if (auto dimOp = dyn_cast<memref::DimOp>(op))
    return dim(dimOp);
  if (isa<arith::MulIOp>(op))
    return sumOrProduct(op, "mul");
  if (isa<arith::AddIOp>(op))
    return sumOrProduct(op, "add");
  // Sizes are non-negative, so the signed and unsigned forms agree.
  if (isa<arith::MinUIOp, arith::MinSIOp>(op))
    return sumOrProduct(op, "min");
  if (isa<arith::MaxUIOp, arith::MaxSIOp>(op))
    return sumOrProduct(op, "max");
  if (isa<arith::DivUIOp, arith::DivSIOp>(op))
    return floorDiv(op);
  if (isa<arith::CeilDivUIOp, arith::CeilDivSIOp>(op))
    return ceilDiv(op);
  return stop(op, "which no manifest size expresses");
}

FailureOr<json::Value> Trace::sumOrProduct(Operation *op, StringLiteral key) {
  json::Array terms;
  for (Value operand : op->getOperands()) {
    FailureOr<json::Value> term = size(operand);
    if (failed(term))
      return failure();
    // B*2*4 rather than (B*2)*4.
    const json::Object *object = term->getAsObject();
    if (const json::Array *same = object ? object->getArray(key) : nullptr)
      terms.insert(terms.end(), same->begin(), same->end());
    else
      terms.push_back(std::move(*term));
  }
  return json::Value(json::Object{{key, std::move(terms)}});
}

FailureOr<json::Value> Trace::ceilDiv(Operation *op) {
  // Sizes are positive, so the signed and unsigned quotients agree.
  std::optional<int64_t> divisor = getConstantIntValue(op->getOperand(1));
  if (!divisor || *divisor < 1)
    return stop(op, "whose divisor is not a positive constant");
  FailureOr<json::Value> dividend = size(op->getOperand(0));
  if (failed(dividend))
    return failure();
  return json::Value(
      json::Object{{"ceil_div", json::Array{std::move(*dividend), *divisor}}});
}

FailureOr<json::Value> Trace::floorDiv(Operation *op) {
  FailureOr<json::Value> dividend = size(op->getOperand(0));
  if (failed(dividend))
    return failure();
  FailureOr<json::Value> divisor = size(op->getOperand(1));
  if (failed(divisor))
    return failure();
  return json::Value(json::Object{
      {"div", json::Array{std::move(*dividend), std::move(*divisor)}}});
}

FailureOr<json::Value> Trace::dim(memref::DimOp op) {
  auto arg = dyn_cast<BlockArgument>(op.getSource());
  std::optional<int64_t> index = op.getConstantIndex();
  bool ofHost = arg && isa<func::FuncOp>(arg.getOwner()->getParentOp()) &&
                arg.getArgNumber() < shapes.size();
  if (!ofHost || !index || *index < 0 ||
      size_t(*index) >= shapes[arg.getArgNumber()]->size())
    return stop(op, "which reads other than a constant dimension of an "
                    "argument or a result");
  return (*shapes[arg.getArgNumber()])[*index];
}

FailureOr<json::Value> SizeTracer::trace(Value value, Operation *user,
                                         const Twine &what) const {
  Trace trace{shapes};
  FailureOr<json::Value> size = trace.size(value);
  if (succeeded(size))
    return size;
  InFlightDiagnostic diag = user->emitOpError() << what << " is computed by ";
  if (!trace.stopOp)
    return diag << "a block argument (" << kSizeGrammar << ")";
  diag << "'" << trace.stopOp->getName() << "', " << trace.why << " ("
       << kSizeGrammar << ")";
  diag.attachNote(trace.stopOp->getLoc()) << "computed here";
  return failure();
}

std::string mlir::qattn::formatSize(const json::Value &size) {
  if (std::optional<int64_t> number = size.getAsInteger())
    return std::to_string(*number);
  if (std::optional<StringRef> symbol = size.getAsString())
    return symbol->str();
  const json::Object &object = *size.getAsObject();
  // Calls: ceil_div(N, 64), div(1584, B*8), min(...), max(...).
  for (StringRef call : {"ceil_div", "div", "min", "max"}) {
    const json::Array *operands = object.getArray(call);
    if (!operands)
      continue;
    std::string text = call.str() + "(";
    for (auto [i, operand] : llvm::enumerate(*operands))
      text += (i ? ", " : "") + formatSize(operand);
    return text + ")";
  }
  bool mul = object.getArray("mul");
  std::string text;
  for (const json::Value &term : *object.getArray(mul ? "mul" : "add")) {
    std::string part = formatSize(term);
    // A sum inside a product needs parentheses; nothing else does.
    const json::Object *inner = term.getAsObject();
    if (mul && inner && inner->getArray("add"))
      part = "(" + part + ")";
    text += (text.empty() ? "" : mul ? "*" : "+") + part;
  }
  return text;
}
