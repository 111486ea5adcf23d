//===- Types.h - Element types and shapes -----------------------*- C++ -*-===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//
//
// The element types an artifact's tensors may have (docs/ARTIFACT.md) and the
// shapes they come in.
//
//===----------------------------------------------------------------------===//

#ifndef QATTN_RUNTIME_TYPES_H
#define QATTN_RUNTIME_TYPES_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qattn::rt {

/// An element type, spelled in manifests as its lower-case name.
enum class DType { F64, F32, F16, BF16, I64, I32, I8 };

/// The manifest spelling: "f64", "bf16", "i8", ...
const char *dtypeName(DType dtype);

/// Parses a manifest spelling; nullopt if `name` is not a known dtype.
std::optional<DType> parseDType(std::string_view name);

/// The size of one element in bytes.
size_t dtypeSize(DType dtype);

bool isFloat(DType dtype);

using Shape = std::vector<int64_t>;

/// The largest element count the runtime accepts (2^48). It keeps every byte
/// count representable, so a hostile shape in a file cannot overflow one.
constexpr int64_t kMaxElements = int64_t(1) << 48;

/// The number of elements of `shape`; nullopt if a size is negative or the
/// product exceeds kMaxElements.
std::optional<int64_t> numElements(const Shape &shape);

/// Formats a shape as "[1, 8, 16, 64]".
std::string formatShape(const Shape &shape);

/// The entry of TensorSpec::shape for a size that a symbol names.
constexpr int64_t kSymbolicSize = -1;

/// A named tensor of an artifact function's signature.
struct TensorSpec {
  std::string name;
  DType dtype;
  /// The sizes, kSymbolicSize where `symbols` names the size instead.
  Shape shape;
  /// Per dimension, the symbol that names its size ("B", "N"), "" for a
  /// static size; or empty, when every size is static. A call binds each
  /// symbol to the size its arguments have there (qattn/Runtime/Dims.h).
  std::vector<std::string> symbols;

  /// Whether some size is a symbol.
  bool hasSymbols() const;
  /// The symbol of dimension `dim`; "" for a static size.
  const std::string &getSymbol(size_t dim) const;
};

/// Formats a spec's shape as the manifest writes it: "[B, 8, 1, 64]".
std::string formatShape(const TensorSpec &spec);

} // namespace qattn::rt

#endif // QATTN_RUNTIME_TYPES_H
