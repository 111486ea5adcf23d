//===- SizeExpr.h - host sizes as manifest size expressions -----*- C++ -*-===//
//
// Part of the qattn project.
//
// A cuda artifact has no host code: the sizes that the host function computes
// from its arguments' shapes (launch grids, scratch sizes, sizes passed to a
// kernel) go into the manifest as size expressions, which the runtime
// evaluates at each call (docs/ARTIFACT.md, "Symbolic sizes on target cuda").
//
//===----------------------------------------------------------------------===//

#ifndef QATTN_LIB_TARGET_SIZEEXPR_H
#define QATTN_LIB_TARGET_SIZEEXPR_H

#include "mlir/IR/Value.h"
#include "llvm/Support/JSON.h"

#include <string>

namespace mlir::qattn {

/// Reads the index arithmetic of a bufferized host function as manifest
/// sizes: an integer, a symbol, or {"mul": [...]}, {"add": [...]},
/// {"min": [...]}, {"max": [...]}, {"div": [size, size]} (rounded down),
/// {"ceil_div": [size, integer]}. It follows `memref.dim` of the function's
/// arguments (and result out-params), positive `arith.constant`s,
/// `arith.muli`, `arith.addi`, `arith.minui`/`minsi`, `arith.maxui`/`maxsi`,
/// `arith.divui`/`divsi`, `arith.ceildivui`/`ceildivsi` by a positive
/// constant, and `arith.index_cast`/`index_castui`.
class SizeTracer {
public:
  /// `shapes[i]` is the manifest shape of the host's block argument i: the
  /// arguments', then the result out-params'.
  explicit SizeTracer(SmallVector<const llvm::json::Array *> shapes)
      : shapes(std::move(shapes)) {}

  /// The size that `value` holds. Otherwise emits an error at `user`,
  /// "<what> is computed by ...", naming the op that no size expresses, with
  /// a note at that op.
  FailureOr<llvm::json::Value> trace(Value value, Operation *user,
                                     const Twine &what) const;

private:
  SmallVector<const llvm::json::Array *> shapes;
};

/// "B*8", "ceil_div(B*MP, 4)", "max(min(div(1584, B*8), 64), 1)": a manifest
/// size as diagnostics write it.
std::string formatSize(const llvm::json::Value &size);

/// The op that computes `value`, past integer casts; null for a block
/// argument.
Operation *getSizeOp(Value value);

/// Whether `op` only computes sizes for the ops that use them (arith ops,
/// memref.dim): a planner writes nothing for it.
bool isSizeComputation(Operation *op);

} // namespace mlir::qattn

#endif // QATTN_LIB_TARGET_SIZEEXPR_H
