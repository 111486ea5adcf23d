//===- CpuArtifact.cpp - Artifacts for target "cpu" -----------------------===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//

#include "qattn/Runtime/CpuArtifact.h"

#include "Checks.h"
#include "Files.h"
#include "Sha256.h"
#include "qattn/Runtime/Error.h"

#include <array>
#include <cstring>
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <ostream>
#include <utility>

using namespace qattn::rt;

namespace {
//===----------------------------------------------------------------------===//
// Calling a C function with N pointer arguments
//===----------------------------------------------------------------------===//

/// How the symbol is held until it is cast to its real type at the call.
using EntryPoint = void (*)();
/// Calls an entry point with the pointers in an array.
using Invoker = void (*)(EntryPoint, void *const *);

template <size_t> using VoidPtr = void *;

/// Calls `entry` as a `void (*)(void *, ... N times)` with ptrs[0..N). The
/// callee is a plain C function with N pointer parameters, so the pointer
/// must have exactly that type: calling it through a varargs prototype
/// would pass arguments the way varargs are passed, which need not match.
template <size_t... I>
void invokeWith(EntryPoint entry, [[maybe_unused]] void *const *ptrs,
                std::index_sequence<I...>) {
  using Fn = void (*)(VoidPtr<I>...);
  reinterpret_cast<Fn>(entry)(ptrs[I]...);
}

template <size_t N> void invokeArity(EntryPoint entry, void *const *ptrs) {
  invokeWith(entry, ptrs, std::make_index_sequence<N>());
}

template <size_t... N>
constexpr std::array<Invoker, sizeof...(N)>
makeInvokers(std::index_sequence<N...>) {
  return {&invokeArity<N>...};
}

/// kInvokers[n] calls an entry point with n pointers.
constexpr std::array<Invoker, kCpuMaxMemrefs + 1> kInvokers =
    makeInvokers(std::make_index_sequence<kCpuMaxMemrefs + 1>());

//===----------------------------------------------------------------------===//
// Memref descriptors
//===----------------------------------------------------------------------===//

static_assert(sizeof(void *) == sizeof(int64_t),
              "memref descriptors are laid out for 64-bit pointers");

/// The MLIR ranked memref descriptor of a rank-r tensor as 3 + 2r words:
/// allocated pointer, aligned pointer, offset, sizes[r], strides[r].
std::vector<int64_t> makeDescriptor(void *data, const int64_t *shape,
                                    size_t rank) {
  std::vector<int64_t> desc(3 + 2 * rank);
  std::memcpy(&desc[0], &data, sizeof(data));
  std::memcpy(&desc[1], &data, sizeof(data));
  desc[2] = 0;
  int64_t stride = 1;
  for (size_t i = rank; i-- > 0;) {
    desc[3 + i] = shape[i];
    desc[3 + rank + i] = stride;
    stride *= shape[i];
  }
  return desc;
}

std::vector<int64_t> makeDescriptor(const Tensor &tensor) {
  // The callee only writes through the results' descriptors; arguments are
  // passed with the same non-const type because C has no other.
  const Shape &shape = tensor.getShape();
  return makeDescriptor(const_cast<void *>(tensor.data()), shape.data(),
                        shape.size());
}

//===----------------------------------------------------------------------===//
// Artifact and functions
//===----------------------------------------------------------------------===//

/// "f32[B,3,5]".
std::string describeSpec(const TensorSpec &spec) {
  std::string text = std::string(dtypeName(spec.dtype)) + "[";
  for (size_t i = 0; i < spec.shape.size(); ++i) {
    text += i ? "," : "";
    text += spec.shape[i] == kSymbolicSize ? spec.symbols[i]
                                           : std::to_string(spec.shape[i]);
  }
  return text + "]";
}

struct LibraryCloser {
  void operator()(void *handle) const { dlclose(handle); }
};
using LibraryHandle = std::unique_ptr<void, LibraryCloser>;

class CpuFunctionImpl final : public CpuFunction {
public:
  CpuFunctionImpl(const FunctionSpec &spec, EntryPoint entry)
      : CpuFunction(spec), entry(entry) {}

  void callInPlace(const std::vector<HostTensorRef> &args,
                   const std::vector<HostTensorRef> &results) override {
    std::vector<std::vector<int64_t>> descriptors;
    DimBindings bindings;
    check("argument", getSpec().args, args, bindings, descriptors);
    check("result", getSpec().results, results, bindings, descriptors);
    invokeDescriptors(descriptors);
  }

private:
  void invoke(const std::vector<Tensor> &args, std::vector<Tensor> &results,
              const DimBindings &) override {
    std::vector<std::vector<int64_t>> descriptors;
    for (const Tensor &arg : args)
      descriptors.push_back(makeDescriptor(arg));
    for (const Tensor &result : results)
      descriptors.push_back(makeDescriptor(result));
    invokeDescriptors(descriptors);
  }

  /// Checks caller-owned buffers against `specs` as Function::call checks
  /// tensors; appends their descriptors, which carry the buffers' sizes.
  void check(const char *kind, const std::vector<TensorSpec> &specs,
             const std::vector<HostTensorRef> &tensors, DimBindings &bindings,
             std::vector<std::vector<int64_t>> &descriptors) const {
    const std::string &name = getSpec().name;
    checkCount(kind, specs.size(), tensors.size(), name);
    for (size_t i = 0; i < specs.size(); ++i) {
      const HostTensorRef &tensor = tensors[i];
      checkTensor(kind, specs[i], tensor.dtype, tensor.shape, tensor.rank,
                  name, bindings);
      if (!tensor.data)
        fail(kind, " \"", specs[i].name, "\" of function \"", name,
             "\": null pointer");
      descriptors.push_back(
          makeDescriptor(tensor.data, tensor.shape, tensor.rank));
    }
  }

  void invokeDescriptors(std::vector<std::vector<int64_t>> &descriptors) {
    std::vector<void *> pointers;
    for (std::vector<int64_t> &desc : descriptors)
      pointers.push_back(desc.data());
    kInvokers[pointers.size()](entry, pointers.data());
  }

  EntryPoint entry;
};

class CpuArtifact : public Artifact {
public:
  CpuArtifact(Manifest manifest, LibraryHandle library)
      : Artifact(std::move(manifest)), library(std::move(library)) {
    for (const FunctionSpec &spec : this->manifest.functions)
      functions.push_back(
          std::make_unique<CpuFunctionImpl>(spec, resolve(spec)));
  }

private:
  EntryPoint resolve(const FunctionSpec &spec) const {
    size_t memrefs = spec.args.size() + spec.results.size();
    if (memrefs > kCpuMaxMemrefs)
      fail("function \"", spec.name, "\" takes ", memrefs,
           " arguments and results; target cpu calls at most ", kCpuMaxMemrefs);
    void *symbol = dlsym(library.get(), spec.symbol.c_str());
    if (!symbol)
      fail(manifest.libraryPath(), ": no symbol \"", spec.symbol,
           "\" for function \"", spec.name, "\"");
    checkSignature(spec);
    return reinterpret_cast<EntryPoint>(symbol);
  }

  /// The library states what each entry point takes and writes; a manifest
  /// that says otherwise (another dtype, shape or symbol) would have the
  /// runtime allocate results that the code overruns.
  void checkSignature(const FunctionSpec &spec) const {
    std::string name = cpuSignatureSymbol(spec.symbol);
    std::string expected = cpuSignature(spec);
    void *address = dlsym(library.get(), name.c_str());
    if (!address)
      fail(manifest.libraryPath(), ": no symbol \"", name,
           "\", the signature of \"", spec.symbol, "\" for function \"",
           spec.name,
           "\" (qattn-compile writes one per function; compile "
           "the artifact again)");
    // The symbol's size bounds the read: nothing promises a terminating NUL.
    Dl_info info;
    void *entry = nullptr;
    if (!dladdr1(address, &info, &entry, RTLD_DL_SYMENT) || !entry)
      fail(manifest.libraryPath(), ": cannot find the size of \"", name, "\"");
    std::string_view actual(static_cast<const char *>(address),
                            static_cast<const ElfW(Sym) *>(entry)->st_size);
    actual = actual.substr(0, actual.find('\0'));
    if (actual != expected)
      fail(manifest.libraryPath(), ": function \"", spec.name,
           "\" does not match the manifest: \"", spec.symbol,
           "\" was compiled for ", actual, ", the manifest says ", expected);
  }

  LibraryHandle library;
};
} // namespace

std::string qattn::rt::cpuSignatureSymbol(const std::string &symbol) {
  return "qattn_signature." + symbol;
}

std::string qattn::rt::cpuSignature(const FunctionSpec &spec) {
  auto list = [](const std::vector<TensorSpec> &specs) {
    std::string text = "(";
    for (size_t i = 0; i < specs.size(); ++i)
      text += (i ? ", " : "") + describeSpec(specs[i]);
    return text + ")";
  };
  return list(spec.args) + " -> " + list(spec.results);
}

std::unique_ptr<Artifact>
qattn::rt::loadCpuArtifact(Manifest manifest, const LoadOptions &options) {
  std::string path = manifest.libraryPath();
  // Before dlopen: the loader maps a truncated file and faults on the pages
  // past its end, and runs whatever code a changed one holds.
  std::string bytes;
  try {
    bytes = readFile(path);
  } catch (const Error &error) {
    fail("cannot load the artifact's library: ", error.what());
  }
  checkSha256(bytes, path, manifest.librarySha256, "library_sha256");
  // A path with a '/' keeps dlopen from searching the library path, so the
  // artifact's own library is the one loaded.
  if (path.find('/') == std::string::npos)
    path = "./" + path;
  LibraryHandle library(dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL));
  if (!library) {
    const char *reason = dlerror();
    fail("cannot load the artifact's library: ",
         reason ? reason : path + ": unknown error");
  }
  if (options.log)
    *options.log << "cpu: loaded " << path << "\n";
  return std::make_unique<CpuArtifact>(std::move(manifest), std::move(library));
}
