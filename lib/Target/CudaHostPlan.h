//===- CudaHostPlan.h - a host function as manifest launches ----*- C++ -*-===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//

#ifndef QATTN_LIB_TARGET_CUDAHOSTPLAN_H
#define QATTN_LIB_TARGET_CUDAHOSTPLAN_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/JSON.h"

namespace mlir::qattn {

/// The manifest's `sizes`, `buffers` and `launches` of one host function.
struct LaunchPlan {
  llvm::json::Array sizes, buffers, launches;
};

/// Reads the bufferized host function of the manifest entry `fn` (its
/// arguments, then its results' out-params, as `fn`'s "args" and "results"
/// describe them): scratch allocations, views of buffers, size arithmetic and
/// kernel launches, in order. Emits an error at the first op that the
/// manifest cannot express.
FailureOr<LaunchPlan> planLaunches(func::FuncOp host,
                                   const llvm::json::Object &fn);

} // namespace mlir::qattn

#endif // QATTN_LIB_TARGET_CUDAHOSTPLAN_H
