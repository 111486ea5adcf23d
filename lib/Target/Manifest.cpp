//===- Manifest.cpp - describe a module's functions for the runtime -------===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//

#include "qattn/Dialect/QAttn/IR/QAttnOps.h"
#include "qattn/Target/Artifact.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;
using namespace mlir::qattn;
namespace json = llvm::json;

std::optional<StringRef> mlir::qattn::getDtypeName(Type type) {
  if (type.isF64()) return StringRef("f64");
  if (type.isF32()) return StringRef("f32");
  if (type.isF16()) return StringRef("f16");
  if (type.isBF16()) return StringRef("bf16");
  if (type.isInteger(64)) return StringRef("i64");
  if (type.isInteger(32)) return StringRef("i32");
  if (type.isInteger(8)) return StringRef("i8");
  return std::nullopt;
}

/// {"name", "dtype", "shape"} of one argument or result.
static FailureOr<json::Object> describeTensor(func::FuncOp func, Type type,
                                              StringRef what, unsigned index,
                                              StringAttr name) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  std::optional<StringRef> dtype =
      tensor ? getDtypeName(tensor.getElementType()) : std::nullopt;
  if (!tensor || !tensor.hasStaticShape() || !dtype) {
    func.emitError() << "cannot export " << what << " " << index << " of type "
                     << type
                     << ": artifacts take statically shaped tensors of "
                        "f64/f32/f16/bf16/i64/i32/i8";
    return failure();
  }
  json::Array shape;
  for (int64_t s : tensor.getShape())
    shape.push_back(s);
  std::string fallback = (what + Twine(index)).str();
  return json::Object{{"name", name ? name.getValue().str() : fallback},
                      {"dtype", dtype->str()},
                      {"shape", std::move(shape)}};
}

/// The function argument a quantized value was computed from, following the
/// data operand through qattn's quantize and dequantize ops.
static std::optional<unsigned> sourceArgument(Value value) {
  while (Operation *def = value.getDefiningOp()) {
    if (auto op = dyn_cast<QuantizeOp>(def))
      value = op.getInput();
    else if (auto op = dyn_cast<DequantizeOp>(def))
      value = op.getData();
    else if (auto op = dyn_cast<ProgressiveQuantizeOp>(def))
      value = op.getInput();
    else if (auto op = dyn_cast<ProgressiveDequantizeOp>(def))
      value = op.getCodes();
    else
      return std::nullopt;
  }
  auto arg = dyn_cast<BlockArgument>(value);
  if (!arg || !isa<func::FuncOp>(arg.getOwner()->getParentOp()))
    return std::nullopt;
  return arg.getArgNumber();
}

static bool isFloatArgument(func::FuncOp func, unsigned index) {
  auto type = cast<RankedTensorType>(func.getArgumentTypes()[index]);
  return isa<FloatType>(type.getElementType());
}

/// What the function computes, when a runner can check it in float64:
/// attention of float arguments, or dequantize(quantize(argument)).
static json::Object describeReference(func::FuncOp func) {
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  json::Array roundtrips;
  for (auto [index, value] : llvm::enumerate(ret.getOperands())) {
    Operation *def = value.getDefiningOp();
    if (auto attn = dyn_cast_or_null<AttentionOp>(def)) {
      std::optional<unsigned> q = sourceArgument(attn.getQ()),
                              k = sourceArgument(attn.getK()),
                              v = sourceArgument(attn.getV());
      if (q && k && v && !attn.getKBuffer() && isFloatArgument(func, *q) &&
          isFloatArgument(func, *k) && isFloatArgument(func, *v))
        return json::Object{{"kind", "attention"},
                            {"q", *q},
                            {"k", *k},
                            {"v", *v},
                            {"result", index},
                            {"causal", attn.getCausal()},
                            {"scale", attn.getSoftmaxScale()}};
    }
    if (isa_and_nonnull<DequantizeOp>(def))
      if (std::optional<unsigned> arg = sourceArgument(value))
        if (isFloatArgument(func, *arg))
          roundtrips.push_back(json::Object{{"arg", *arg}, {"result", index}});
  }
  if (!roundtrips.empty())
    return json::Object{{"kind", "roundtrip"}, {"pairs", std::move(roundtrips)}};
  return json::Object{{"kind", "none"}};
}

FailureOr<json::Array> mlir::qattn::describeFunctions(ModuleOp module) {
  json::Array functions;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (!func.isPublic() || func.isExternal())
      continue;
    json::Array args, results;
    for (auto [i, type] : llvm::enumerate(func.getArgumentTypes())) {
      auto name = func.getArgAttrOfType<StringAttr>(i, "qattn.name");
      FailureOr<json::Object> desc = describeTensor(func, type, "arg", i, name);
      if (failed(desc))
        return failure();
      args.push_back(std::move(*desc));
    }
    for (auto [i, type] : llvm::enumerate(func.getResultTypes())) {
      auto name = func.getResultAttrOfType<StringAttr>(i, "qattn.name");
      FailureOr<json::Object> desc =
          describeTensor(func, type, "result", i, name);
      if (failed(desc))
        return failure();
      results.push_back(std::move(*desc));
    }
    functions.push_back(json::Object{
        {"name", func.getSymName().str()},
        {"symbol", ("_mlir_ciface_" + func.getSymName()).str()},
        {"args", std::move(args)},
        {"results", std::move(results)},
        {"reference", describeReference(func)}});
  }
  if (functions.empty()) {
    module.emitError() << "no public function to export";
    return failure();
  }
  return functions;
}

void mlir::qattn::stripNameAttributes(ModuleOp module) {
  StringAttr name = StringAttr::get(module.getContext(), "qattn.name");
  for (auto func : module.getOps<func::FuncOp>()) {
    for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
      func.removeArgAttr(i, name);
    for (unsigned i = 0, e = func.getNumResults(); i < e; ++i)
      func.removeResultAttr(i, name);
  }
}

LogicalResult
mlir::qattn::writeArtifactFile(Location loc, StringRef dir, StringRef name,
                               function_ref<void(raw_ostream &)> contents) {
  SmallString<128> path(dir);
  llvm::sys::path::append(path, name);
  std::error_code ec;
  llvm::ToolOutputFile file(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return emitError(loc) << "cannot write " << path << ": " << ec.message();
  contents(file.os());
  file.keep();
  return success();
}

LogicalResult mlir::qattn::createArtifactDir(Location loc, StringRef dir) {
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return emitError(loc) << "cannot create " << dir << ": " << ec.message();
  return success();
}

LogicalResult mlir::qattn::writeManifest(Location loc, StringRef dir,
                                         json::Object fields,
                                         json::Array functions) {
  fields["format"] = "qattn-artifact";
  fields["version"] = 1;
  fields["functions"] = std::move(functions);
  return writeArtifactFile(loc, dir, "manifest.json", [&](raw_ostream &os) {
    os << llvm::formatv("{0:2}", json::Value(std::move(fields))) << "\n";
  });
}
