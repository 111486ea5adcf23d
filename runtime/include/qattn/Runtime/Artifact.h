//===- Artifact.h - Loaded artifacts ----------------------------*- C++ -*-===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//
//
// The target-independent face of a loaded artifact: its manifest and its
// functions, callable on host tensors. Each target ("cpu", "cuda") implements
// Artifact and Function in its own file and registers its loader in the table
// in Artifact.cpp; nothing else needs to know about it.
//
//===----------------------------------------------------------------------===//

#ifndef QATTN_RUNTIME_ARTIFACT_H
#define QATTN_RUNTIME_ARTIFACT_H

#include "qattn/Runtime/Dims.h"
#include "qattn/Runtime/Manifest.h"
#include "qattn/Runtime/Tensor.h"

#include <iosfwd>
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

  /// The target-specific call, on tensors that match the spec; `bindings`
  /// holds the sizes their symbols bound.
  virtual void invoke(const std::vector<Tensor> &args,
                      std::vector<Tensor> &results,
                      const DimBindings &bindings) = 0;

private:
  const FunctionSpec &spec;
};

/// How to load an artifact; targets ignore what does not concern them.
struct LoadOptions {
  /// Target "cuda": the ordinal of the device to run on.
  int device = 0;
  /// If set, the loader and the functions describe what they do there
  /// (which module image loaded, kernel attributes, ...), one line each.
  std::ostream *log = nullptr;
};

/// A loaded artifact. It owns its functions, which refer to its manifest.
class Artifact {
public:
  virtual ~Artifact();

  const Manifest &getManifest() const { return manifest; }

  /// One line on where the artifact runs, for reports (target "cuda": the
  /// device and the module image loaded); empty if there is nothing to say.
  virtual std::string describe() const { return ""; }

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
std::unique_ptr<Artifact> loadArtifact(const std::string &directory,
                                       const LoadOptions &options = {});

/// The targets this runtime knows, e.g. "cpu, cuda". A runtime built without
/// CUDA knows "cuda" too, and says so when asked to load such an artifact.
std::string knownTargets();

} // namespace qattn::rt

#endif // QATTN_RUNTIME_ARTIFACT_H
