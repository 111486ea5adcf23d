//===- Manifest.h - Artifact manifests --------------------------*- C++ -*-===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//
//
// The contents of an artifact's manifest.json (docs/ARTIFACT.md, version 1):
// the target, the library, and each function's symbol, signature and what it
// should compute. Parsing validates everything the runtime relies on later,
// so loaders and runners can trust a Manifest.
//
//===----------------------------------------------------------------------===//

#ifndef QATTN_RUNTIME_MANIFEST_H
#define QATTN_RUNTIME_MANIFEST_H

#include "qattn/Runtime/Types.h"

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

struct FunctionSpec {
  std::string name;
  std::string symbol;
  std::vector<TensorSpec> args;
  std::vector<TensorSpec> results;
  Reference reference;
};

struct Manifest {
  /// The manifest version this runtime reads.
  static constexpr int kVersion = 1;

  std::string target;
  /// The library's path relative to `directory`.
  std::string library;
  std::vector<FunctionSpec> functions;
  /// The directory that holds manifest.json.
  std::string directory;

  /// The function called `name`; nullptr if there is none.
  const FunctionSpec *findFunction(std::string_view name) const;
  /// `library` resolved against `directory`.
  std::string libraryPath() const;
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
