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
    fn.symbol = getString(value, path, "symbol");
    fn.args = readTensors(value, path, "args");
    fn.results = readTensors(value, path, "results");
    checkUniqueTensorNames(fn, path);
    if (const Value *reference = value.find("reference"))
      fn.reference = readReference(*reference, member(path, "reference"), fn);
    return fn;
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
    tensor.shape = readShape(get(value, path, "shape"), member(path, "shape"));
    return tensor;
  }

  Shape readShape(const Value &value, const std::string &path) {
    expectKind(value, Kind::Array, path);
    Shape shape;
    for (size_t i = 0; i < value.getArray().size(); ++i) {
      int64_t size = toInteger(value.getArray()[i], element(path, i));
      if (size <= 0)
        error(element(path, i),
              "sizes must be positive, got " + std::to_string(size));
      shape.push_back(size);
    }
    if (!numElements(shape))
      error(path, formatShape(shape) + " has too many elements");
    return shape;
  }

  void checkUniqueTensorNames(const FunctionSpec &fn,
                              const std::string &path) const {
    std::vector<const TensorSpec *> all;
    for (const TensorSpec &tensor : fn.args)
      all.push_back(&tensor);
    for (const TensorSpec &tensor : fn.results)
      all.push_back(&tensor);
    for (size_t i = 0; i < all.size(); ++i)
      for (size_t j = 0; j < i; ++j)
        if (all[i]->name == all[j]->name)
          error(path,
                "two arguments or results are named \"" + all[i]->name + "\"");
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
    std::string shapeError = attentionShapeError(q, k, v, ref.causal);
    if (!shapeError.empty())
      error(path, shapeError);
    const TensorSpec &result = fn.results[ref.result];
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
      if (arg.shape != result.shape)
        error(entryPath, "argument \"" + arg.name + "\" " +
                             formatShape(arg.shape) + " and result \"" +
                             result.name + "\" " + formatShape(result.shape) +
                             " differ in shape");
      pairs.push_back(pair);
    }
    return pairs;
  }

  const std::string &filename;
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
