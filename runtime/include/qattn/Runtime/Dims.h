//===- Dims.h - Symbolic sizes of a function's tensors ----------*- C++ -*-===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//
//
// A manifest's shape may name a size with a symbol instead of giving it
// (docs/ARTIFACT.md, "Symbolic sizes"): "shape": ["B", 8, 1, 64]. One
// function then serves every size there. A call binds each symbol to the
// size its arguments have where it first occurs, checks every later
// occurrence against that, and sizes the results from the bindings.
//
//===----------------------------------------------------------------------===//

#ifndef QATTN_RUNTIME_DIMS_H
#define QATTN_RUNTIME_DIMS_H

#include "qattn/Runtime/Manifest.h"
#include "qattn/Runtime/Types.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace qattn::rt {

/// The sizes bound to symbols, in the order they were bound.
class DimBindings {
public:
  struct Binding {
    std::string symbol;
    int64_t size;
    /// What bound it, for messages: `argument "x"`, `--dim B=2`.
    std::string source;
  };

  /// The binding of `symbol`; nullptr if there is none.
  const Binding *find(std::string_view symbol) const;
  /// Binds `symbol`, which has no binding yet, to `size`.
  void bind(std::string symbol, int64_t size, std::string source);

  const std::vector<Binding> &getBindings() const { return bindings; }
  bool empty() const { return bindings.empty(); }
  /// "B=2, N=12".
  std::string format() const;

private:
  std::vector<Binding> bindings;
};

/// Whether a shape shape[0..rank) has `spec`'s rank and static sizes; the
/// sizes at its symbols are not looked at.
bool matchesStaticSizes(const TensorSpec &spec, const int64_t *shape,
                        size_t rank);

/// Binds each symbol of `spec` to the size that `shape` (which
/// matchesStaticSizes accepts) has there, recording `source` as what bound
/// it, or checks that size against the symbol's binding. Throws Error, with
/// `what` naming the tensor:
///   <what>: dimension 0 (B) is 3, but B = 2 from argument "x"
///   <what>: dimension 0 (B) is 0; a symbolic size must be at least 1
void bindSymbols(const TensorSpec &spec, const int64_t *shape,
                 DimBindings &bindings, const std::string &what,
                 const std::string &source);

/// The symbols of `spec` that `bindings` lacks, in order, each once.
std::vector<std::string> unboundSymbols(const TensorSpec &spec,
                                        const DimBindings &bindings);

/// `spec`'s shape with each symbol replaced by its binding. Throws Error,
/// with `what` naming the tensor, if a symbol has none or the shape has more
/// than kMaxElements elements.
Shape resolveShape(const TensorSpec &spec, const DimBindings &bindings,
                   const std::string &what);

/// Binds `fn`'s symbols from its arguments' shapes, checking each shape
/// against the signature (count, ranks, static sizes and symbols, as
/// Function::call does; there are no dtypes here), and returns the shapes
/// of its results. Throws Error. If `bindings` is set, it receives them.
std::vector<Shape> getResultShapes(const FunctionSpec &fn,
                                   const std::vector<Shape> &argShapes,
                                   DimBindings *bindings = nullptr);

} // namespace qattn::rt

#endif // QATTN_RUNTIME_DIMS_H
