//===- Manifest.cpp - describe a module's functions for the runtime -------===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//

#include "qattn/Dialect/QAttn/IR/QAttnOps.h"
#include "qattn/Target/Artifact.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"
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

/// The attribute that names a tensor's dynamic sizes (docs/ARTIFACT.md).
static constexpr llvm::StringLiteral kDimsAttrName = "qattn.dims";

/// A letter or '_', then letters, digits or '_'.
static bool isIdentifier(StringRef symbol) {
  if (symbol.empty() || !(llvm::isAlpha(symbol[0]) || symbol[0] == '_'))
    return false;
  return llvm::all_of(symbol,
                      [](char c) { return llvm::isAlnum(c) || c == '_'; });
}

/// The manifest's shape of `type`: each static size as an integer, each
/// dynamic one as the symbol that `dims` (the tensor's `qattn.dims`, or null)
/// gives it.
static FailureOr<json::Array> describeShape(func::FuncOp func,
                                            RankedTensorType type,
                                            Attribute dims, StringRef what,
                                            unsigned index) {
  auto tensor = [&] { return (what + " " + Twine(index)).str(); };
  SmallVector<StringRef> symbols(type.getRank());
  if (dims) {
    auto array = dyn_cast<ArrayAttr>(dims);
    if (!array || !llvm::all_of(array, llvm::IsaPred<StringAttr>))
      return func.emitError() << kDimsAttrName << " of " << tensor()
                              << " must be an array of strings, got " << dims;
    if (int64_t(array.size()) != type.getRank())
      return func.emitError()
             << kDimsAttrName << " of " << tensor() << " has " << array.size()
             << (array.size() == 1 ? " entry" : " entries") << ", but its type "
             << type << " has rank " << type.getRank();
    for (auto [dim, entry] : llvm::enumerate(array))
      symbols[dim] = cast<StringAttr>(entry).getValue();
  }
  json::Array shape;
  for (auto [dim, size] : llvm::enumerate(type.getShape())) {
    StringRef symbol = symbols[dim];
    if (!ShapedType::isDynamic(size)) {
      if (!symbol.empty())
        return func.emitError()
               << kDimsAttrName << " of " << tensor() << " names static "
               << "dimension " << dim << " (size " << size << ") \"" << symbol
               << "\"; static dimensions take \"\"";
      shape.push_back(size);
      continue;
    }
    if (symbol.empty())
      return func.emitError()
             << "dimension " << dim << " of " << tensor() << " (" << type
             << ") is dynamic: name its size in " << kDimsAttrName
             << " (an array with a symbol such as \"B\" for each dynamic "
                "dimension and \"\" for each static one)";
    if (!isIdentifier(symbol))
      return func.emitError()
             << kDimsAttrName << " of " << tensor() << ": \"" << symbol
             << "\" (dimension " << dim << ") is not an identifier (a letter "
             << "or '_', then letters, digits or '_')";
    shape.push_back(symbol.str());
  }
  return shape;
}

/// {"name", "dtype", "shape"} of one argument or result.
static FailureOr<json::Object> describeTensor(func::FuncOp func, Type type,
                                              StringRef what, unsigned index,
                                              DictionaryAttr attrs) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  std::optional<StringRef> dtype =
      tensor ? getDtypeName(tensor.getElementType()) : std::nullopt;
  if (!tensor || !dtype) {
    func.emitError() << "cannot export " << what << " " << index << " of type "
                     << type
                     << ": artifacts take ranked tensors of "
                        "f64/f32/f16/bf16/i64/i32/i8";
    return failure();
  }
  // The runtime refuses empty tensors: say so here, not when the artifact
  // is run.
  for (auto [dim, size] : llvm::enumerate(tensor.getShape()))
    if (!ShapedType::isDynamic(size) && size < 1) {
      func.emitError() << "cannot export " << what << " " << index
                       << " of type " << type << ": dimension " << dim
                       << " has size " << size
                       << "; artifacts take tensors of positive sizes";
      return failure();
    }
  Attribute dims = attrs ? attrs.get(kDimsAttrName) : Attribute();
  FailureOr<json::Array> shape =
      describeShape(func, tensor, dims, what, index);
  if (failed(shape))
    return failure();
  auto name = attrs ? attrs.getAs<StringAttr>("qattn.name") : StringAttr();
  std::string fallback = (what + Twine(index)).str();
  return json::Object{{"name", name ? name.getValue().str() : fallback},
                      {"dtype", dtype->str()},
                      {"shape", std::move(*shape)}};
}

/// Checks that every symbol of a result's shape is one that an argument's
/// shape defines: the caller allocates results, so it must be able to size
/// them from the arguments alone.
static LogicalResult checkResultSymbols(func::FuncOp func,
                                        const json::Array &args,
                                        const json::Array &results) {
  llvm::StringSet<> defined;
  for (const json::Value &arg : args)
    for (const json::Value &size : *arg.getAsObject()->getArray("shape"))
      if (std::optional<StringRef> symbol = size.getAsString())
        defined.insert(*symbol);
  for (auto [index, result] : llvm::enumerate(results))
    for (auto [dim, size] :
         llvm::enumerate(*result.getAsObject()->getArray("shape")))
      if (std::optional<StringRef> symbol = size.getAsString())
        if (!defined.contains(*symbol))
          return func.emitError()
                 << "dimension " << dim << " of result " << index
                 << " has size \"" << *symbol
                 << "\", which no argument defines: results are allocated by "
                    "the caller, so their sizes must follow from the "
                    "arguments'";
  return success();
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
static json::Object describeReference(func::FuncOp func,
                                      const json::Array &args,
                                      const json::Array &results) {
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  json::Array roundtrips;
  for (auto [index, value] : llvm::enumerate(ret.getOperands())) {
    Operation *def = value.getDefiningOp();
    if (auto attn = dyn_cast_or_null<AttentionOp>(def)) {
      std::optional<unsigned> q = sourceArgument(attn.getQ()),
                              k = sourceArgument(attn.getK()),
                              v = sourceArgument(attn.getV());
      if (q && k && v && !attn.getKBuffer() && !attn.getKvLens() &&
          !attn.getPageTable() && isFloatArgument(func, *q) &&
          isFloatArgument(func, *k) && isFloatArgument(func, *v))
        return json::Object{{"kind", "attention"},
                            {"q", *q},
                            {"k", *k},
                            {"v", *v},
                            {"result", index},
                            {"causal", attn.getCausal()},
                            {"scale", attn.getSoftmaxScale()}};
    }
    // With symbolic sizes, the two shapes must be the same symbols too: a
    // runner compares the arrays element by element.
    auto sameShape = [&](unsigned arg) {
      return *args[arg].getAsObject()->get("shape") ==
             *results[index].getAsObject()->get("shape");
    };
    if (isa_and_nonnull<DequantizeOp>(def))
      if (std::optional<unsigned> arg = sourceArgument(value))
        if (isFloatArgument(func, *arg) && sameShape(*arg))
          roundtrips.push_back(json::Object{{"arg", *arg}, {"result", index}});
  }
  if (!roundtrips.empty())
    return json::Object{{"kind", "roundtrip"}, {"pairs", std::move(roundtrips)}};
  return json::Object{{"kind", "none"}};
}

/// The manifest entry of one function; fails at its first problem.
static FailureOr<json::Object> describeFunction(func::FuncOp func) {
  json::Array args, results;
  for (auto [i, type] : llvm::enumerate(func.getArgumentTypes())) {
    FailureOr<json::Object> desc =
        describeTensor(func, type, "arg", i, func.getArgAttrDict(i));
    if (failed(desc))
      return failure();
    args.push_back(std::move(*desc));
  }
  for (auto [i, type] : llvm::enumerate(func.getResultTypes())) {
    FailureOr<json::Object> desc =
        describeTensor(func, type, "result", i, func.getResultAttrDict(i));
    if (failed(desc))
      return failure();
    results.push_back(std::move(*desc));
  }
  if (failed(checkResultSymbols(func, args, results)))
    return failure();
  json::Object reference = describeReference(func, args, results);
  return json::Object{{"name", func.getSymName().str()},
                      {"symbol", ("_mlir_ciface_" + func.getSymName()).str()},
                      {"args", std::move(args)},
                      {"results", std::move(results)},
                      {"reference", std::move(reference)}};
}

FailureOr<json::Array> mlir::qattn::describeFunctions(ModuleOp module) {
  json::Array functions;
  // Every function's first problem is reported, not only the first one's.
  bool failedAny = false;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (!func.isPublic() || func.isExternal())
      continue;
    FailureOr<json::Object> desc = describeFunction(func);
    if (failed(desc))
      failedAny = true;
    else
      functions.push_back(std::move(*desc));
  }
  if (failedAny)
    return failure();
  if (functions.empty()) {
    module.emitError() << "no public function to export";
    return failure();
  }
  return functions;
}

void mlir::qattn::stripNameAttributes(ModuleOp module) {
  MLIRContext *context = module.getContext();
  for (StringAttr name : {StringAttr::get(context, "qattn.name"),
                          StringAttr::get(context, kDimsAttrName)})
    for (auto func : module.getOps<func::FuncOp>()) {
      for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
        func.removeArgAttr(i, name);
      for (unsigned i = 0, e = func.getNumResults(); i < e; ++i)
        func.removeResultAttr(i, name);
    }
}

std::string mlir::qattn::getCpuSignature(const json::Object &fn) {
  auto list = [](const json::Array *tensors) {
    std::string text = "(";
    for (auto [i, tensor] : llvm::enumerate(*tensors)) {
      const json::Object &desc = *tensor.getAsObject();
      text += (i ? ", " : "") + desc.getString("dtype")->str() + "[";
      for (auto [d, size] : llvm::enumerate(*desc.getArray("shape"))) {
        text += d ? "," : "";
        if (std::optional<StringRef> symbol = size.getAsString())
          text += symbol->str();
        else
          text += std::to_string(*size.getAsInteger());
      }
      text += "]";
    }
    return text + ")";
  };
  return list(fn.getArray("args")) + " -> " + list(fn.getArray("results"));
}

std::string mlir::qattn::getCpuSignatureSymbol(StringRef symbol) {
  return ("qattn_signature." + symbol).str();
}

std::string mlir::qattn::getSha256Hex(StringRef bytes) {
  return llvm::toHex(llvm::SHA256::hash(llvm::arrayRefFromStringRef(bytes)),
                     /*LowerCase=*/true);
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
