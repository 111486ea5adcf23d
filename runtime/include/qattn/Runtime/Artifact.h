//===- Artifact.h - Loaded artifacts ----------------------------*- C++ -*-===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//
//
// The target-independent face of a loaded artifact: its manifest and its
// functions, callable on host tensors. Each target ("cpu", later "cuda")
// implements Artifact and Function in its own file and registers its loader
// in the table in Artifact.cpp; nothing else needs to know about it.
//
//===----------------------------------------------------------------------===//

#ifndef QATTN_RUNTIME_ARTIFACT_H
#define QATTN_RUNTIME_ARTIFACT_H

#include "qattn/Runtime/Manifest.h"
#include "qattn/Runtime/Tensor.h"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace qattn::rt {

/// One function of a loaded artifact.
class Function {
public:
  virtual ~Function();

  const FunctionSpec &getSpec() const { return spec; }

  /// Runs the function: reads `args`, writes every element of `results`.
  /// Throws Error, before running anything, if the tensors' count, dtypes or
  /// shapes differ from the spec.
  void call(const std::vector<Tensor> &args, std::vector<Tensor> &results);

protected:
  explicit Function(const FunctionSpec &spec) : spec(spec) {}

  /// The target-specific call, on tensors that match the spec.
  virtual void invoke(const std::vector<Tensor> &args,
                      std::vector<Tensor> &results) = 0;

private:
  const FunctionSpec &spec;
};

/// A loaded artifact. It owns its functions, which refer to its manifest.
class Artifact {
public:
  virtual ~Artifact();

  const Manifest &getManifest() const { return manifest; }

  /// The function called `name`. Throws Error listing the artifact's
  /// functions if there is none.
  Function &getFunction(std::string_view name);

protected:
  explicit Artifact(Manifest manifest) : manifest(std::move(manifest)) {}

  Manifest manifest;
  /// In the order of manifest.functions; filled by the target's loader.
  std::vector<std::unique_ptr<Function>> functions;
};

/// Loads the artifact in `directory`: reads and validates its manifest.json,
/// then hands it to the loader of its target. Throws Error on an unknown
/// target or anything the target's loader rejects.
std::unique_ptr<Artifact> loadArtifact(const std::string &directory);

/// The targets this runtime can load, e.g. "cpu".
std::string knownTargets();

} // namespace qattn::rt

#endif // QATTN_RUNTIME_ARTIFACT_H
