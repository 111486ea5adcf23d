//===- Manifest.h - Artifact manifests --------------------------*- C++ -*-===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//
//
// The contents of an artifact's manifest.json (docs/ARTIFACT.md, version 1):
// the target, the library, and each function's signature, what it should
// compute and how to call it (target "cpu": a symbol; target "cuda": scratch
// buffers and kernel launches). Parsing validates everything the runtime
// relies on later, so loaders and runners can trust a Manifest.
//
//===----------------------------------------------------------------------===//

#ifndef QATTN_RUNTIME_MANIFEST_H
#define QATTN_RUNTIME_MANIFEST_H

#include "qattn/Runtime/Types.h"

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace qattn::rt {

/// `{"kind": "attention", ...}`: results[result] is softmax(scale * Q K^T +
/// mask) V of args[q], args[k], args[v].
struct AttentionReference {
  size_t q = 0, k = 0, v = 0, result = 0;
  bool causal = false;
  double scale = 1.0;
};

/// One pair of `{"kind": "roundtrip", ...}`: results[result] ≈ args[arg].
struct RoundtripPair {
  size_t arg = 0, result = 0;
};

/// What a function computes, so that a runner can check it in float64.
struct Reference {
  enum class Kind { None, Attention, Roundtrip };
  Kind kind = Kind::None;
  AttentionReference attention;     // For Kind::Attention.
  std::vector<RoundtripPair> pairs; // For Kind::Roundtrip.
};

/// One parameter of a cuda kernel launch: the device address of an
/// argument, a result or a scratch buffer of the function.
struct LaunchParam {
  enum class Kind { Arg, Result, Buffer };
  Kind kind = Kind::Arg;
  size_t index = 0;
};

/// One entry of a cuda function's `launches`.
struct LaunchSpec {
  std::string kernel;
  std::array<uint32_t, 3> grid = {1, 1, 1};
  std::array<uint32_t, 3> block = {1, 1, 1};
  uint32_t sharedBytes = 0;
  std::vector<LaunchParam> params;
  /// May start before the previous launch ends (programmatic dependent
  /// launch); the kernel waits for it before reading what it wrote.
  bool early = false;
};

struct FunctionSpec {
  std::string name;
  /// Target "cpu": the C entry point. Empty for target "cuda".
  std::string symbol;
  std::vector<TensorSpec> args;
  std::vector<TensorSpec> results;
  Reference reference;
  /// Target "cuda": scratch tensors in device memory, and the kernels to
  /// launch in order. Empty for target "cpu".
  std::vector<TensorSpec> buffers;
  std::vector<LaunchSpec> launches;

  /// The tensor a launch parameter names.
  const TensorSpec &getParamTensor(const LaunchParam &param) const;
};

struct Manifest {
  /// The manifest version this runtime reads.
  static constexpr int kVersion = 1;

  std::string target;
  /// The library's path relative to `directory`.
  std::string library;
  /// Target "cuda": the architecture the module was built for ("sm_90a"),
  /// and the PTX to JIT when `library` does not load (relative to
  /// `directory`; empty if the manifest names none).
  std::string chip;
  std::string ptx;
  std::vector<FunctionSpec> functions;
  /// The directory that holds manifest.json.
  std::string directory;

  /// The function called `name`; nullptr if there is none.
  const FunctionSpec *findFunction(std::string_view name) const;
  /// `library` resolved against `directory`.
  std::string libraryPath() const;
  /// `ptx` resolved against `directory`.
  std::string ptxPath() const;
};

/// Reads and validates DIRECTORY/manifest.json. Throws Error naming the file
/// and, for a well-formed JSON document, the path of the offending entry
/// (e.g. "functions[0].args[2].shape[1]").
Manifest loadManifest(const std::string &directory);

/// Parses and validates a manifest's text; `filename` is used in messages.
/// The result's `directory` is left empty.
Manifest parseManifest(std::string_view text, const std::string &filename);

} // namespace qattn::rt

#endif // QATTN_RUNTIME_MANIFEST_H
