//===- Manifest.cpp - Artifact manifests ----------------------------------===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//

#include "qattn/Runtime/Manifest.h"

#include "qattn/Runtime/Error.h"
#include "qattn/Runtime/Json.h"
#include "qattn/Runtime/LaunchPlan.h"
#include "qattn/Runtime/Reference.h"

#include "Files.h"
#include "Sha256.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <sstream>

using namespace qattn::rt;
using json::Value;
using Kind = json::Value::Kind;

const FunctionSpec *Manifest::findFunction(std::string_view name) const {
  for (const FunctionSpec &fn : functions)
    if (fn.name == name)
      return &fn;
  return nullptr;
}

std::string Manifest::libraryPath() const {
  return directory.empty() ? library : directory + "/" + library;
}

std::string Manifest::ptxPath() const {
  return directory.empty() ? ptx : directory + "/" + ptx;
}

const TensorSpec *FunctionSpec::getParamTensor(const LaunchParam &param) const {
  switch (param.kind) {
  case LaunchParam::Kind::Arg:
    return &args[param.index];
  case LaunchParam::Kind::Result:
    return &results[param.index];
  case LaunchParam::Kind::Buffer:
    return &buffers[param.index];
  case LaunchParam::Kind::Dim:
    break;
  }
  return nullptr;
}

std::vector<std::string> FunctionSpec::argumentSymbols() const {
  std::vector<std::string> symbols;
  for (const TensorSpec &arg : args)
    for (const std::string &symbol : arg.symbols)
      if (!symbol.empty() &&
          std::find(symbols.begin(), symbols.end(), symbol) == symbols.end())
        symbols.push_back(symbol);
  return symbols;
}

const NamedSize *FunctionSpec::findSize(std::string_view symbol) const {
  for (const NamedSize &size : sizes)
    if (size.name == symbol)
      return &size;
  return nullptr;
}

SizeExpr SizeExpr::constant(int64_t value) {
  SizeExpr expr;
  expr.value = value;
  return expr;
}

SizeExpr SizeExpr::symbolic(std::string symbol) {
  SizeExpr expr;
  expr.kind = Kind::Symbol;
  expr.symbol = std::move(symbol);
  return expr;
}

bool SizeExpr::contains(Kind k) const {
  if (kind == k)
    return true;
  for (const SizeExpr &operand : operands)
    if (operand.contains(k))
      return true;
  return false;
}

bool LaunchSpec::hasSymbolicGrid() const {
  for (const SizeExpr &size : grid)
    if (size.hasSymbols())
      return true;
  return false;
}

namespace {
std::string member(const std::string &path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

std::string element(const std::string &path, size_t index) {
  return path + "[" + std::to_string(index) + "]";
}

/// Argument and result names become file names (DIR/NAME.npy) and keys of
/// qattn-run's NAME=FILE options.
bool isUsableName(const std::string &name) {
  if (name.empty() || name[0] == '.')
    return false;
  for (char c : name)
    if (c == '/' || c == '\\' || c == '=' || (unsigned char)c <= ' ')
      return false;
  return true;
}

/// Turns a parsed document into a Manifest, checking every entry. Messages
/// name the entry by its path in the document, e.g. "functions[0].symbol".
class ManifestReader {
public:
  explicit ManifestReader(const std::string &filename) : filename(filename) {}

  Manifest read(const Value &root) {
    expectKind(root, Kind::Object, "the manifest");
    Manifest manifest;
    std::string format = getString(root, "", "format");
    if (format != "qattn-artifact")
      error("format", "expected \"qattn-artifact\", got \"" + format + "\"");
    int64_t version = getInteger(root, "", "version");
    if (version != Manifest::kVersion)
      error("version", "unsupported version " + std::to_string(version) +
                           " (this runtime reads version " +
                           std::to_string(Manifest::kVersion) + ")");
    manifest.target = getString(root, "", "target");
    manifest.library = getString(root, "", "library");
    if (manifest.library[0] == '/')
      error("library", "must be relative to the manifest's directory");
    manifest.librarySha256 = getSha256(root, "library_sha256");
    isCuda = manifest.target == "cuda";
    if (isCuda) {
      manifest.chip = getString(root, "", "chip");
      if (!isChipName(manifest.chip))
        error("chip", "expected a CUDA architecture such as \"sm_90a\", got "
                      "\"" + manifest.chip + "\"");
      if (root.find("ptx")) {
        manifest.ptx = getString(root, "", "ptx");
        if (manifest.ptx[0] == '/')
          error("ptx", "must be relative to the manifest's directory");
        manifest.ptxSha256 = getSha256(root, "ptx_sha256");
      }
    }
    const Value &functions = get(root, "", "functions");
    expectKind(functions, Kind::Array, "functions");
    if (functions.getArray().empty())
      error("functions", "the artifact has no functions");
    for (size_t i = 0; i < functions.getArray().size(); ++i)
      manifest.functions.push_back(
          readFunction(functions.getArray()[i], element("functions", i)));
    checkUniqueFunctionNames(manifest);
    return manifest;
  }

private:
  [[noreturn]] void error(const std::string &path,
                          const std::string &what) const {
    if (path.empty())
      fail(filename, ": ", what);
    fail(filename, ": ", path, ": ", what);
  }

  void expectKind(const Value &value, Kind kind,
                  const std::string &path) const {
    if (!value.is(kind))
      error(path, std::string("expected ") + json::describe(kind) + ", got " +
                      json::describe(value.getKind()));
  }

  const Value &get(const Value &object, const std::string &path,
                   std::string_view key) const {
    if (const Value *value = object.find(key))
      return *value;
    error(path, "missing key \"" + std::string(key) + "\"");
  }

  std::string getString(const Value &object, const std::string &path,
                        std::string_view key) const {
    const Value &value = get(object, path, key);
    expectKind(value, Kind::String, member(path, key));
    if (value.getString().empty())
      error(member(path, key), "must not be empty");
    // A "\u0000" escape would cut the string short where it becomes a C
    // string (a file name, a symbol for dlsym): it would name another one.
    if (value.getString().find('\0') != std::string::npos)
      error(member(path, key), "must not contain a NUL character (\\u0000)");
    return value.getString();
  }

  /// `key`, the SHA-256 of a file that qattn-compile wrote. Artifacts
  /// written before it recorded them have none and are refused.
  std::string getSha256(const Value &root, std::string_view key) const {
    if (!root.find(key))
      error("", "missing key \"" + std::string(key) +
                    "\": the SHA-256 of the file, which qattn-compile "
                    "records so that the runtime can tell that the file is the "
                    "one this manifest describes (an artifact written before "
                    "it did has none: compile it again)");
    std::string hash = getString(root, "", key);
    if (!isSha256Hex(hash))
      error(std::string(key), "expected 64 lowercase hexadecimal digits (a "
                              "SHA-256), got \"" +
                                  hash + "\"");
    return hash;
  }

  int64_t toInteger(const Value &value, const std::string &path) const {
    expectKind(value, Kind::Number, path);
    double number = value.getNumber();
    // Beyond 2^53 a double no longer holds every integer; no size or index
    // in a manifest comes close.
    if (std::floor(number) != number || std::fabs(number) > 0x1p53)
      error(path, "expected an integer, got " + formatNumber(number));
    return int64_t(number);
  }

  int64_t getInteger(const Value &object, const std::string &path,
                     std::string_view key) const {
    return toInteger(get(object, path, key), member(path, key));
  }

  static std::string formatNumber(double number) {
    std::ostringstream os;
    os << number;
    return os.str();
  }

  FunctionSpec readFunction(const Value &value, const std::string &path) {
    expectKind(value, Kind::Object, path);
    FunctionSpec fn;
    fn.name = getString(value, path, "name");
    // Target "cuda" calls kernels, named by its launches, not a symbol.
    if (!isCuda)
      fn.symbol = getString(value, path, "symbol");
    fn.args = readTensors(value, path, "args");
    fn.results = readTensors(value, path, "results");
    // Named sizes come before what uses them: they are read over the
    // arguments' symbols alone.
    if (isCuda && value.find("sizes"))
      fn.sizes = readSizes(value, path, fn);
    if (isCuda && value.find("buffers"))
      fn.buffers = readTensors(value, path, "buffers");
    checkUniqueTensorNames(fn, path);
    checkDerivedSymbols(fn, fn.results, member(path, "results"),
                        /*named=*/false,
                        "the caller allocates the results, so their sizes "
                        "must follow from the arguments'");
    checkDerivedSymbols(fn, fn.buffers, member(path, "buffers"),
                        /*named=*/true,
                        "the runtime sizes the scratch buffers from the "
                        "arguments' sizes and the named sizes");
    // Required: a runner must not take a manifest that lost its reference
    // for one that has nothing to check ({"kind": "none"} says so).
    fn.reference = readReference(get(value, path, "reference"),
                                 member(path, "reference"), fn);
    if (isCuda)
      fn.launches = readLaunches(value, path, fn);
    return fn;
  }

  //===--------------------------------------------------------------------===//
  // Target "cuda"
  //===--------------------------------------------------------------------===//

  /// "sm_" followed by digits and an optional 'a' or 'f' suffix.
  static bool isChipName(const std::string &chip) {
    if (chip.rfind("sm_", 0) != 0)
      return false;
    size_t end = chip.size();
    if (chip.back() == 'a' || chip.back() == 'f')
      --end;
    if (end == 3 || end - 3 > 4)
      return false;
    for (size_t i = 3; i < end; ++i)
      if (!std::isdigit((unsigned char)chip[i]))
        return false;
    return true;
  }

  /// `sizes`: [{"name": symbol, "size": size}, ...], each name a symbol
  /// that no argument has and no other entry names, each size over the
  /// arguments' symbols.
  std::vector<NamedSize> readSizes(const Value &object, const std::string &path,
                                   const FunctionSpec &fn) {
    const Value &list = get(object, path, "sizes");
    std::string listPath = member(path, "sizes");
    expectKind(list, Kind::Array, listPath);
    std::vector<std::string> symbols = fn.argumentSymbols();
    std::vector<NamedSize> sizes;
    for (size_t i = 0; i < list.getArray().size(); ++i) {
      const Value &entry = list.getArray()[i];
      std::string entryPath = element(listPath, i);
      expectKind(entry, Kind::Object, entryPath);
      NamedSize size;
      size.name = getString(entry, entryPath, "name");
      std::string namePath = member(entryPath, "name");
      if (!isSymbol(size.name))
        error(namePath, "\"" + size.name +
                            "\" is not a size symbol (a letter or '_', then "
                            "letters, digits or '_')");
      if (std::find(symbols.begin(), symbols.end(), size.name) != symbols.end())
        error(namePath, "\"" + size.name +
                            "\" is a symbol of the arguments; a named size "
                            "needs a name of its own");
      for (const NamedSize &earlier : sizes)
        if (earlier.name == size.name)
          error(namePath, "a second size is named \"" + size.name + "\"");
      size.size = readSizeExpr(
          get(entry, entryPath, "size"), member(entryPath, "size"), fn,
          "size \"" + size.name + "\" of function \"" + fn.name + "\"");
      sizes.push_back(std::move(size));
    }
    return sizes;
  }

  std::vector<LaunchSpec> readLaunches(const Value &object,
                                       const std::string &path,
                                       const FunctionSpec &fn) {
    const Value &list = get(object, path, "launches");
    std::string listPath = member(path, "launches");
    expectKind(list, Kind::Array, listPath);
    if (list.getArray().empty())
      error(listPath, "a cuda function needs at least one launch");
    std::vector<LaunchSpec> launches;
    for (size_t i = 0; i < list.getArray().size(); ++i)
      launches.push_back(
          readLaunch(list.getArray()[i], element(listPath, i), fn, i));
    if (launches.front().early)
      error(element(listPath, 0),
            "the first launch cannot be early: nothing in the function "
            "orders it after the caller's earlier work");
    // A result that no kernel sees cannot be written.
    for (size_t r = 0; r < fn.results.size(); ++r) {
      bool used = false;
      for (const LaunchSpec &launch : launches)
        for (const LaunchParam &param : launch.params)
          used |= param.kind == LaunchParam::Kind::Result && param.index == r;
      if (!used)
        error(listPath, "result \"" + fn.results[r].name +
                            "\" is passed to no kernel, so nothing writes it");
    }
    return launches;
  }

  LaunchSpec readLaunch(const Value &value, const std::string &path,
                        const FunctionSpec &fn, size_t index) {
    expectKind(value, Kind::Object, path);
    LaunchSpec launch;
    launch.kernel = getString(value, path, "kernel");
    // For messages about symbols: which launch of which function.
    std::string where = "launch " + std::to_string(index) + " (kernel \"" +
                        launch.kernel + "\") of function \"" + fn.name + "\"";
    launch.grid = readGrid(value, path, fn, where);
    launch.block = readBlock(value, path);
    uint64_t threads = uint64_t(launch.block[0]) * launch.block[1] *
                       launch.block[2];
    if (threads > 1024)
      error(member(path, "block"), std::to_string(threads) +
                                       " threads; a block has at most 1024");
    if (value.find("shared_bytes")) {
      int64_t bytes = getInteger(value, path, "shared_bytes");
      if (bytes < 0 || bytes > 0xffffffffLL)
        error(member(path, "shared_bytes"),
              "expected a byte count, got " + std::to_string(bytes));
      launch.sharedBytes = uint32_t(bytes);
    }
    if (const Value *early = value.find("early")) {
      expectKind(*early, Kind::Bool, member(path, "early"));
      launch.early = early->getBool();
    }
    const Value &params = get(value, path, "params");
    std::string paramsPath = member(path, "params");
    expectKind(params, Kind::Array, paramsPath);
    for (size_t i = 0; i < params.getArray().size(); ++i)
      launch.params.push_back(
          readParam(params.getArray()[i], element(paramsPath, i), fn, where));
    return launch;
  }

  /// Three entries of `key`, each found by `read(entry, path, dim)`.
  template <typename T, typename Read>
  std::array<T, 3> readTriple(const Value &object, const std::string &path,
                              std::string_view key, Read read) {
    const Value &list = get(object, path, key);
    std::string listPath = member(path, key);
    expectKind(list, Kind::Array, listPath);
    if (list.getArray().size() != 3)
      error(listPath, "expected 3 sizes (x, y, z), got " +
                          std::to_string(list.getArray().size()));
    return {read(list.getArray()[0], element(listPath, 0), 0),
            read(list.getArray()[1], element(listPath, 1), 1),
            read(list.getArray()[2], element(listPath, 2), 2)};
  }

  /// Block sizes are integers: a kernel is compiled for its block.
  std::array<uint32_t, 3> readBlock(const Value &object,
                                    const std::string &path) {
    return readTriple<uint32_t>(
        object, path, "block",
        [&](const Value &entry, const std::string &entryPath, size_t dim) {
          if (entry.is(Kind::String) || entry.is(Kind::Object))
            error(entryPath, "a block size is an integer: only grid sizes "
                             "may depend on a call's sizes");
          int64_t size = toInteger(entry, entryPath);
          if (size <= 0 || size > kCudaBlockLimits[dim])
            error(entryPath, "expected a size in [1, " +
                                 std::to_string(kCudaBlockLimits[dim]) +
                                 "], got " + std::to_string(size));
          return uint32_t(size);
        });
  }

  /// Grid sizes are integers or size expressions over the arguments'
  /// symbols. What can be checked without a call is: a constant's range,
  /// and an expression's smallest value, with every symbol 1 (an expression
  /// only grows with its symbols).
  std::array<SizeExpr, 3> readGrid(const Value &object, const std::string &path,
                                   const FunctionSpec &fn,
                                   const std::string &where) {
    return readTriple<SizeExpr>(
        object, path, "grid",
        [&](const Value &entry, const std::string &entryPath, size_t dim) {
          int64_t limit = kCudaGridLimits[dim];
          if (entry.is(Kind::Number)) {
            int64_t size = toInteger(entry, entryPath);
            if (size <= 0 || size > limit)
              error(entryPath, "expected a size in [1, " +
                                   std::to_string(limit) + "], got " +
                                   std::to_string(size));
            return SizeExpr::constant(size);
          }
          SizeExpr expr = readSizeExpr(entry, entryPath, fn, where);
          std::string text = formatSizeExpr(expr);
          bool symbolic = expr.hasSymbols();
          // With a quotient rounded down or a named size (which may have
          // one), the smallest value need not be at every symbol 1: only
          // a call can tell.
          bool named = false;
          for (const std::string &symbol : sizeExprSymbols(expr))
            named |= fn.findSize(symbol) != nullptr;
          if (symbolic && (named || expr.hasFloorDiv()))
            return expr;
          DimBindings ones;
          for (const std::string &symbol : fn.argumentSymbols())
            ones.bind(symbol, 1, "");
          SizeError why = SizeError::None;
          std::optional<int64_t> least = evaluateSize(expr, ones, &why);
          if (!least)
            error(entryPath, text + " " + describeSizeError(why) +
                                 (symbolic ? " with every symbol 1" : ""));
          if (!symbolic && (*least < 1 || *least > limit))
            error(entryPath, text + " = " + std::to_string(*least) +
                                 "; expected a size in [1, " +
                                 std::to_string(limit) + "]");
          if (*least > limit)
            error(entryPath, text + " is at least " + std::to_string(*least) +
                                 " (with every symbol 1); CUDA allows at "
                                 "most " +
                                 std::to_string(limit));
          // A constant expression is just its value.
          return symbolic ? expr : SizeExpr::constant(*least);
        });
  }

  /// A size expression (docs/ARTIFACT.md, "Symbolic sizes"): a positive
  /// integer, a symbol of an argument's shape (or a named size), or one of
  ///   {"mul": [e, ...]}  {"add": [e, ...]}  {"min": [e, ...]}
  ///   {"max": [e, ...]}  {"div": [e, e]}  {"ceil_div": [e, integer]}.
  SizeExpr readSizeExpr(const Value &value, const std::string &path,
                        const FunctionSpec &fn, const std::string &where) {
    if (value.is(Kind::Number))
      return SizeExpr::constant(readPositive(value, path));
    if (value.is(Kind::String))
      return SizeExpr::symbolic(readArgumentSymbol(value, path, fn, where));
    if (!value.is(Kind::Object) || value.getObject().size() != 1)
      error(path,
            std::string("expected a size: an integer, a symbol, or "
                        "one of {\"mul\": [...]}, {\"add\": [...]}, "
                        "{\"min\": [...]}, {\"max\": [...]}, "
                        "{\"div\": [size, size]}, "
                        "{\"ceil_div\": [size, integer]}; got ") +
                (value.is(Kind::Object)
                     ? "an object with " +
                           std::to_string(value.getObject().size()) + " keys"
                     : json::describe(value.getKind())));
    const json::Member &op = value.getObject()[0];
    std::string opPath = member(path, op.key);
    SizeExpr expr;
    if (op.key == "mul")
      expr.kind = SizeExpr::Kind::Mul;
    else if (op.key == "add")
      expr.kind = SizeExpr::Kind::Add;
    else if (op.key == "min")
      expr.kind = SizeExpr::Kind::Min;
    else if (op.key == "max")
      expr.kind = SizeExpr::Kind::Max;
    else if (op.key == "div")
      expr.kind = SizeExpr::Kind::Div;
    else if (op.key == "ceil_div")
      expr.kind = SizeExpr::Kind::CeilDiv;
    else
      error(path, "unknown size operation \"" + op.key +
                      "\" (known: mul, add, min, max, div, ceil_div)");
    expectKind(op.value, Kind::Array, opPath);
    const json::Array &operands = op.value.getArray();
    if (expr.kind == SizeExpr::Kind::CeilDiv) {
      if (operands.size() != 2)
        error(opPath, "expected [dividend, divisor], got " +
                          std::to_string(operands.size()) + " operand" +
                          (operands.size() == 1 ? "" : "s"));
      expr.operands.push_back(
          readSizeExpr(operands[0], element(opPath, 0), fn, where));
      if (!operands[1].is(Kind::Number))
        error(element(opPath, 1),
              std::string("the divisor must be a positive integer, got ") +
                  json::describe(operands[1].getKind()));
      expr.value = readPositive(operands[1], element(opPath, 1));
      return expr;
    }
    if (expr.kind == SizeExpr::Kind::Div && operands.size() != 2)
      error(opPath, "expected [dividend, divisor], got " +
                        std::to_string(operands.size()) + " operand" +
                        (operands.size() == 1 ? "" : "s"));
    if (operands.empty())
      error(opPath, "expected at least one operand");
    for (size_t i = 0; i < operands.size(); ++i)
      expr.operands.push_back(
          readSizeExpr(operands[i], element(opPath, i), fn, where));
    return expr;
  }

  int64_t readPositive(const Value &value, const std::string &path) const {
    int64_t number = toInteger(value, path);
    if (number <= 0)
      error(path, "expected a positive integer, got " + std::to_string(number));
    return number;
  }

  /// A symbol used by a launch: one that the arguments' shapes have, so
  /// that every call binds it.
  std::string readArgumentSymbol(const Value &value, const std::string &path,
                                 const FunctionSpec &fn,
                                 const std::string &where) const {
    expectKind(value, Kind::String, path);
    const std::string &symbol = value.getString();
    if (!isSymbol(symbol))
      error(path, "\"" + symbol +
                      "\" is not a size symbol (a letter or '_', then "
                      "letters, digits or '_')");
    std::vector<std::string> symbols = fn.argumentSymbols();
    if (std::find(symbols.begin(), symbols.end(), symbol) != symbols.end() ||
        fn.findSize(symbol))
      return symbol;
    std::string have;
    for (const std::string &known : symbols)
      have += (have.empty() ? "" : ", ") + known;
    for (const NamedSize &named : fn.sizes)
      have += (have.empty() ? "" : ", ") + named.name + " (a named size)";
    error(path, "symbol \"" + symbol + "\" of " + where +
                    " is the size of no argument, so no call binds it (" +
                    (have.empty() ? "the arguments' shapes are static"
                                  : "the arguments have " + have) +
                    ")");
  }

  LaunchParam readParam(const Value &value, const std::string &path,
                        const FunctionSpec &fn, const std::string &where) {
    expectKind(value, Kind::Object, path);
    if (value.getObject().size() != 1)
      error(path, "expected one of {\"arg\": i}, {\"result\": i}, "
                  "{\"buffer\": i}, {\"dim\": symbol}");
    LaunchParam param;
    const std::string &key = value.getObject()[0].key;
    if (key == "arg") {
      param.kind = LaunchParam::Kind::Arg;
      param.index = getIndex(value, path, key, fn.args.size(), "argument");
    } else if (key == "result") {
      param.kind = LaunchParam::Kind::Result;
      param.index = getIndex(value, path, key, fn.results.size(), "result");
    } else if (key == "buffer") {
      param.kind = LaunchParam::Kind::Buffer;
      param.index = getIndex(value, path, key, fn.buffers.size(), "buffer");
    } else if (key == "dim") {
      param.kind = LaunchParam::Kind::Dim;
      param.symbol = readArgumentSymbol(value.getObject()[0].value,
                                        member(path, key), fn, where);
    } else {
      error(path, "unknown parameter kind \"" + key +
                      "\" (known: arg, result, buffer, dim)");
    }
    return param;
  }

  std::vector<TensorSpec> readTensors(const Value &object,
                                      const std::string &path,
                                      std::string_view key) {
    const Value &list = get(object, path, key);
    std::string listPath = member(path, key);
    expectKind(list, Kind::Array, listPath);
    std::vector<TensorSpec> tensors;
    for (size_t i = 0; i < list.getArray().size(); ++i)
      tensors.push_back(readTensor(list.getArray()[i], element(listPath, i)));
    return tensors;
  }

  TensorSpec readTensor(const Value &value, const std::string &path) {
    expectKind(value, Kind::Object, path);
    TensorSpec tensor;
    tensor.name = getString(value, path, "name");
    if (!isUsableName(tensor.name))
      error(member(path, "name"),
            "\"" + tensor.name +
                "\" cannot be used: names must not start with '.' or contain "
                "'/', '\\', '=' or whitespace, since they name files and "
                "NAME=FILE options");
    std::string dtype = getString(value, path, "dtype");
    std::optional<DType> parsed = parseDType(dtype);
    if (!parsed)
      error(member(path, "dtype"), "unknown dtype \"" + dtype +
                                       "\" (known: f64 f32 f16 bf16 i64 "
                                       "i32 i8)");
    tensor.dtype = *parsed;
    readShape(get(value, path, "shape"), member(path, "shape"), tensor);
    return tensor;
  }

  /// A letter or '_', then letters, digits or '_'.
  static bool isSymbol(const std::string &text) {
    if (text.empty() || std::isdigit((unsigned char)text[0]))
      return false;
    for (char c : text)
      if (!std::isalnum((unsigned char)c) && c != '_')
        return false;
    return true;
  }

  /// Sizes are positive integers, or symbols that each call binds.
  void readShape(const Value &value, const std::string &path,
                 TensorSpec &tensor) {
    expectKind(value, Kind::Array, path);
    Shape &shape = tensor.shape;
    std::vector<std::string> &symbols = tensor.symbols;
    for (size_t i = 0; i < value.getArray().size(); ++i) {
      const Value &entry = value.getArray()[i];
      std::string entryPath = element(path, i);
      if (entry.is(Kind::String)) {
        const std::string &symbol = entry.getString();
        if (!isSymbol(symbol))
          error(entryPath, "\"" + symbol +
                               "\" is not a size symbol (a letter or '_', "
                               "then letters, digits or '_')");
        shape.push_back(kSymbolicSize);
        symbols.resize(i);
        symbols.push_back(symbol);
        continue;
      }
      if (!entry.is(Kind::Number))
        error(entryPath, std::string("expected a size or a symbol, got ") +
                             json::describe(entry.getKind()));
      int64_t size = toInteger(entry, entryPath);
      if (size <= 0)
        error(entryPath,
              "sizes must be positive, got " + std::to_string(size));
      shape.push_back(size);
    }
    if (!symbols.empty())
      symbols.resize(shape.size());
    // At least this many elements, whatever the symbols bind.
    Shape smallest = shape;
    std::replace(smallest.begin(), smallest.end(), kSymbolicSize, int64_t(1));
    if (!numElements(smallest))
      error(path, formatShape(tensor) + " has too many elements");
  }

  /// The results' and the buffers' sizes must follow from the arguments':
  /// every symbol of `tensors` occurs in some argument (or, with `named`, is
  /// a named size). `why` says why.
  void checkDerivedSymbols(const FunctionSpec &fn,
                           const std::vector<TensorSpec> &tensors,
                           const std::string &listPath, bool named,
                           const char *why) const {
    std::vector<std::string> bound = fn.argumentSymbols();
    if (named)
      for (const NamedSize &size : fn.sizes)
        bound.push_back(size.name);
    for (size_t t = 0; t < tensors.size(); ++t) {
      const std::vector<std::string> &symbols = tensors[t].symbols;
      for (size_t d = 0; d < symbols.size(); ++d)
        if (!symbols[d].empty() &&
            std::find(bound.begin(), bound.end(), symbols[d]) == bound.end())
          error(element(member(element(listPath, t), "shape"), d),
                "symbol \"" + symbols[d] +
                    "\" is bound by no argument: " + why);
    }
  }

  void checkUniqueTensorNames(const FunctionSpec &fn,
                              const std::string &path) const {
    std::vector<const TensorSpec *> all;
    for (const TensorSpec &tensor : fn.args)
      all.push_back(&tensor);
    for (const TensorSpec &tensor : fn.results)
      all.push_back(&tensor);
    for (const TensorSpec &tensor : fn.buffers)
      all.push_back(&tensor);
    for (size_t i = 0; i < all.size(); ++i)
      for (size_t j = 0; j < i; ++j)
        if (all[i]->name == all[j]->name)
          error(path, std::string(fn.buffers.empty()
                                      ? "two arguments or results"
                                      : "two arguments, results or buffers") +
                          " are named \"" + all[i]->name + "\"");
  }

  void checkUniqueFunctionNames(const Manifest &manifest) const {
    const std::vector<FunctionSpec> &fns = manifest.functions;
    for (size_t i = 0; i < fns.size(); ++i)
      for (size_t j = 0; j < i; ++j)
        if (fns[i].name == fns[j].name)
          error(element("functions", i),
                "a second function is named \"" + fns[i].name + "\"");
  }

  //===--------------------------------------------------------------------===//
  // References
  //===--------------------------------------------------------------------===//

  Reference readReference(const Value &value, const std::string &path,
                          const FunctionSpec &fn) {
    expectKind(value, Kind::Object, path);
    Reference reference;
    std::string kind = getString(value, path, "kind");
    if (kind == "attention") {
      reference.kind = Reference::Kind::Attention;
      reference.attention = readAttention(value, path, fn);
    } else if (kind == "roundtrip") {
      reference.kind = Reference::Kind::Roundtrip;
      reference.pairs = readPairs(value, path, fn);
    } else if (kind != "none") {
      error(member(path, "kind"), "unknown reference kind \"" + kind +
                                      "\" (known: attention, roundtrip, none)");
    }
    return reference;
  }

  /// Reads `key` as an index into `count` entries, each called `what`.
  size_t getIndex(const Value &object, const std::string &path,
                  std::string_view key, size_t count, const char *what) const {
    int64_t index = getInteger(object, path, key);
    if (index < 0 || size_t(index) >= count)
      error(member(path, key), "index " + std::to_string(index) +
                                   " out of range: the function has " +
                                   std::to_string(count) + " " + what +
                                   (count == 1 ? "" : "s"));
    return size_t(index);
  }

  AttentionReference readAttention(const Value &value, const std::string &path,
                                   const FunctionSpec &fn) {
    AttentionReference ref;
    ref.q = getIndex(value, path, "q", fn.args.size(), "argument");
    ref.k = getIndex(value, path, "k", fn.args.size(), "argument");
    ref.v = getIndex(value, path, "v", fn.args.size(), "argument");
    ref.result = getIndex(value, path, "result", fn.results.size(), "result");
    const Value &causal = get(value, path, "causal");
    expectKind(causal, Kind::Bool, member(path, "causal"));
    ref.causal = causal.getBool();
    const Value &scale = get(value, path, "scale");
    expectKind(scale, Kind::Number, member(path, "scale"));
    ref.scale = scale.getNumber();

    const TensorSpec *operands[] = {&fn.args[ref.q], &fn.args[ref.k],
                                    &fn.args[ref.v], &fn.results[ref.result]};
    for (const TensorSpec *operand : operands)
      if (!isFloat(operand->dtype))
        error(path, "attention operand \"" + operand->name + "\" has dtype " +
                        dtypeName(operand->dtype) + "; it must be a float");
    const Shape &q = fn.args[ref.q].shape, &k = fn.args[ref.k].shape,
                &v = fn.args[ref.v].shape;
    const TensorSpec &result = fn.results[ref.result];
    bool symbolic = false;
    for (const TensorSpec *operand : operands)
      symbolic |= operand->hasSymbols();
    if (symbolic) {
      // The sizes are known at a call; expectedResults checks them there.
      for (const TensorSpec *operand : operands)
        if (operand->shape.size() != 4)
          error(path, "attention operand \"" + operand->name + "\" has shape " +
                          formatShape(*operand) +
                          "; attention takes rank-4 [B, H, N, d] tensors");
      return ref;
    }
    std::string shapeError = attentionShapeError(q, k, v, ref.causal);
    if (!shapeError.empty())
      error(path, shapeError);
    if (result.shape != attentionResultShape(q, v))
      error(path, "result \"" + result.name + "\" has shape " +
                      formatShape(result.shape) + ", attention gives " +
                      formatShape(attentionResultShape(q, v)));
    return ref;
  }

  std::vector<RoundtripPair> readPairs(const Value &value,
                                       const std::string &path,
                                       const FunctionSpec &fn) {
    const Value &list = get(value, path, "pairs");
    std::string listPath = member(path, "pairs");
    expectKind(list, Kind::Array, listPath);
    if (list.getArray().empty())
      error(listPath, "a roundtrip reference needs at least one pair");
    std::vector<RoundtripPair> pairs;
    for (size_t i = 0; i < list.getArray().size(); ++i) {
      const Value &entry = list.getArray()[i];
      std::string entryPath = element(listPath, i);
      expectKind(entry, Kind::Object, entryPath);
      RoundtripPair pair;
      pair.arg = getIndex(entry, entryPath, "arg", fn.args.size(), "argument");
      pair.result =
          getIndex(entry, entryPath, "result", fn.results.size(), "result");
      const TensorSpec &arg = fn.args[pair.arg];
      const TensorSpec &result = fn.results[pair.result];
      // Symbols included: equal specs give equal shapes at every call.
      if (arg.shape != result.shape || arg.symbols != result.symbols)
        error(entryPath, "argument \"" + arg.name + "\" " +
                             formatShape(arg) + " and result \"" +
                             result.name + "\" " + formatShape(result) +
                             " differ in shape");
      pairs.push_back(pair);
    }
    return pairs;
  }

  const std::string &filename;
  bool isCuda = false;
};
} // namespace

Manifest qattn::rt::parseManifest(std::string_view text,
                                  const std::string &filename) {
  return ManifestReader(filename).read(json::parse(text, filename));
}

Manifest qattn::rt::loadManifest(const std::string &directory) {
  std::string path = directory + "/manifest.json";
  Manifest manifest = parseManifest(readFile(path), path);
  manifest.directory = directory;
  return manifest;
}
