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

/// A launch size that may depend on a call's sizes (docs/ARTIFACT.md,
/// "Symbolic sizes"): a positive integer, a size symbol, or the product, the
/// sum, the smallest or the largest of such, the quotient of one by another
/// (rounded down), or one's quotient by an integer rounded up. Without
/// quotients rounded down, with every symbol at least 1, its value is at
/// least 1 and grows with each symbol; a quotient rounded down may be 0.
struct SizeExpr {
  enum class Kind { Constant, Symbol, Mul, Add, Min, Max, Div, CeilDiv };
  Kind kind = Kind::Constant;
  /// Kind::Constant: the value; Kind::CeilDiv: the divisor. At least 1.
  int64_t value = 1;
  /// Kind::Symbol: the symbol ("B").
  std::string symbol;
  /// Kind::Mul, Kind::Add, Kind::Min, Kind::Max: the operands (at least
  /// one); Kind::Div: the dividend and the divisor; Kind::CeilDiv: the
  /// dividend alone.
  std::vector<SizeExpr> operands;

  static SizeExpr constant(int64_t value);
  static SizeExpr symbolic(std::string symbol);
  bool isConstant() const { return kind == Kind::Constant; }
  /// Whether a node of kind `k` occurs in it.
  bool contains(Kind k) const;
  /// Whether some symbol occurs in it.
  bool hasSymbols() const { return contains(Kind::Symbol); }
  /// Whether some quotient rounded down occurs in it (so that its value
  /// need not grow with its symbols).
  bool hasFloorDiv() const { return contains(Kind::Div); }
};

/// One entry of a cuda function's `sizes`: a symbol that each call binds to
/// the value of an expression of the arguments' symbols, for the buffers'
/// shapes, the grids and the parameters.
struct NamedSize {
  std::string name;
  SizeExpr size;
};

/// One parameter of a cuda kernel launch: the device address of an
/// argument, a result or a scratch buffer of the function, or (Kind::Dim)
/// the size bound to a symbol, as a 32-bit integer.
struct LaunchParam {
  enum class Kind { Arg, Result, Buffer, Dim };
  Kind kind = Kind::Arg;
  /// Kind::Arg, Kind::Result, Kind::Buffer: the tensor's index.
  size_t index = 0;
  /// Kind::Dim: the symbol.
  std::string symbol;
};

/// One entry of a cuda function's `launches`.
struct LaunchSpec {
  std::string kernel;
  /// Each a constant, or an expression over the function's symbols that a
  /// call evaluates (qattn/Runtime/LaunchPlan.h).
  std::array<SizeExpr, 3> grid = {SizeExpr::constant(1), SizeExpr::constant(1),
                                  SizeExpr::constant(1)};
  std::array<uint32_t, 3> block = {1, 1, 1};
  uint32_t sharedBytes = 0;
  std::vector<LaunchParam> params;
  /// May start before the previous launch ends (programmatic dependent
  /// launch); the kernel waits for it before reading what it wrote.
  bool early = false;

  /// Whether some grid size depends on the call's sizes.
  bool hasSymbolicGrid() const;
};

struct FunctionSpec {
  std::string name;
  /// Target "cpu": the C entry point. Empty for target "cuda".
  std::string symbol;
  std::vector<TensorSpec> args;
  std::vector<TensorSpec> results;
  Reference reference;
  /// Target "cuda": named sizes, evaluated in order at each call; scratch
  /// tensors in device memory (their symbols sized by each call), and the
  /// kernels to launch in order. Empty for target "cpu".
  std::vector<NamedSize> sizes;
  std::vector<TensorSpec> buffers;
  std::vector<LaunchSpec> launches;

  /// The tensor a launch parameter names; nullptr for a Kind::Dim one.
  const TensorSpec *getParamTensor(const LaunchParam &param) const;
  /// The symbols of the arguments' shapes, in order of first occurrence:
  /// the ones a call binds.
  std::vector<std::string> argumentSymbols() const;
  /// The named size called `symbol`; nullptr if there is none.
  const NamedSize *findSize(std::string_view symbol) const;
};

struct Manifest {
  /// The manifest version this runtime reads.
  static constexpr int kVersion = 1;

  std::string target;
  /// The library's path relative to `directory`.
  std::string library;
  /// The SHA-256 of the library's bytes (64 lowercase hex digits), checked
  /// before the library is loaded.
  std::string librarySha256;
  /// Target "cuda": the architecture the module was built for ("sm_90a"),
  /// and the PTX to JIT when `library` does not load (relative to
  /// `directory`; empty if the manifest names none).
  std::string chip;
  std::string ptx;
  /// The SHA-256 of the PTX; set when `ptx` is.
  std::string ptxSha256;
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
