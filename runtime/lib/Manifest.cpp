//===- Manifest.cpp - Artifact manifests ----------------------------------===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//

#include "qattn/Runtime/Manifest.h"

#include "qattn/Runtime/Error.h"
#include "qattn/Runtime/Json.h"
#include "qattn/Runtime/Reference.h"

#include "Files.h"

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

const TensorSpec &FunctionSpec::getParamTensor(const LaunchParam &param) const {
  switch (param.kind) {
  case LaunchParam::Kind::Arg:
    return args[param.index];
  case LaunchParam::Kind::Result:
    return results[param.index];
  case LaunchParam::Kind::Buffer:
    break;
  }
  return buffers[param.index];
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
    return value.getString();
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
    if (isCuda && value.find("buffers"))
      fn.buffers = readTensors(value, path, "buffers");
    checkUniqueTensorNames(fn, path);
    checkResultSymbols(fn, path);
    if (const Value *reference = value.find("reference"))
      fn.reference = readReference(*reference, member(path, "reference"), fn);
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
          readLaunch(list.getArray()[i], element(listPath, i), fn));
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
                        const FunctionSpec &fn) {
    expectKind(value, Kind::Object, path);
    LaunchSpec launch;
    launch.kernel = getString(value, path, "kernel");
    // CUDA's limits on every current device: grid.x < 2^31, grid.y and
    // grid.z <= 65535; block.x, block.y <= 1024, block.z <= 64, and at most
    // 1024 threads in a block.
    launch.grid = readDims(value, path, "grid", {0x7fffffff, 65535, 65535});
    launch.block = readDims(value, path, "block", {1024, 1024, 64});
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
          readParam(params.getArray()[i], element(paramsPath, i), fn));
    return launch;
  }

  std::array<uint32_t, 3> readDims(const Value &object, const std::string &path,
                                   std::string_view key,
                                   const std::array<int64_t, 3> &limits) {
    const Value &list = get(object, path, key);
    std::string listPath = member(path, key);
    expectKind(list, Kind::Array, listPath);
    if (list.getArray().size() != 3)
      error(listPath, "expected 3 sizes (x, y, z), got " +
                          std::to_string(list.getArray().size()));
    std::array<uint32_t, 3> dims;
    for (size_t i = 0; i < 3; ++i) {
      const Value &entry = list.getArray()[i];
      if (entry.is(Kind::String))
        error(element(listPath, i),
              "symbolic size \"" + entry.getString() +
                  "\": launch sizes that depend on a call's sizes are not "
                  "supported yet");
      int64_t size = toInteger(entry, element(listPath, i));
      if (size <= 0 || size > limits[i])
        error(element(listPath, i), "expected a size in [1, " +
                                        std::to_string(limits[i]) + "], got " +
                                        std::to_string(size));
      dims[i] = uint32_t(size);
    }
    return dims;
  }

  LaunchParam readParam(const Value &value, const std::string &path,
                        const FunctionSpec &fn) {
    expectKind(value, Kind::Object, path);
    if (value.getObject().size() != 1)
      error(path, "expected one of {\"arg\": i}, {\"result\": i}, "
                  "{\"buffer\": i}");
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
    } else {
      error(path, "unknown parameter kind \"" + key +
                      "\" (known: arg, result, buffer)");
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
        // Its kernels' grids and scratch buffers are sized at compile time.
        if (isCuda)
          error(entryPath, "symbolic size \"" + symbol +
                               "\": target cuda does not support symbolic "
                               "sizes yet (its launch grids are static)");
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

  /// The caller allocates the results, so their sizes must follow from the
  /// arguments'.
  void checkResultSymbols(const FunctionSpec &fn,
                          const std::string &path) const {
    for (size_t r = 0; r < fn.results.size(); ++r) {
      const TensorSpec &result = fn.results[r];
      for (size_t d = 0; d < result.symbols.size(); ++d) {
        const std::string &symbol = result.symbols[d];
        if (symbol.empty())
          continue;
        bool bound = false;
        for (const TensorSpec &arg : fn.args)
          bound |= std::find(arg.symbols.begin(), arg.symbols.end(),
                             symbol) != arg.symbols.end();
        if (!bound)
          error(element(member(element(member(path, "results"), r), "shape"),
                        d),
                "symbol \"" + symbol +
                    "\" is bound by no argument: the caller allocates the "
                    "results, so their sizes must follow from the arguments'");
      }
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
