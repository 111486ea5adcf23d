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
#include <memory>

namespace qattn::rt {

/// The most memrefs (arguments plus results) a cpu function may take.
constexpr size_t kCpuMaxMemrefs = 64;

/// dlopens the manifest's library and resolves every function's symbol.
/// Throws Error if the library does not load, a symbol is missing, or a
/// function takes more than kCpuMaxMemrefs memrefs.
std::unique_ptr<Artifact> loadCpuArtifact(Manifest manifest,
                                          const LoadOptions &options);

} // namespace qattn::rt

#endif // QATTN_RUNTIME_CPUARTIFACT_H
