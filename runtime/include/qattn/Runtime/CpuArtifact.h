//===- CpuArtifact.h - Artifacts for target "cpu" ---------------*- C++ -*-===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//
//
// Target "cpu": the artifact's library is a shared object that exports one C
// function per manifest function, called with MLIR memref descriptors
// (docs/ARTIFACT.md, "Calling convention").
//
//===----------------------------------------------------------------------===//

#ifndef QATTN_RUNTIME_CPUARTIFACT_H
#define QATTN_RUNTIME_CPUARTIFACT_H

#include "qattn/Runtime/Artifact.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace qattn::rt {

/// The most memrefs (arguments plus results) a cpu function may take.
constexpr size_t kCpuMaxMemrefs = 64;

/// A dense row-major host buffer the caller owns, for
/// CpuFunction::callInPlace. It does not own the memory or the shape:
/// shape[0..rank) must stay valid during the call.
struct HostTensorRef {
  void *data = nullptr;
  DType dtype = DType::F32;
  const int64_t *shape = nullptr;
  size_t rank = 0;
};

/// A function of a cpu artifact. Besides Function::call on rt::Tensors, it
/// runs on buffers the caller owns (a NumPy array, through the C ABI),
/// without copying them.
class CpuFunction : public Function {
public:
  /// Calls the function on `args` and `results` in place. Checks the count,
  /// dtypes and shapes as call() does, and that no pointer is null, before
  /// calling; throws Error if one is wrong.
  virtual void callInPlace(const std::vector<HostTensorRef> &args,
                           const std::vector<HostTensorRef> &results) = 0;

protected:
  using Function::Function;
};

/// The data symbol by which a cpu library states the signature of its
/// entry point `symbol` ("qattn_signature._mlir_ciface_f"): a string,
/// cpuSignature of the function it was compiled from (docs/ARTIFACT.md).
std::string cpuSignatureSymbol(const std::string &symbol);

/// The dtypes and shapes, symbols included, of a function's arguments and
/// results: "(f32[B,3,5], i8[4,8]) -> (f32[B,3,5])".
std::string cpuSignature(const FunctionSpec &spec);

/// Checks the library's bytes against the manifest's library_sha256,
/// dlopens it, resolves every function's symbol and compares the signature
/// the library states for it with the manifest's. Throws Error if the hash
/// differs, the library does not load, a symbol or its signature is missing
/// or differs, or a function takes more than kCpuMaxMemrefs memrefs.
std::unique_ptr<Artifact> loadCpuArtifact(Manifest manifest,
                                          const LoadOptions &options);

} // namespace qattn::rt

#endif // QATTN_RUNTIME_CPUARTIFACT_H
