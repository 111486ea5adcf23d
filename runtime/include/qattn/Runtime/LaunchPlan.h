//===- LaunchPlan.h - Launches at one call's sizes --------------*- C++ -*-===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//
//
// A cuda manifest may size a launch's grid, its scratch buffers and some
// kernel parameters by the symbols of its shapes (docs/ARTIFACT.md,
// "Symbolic sizes"). Each call binds the symbols (qattn/Runtime/Dims.h);
// this evaluates what they decide: the grids, the sizes passed as
// parameters, the buffers' shapes. It needs no driver, so that qattn-run
// --plan-only shows a plan, and the tests check it, on machines without a
// GPU; the cuda target launches exactly what it computes.
//
//===----------------------------------------------------------------------===//

#ifndef QATTN_RUNTIME_LAUNCHPLAN_H
#define QATTN_RUNTIME_LAUNCHPLAN_H

#include "qattn/Runtime/Dims.h"
#include "qattn/Runtime/Manifest.h"
#include "qattn/Runtime/Types.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace qattn::rt {

/// CUDA's limits on every current device: grid.x < 2^31, grid.y and grid.z
/// <= 65535; block.x, block.y <= 1024, block.z <= 64 (and at most 1024
/// threads in a block).
constexpr std::array<int64_t, 3> kCudaGridLimits = {0x7fffffff, 65535, 65535};
constexpr std::array<int64_t, 3> kCudaBlockLimits = {1024, 1024, 64};

/// The largest size a {"dim": SYM} parameter (a 32-bit signed integer)
/// holds.
constexpr int64_t kMaxDimParam = 0x7fffffff;

/// Why a size expression has no value.
enum class SizeError { None, Overflow, DivisionByZero };
/// "overflows int64", "divides by 0".
const char *describeSizeError(SizeError error);

/// The value of `expr` with each symbol's size from `bindings`, in int64 (at
/// least 0: a quotient rounded down may be 0); nullopt if a step overflows
/// or divides by 0, with the reason in `why` if given. Throws Error if a
/// symbol has no binding.
std::optional<int64_t> evaluateSize(const SizeExpr &expr,
                                    const DimBindings &bindings,
                                    SizeError *why = nullptr);

/// `expr` as an expression: "B*16", "ceil_div(N, 64)", "(B+1)*2",
/// "max(min(div(1584, B*8), 64), 1)".
std::string formatSizeExpr(const SizeExpr &expr);

/// The symbols of `expr`, in order, each once.
std::vector<std::string> sizeExprSymbols(const SizeExpr &expr);

/// `kernel "K" (launch I of function "F")`, as the cuda target's messages
/// name a launch.
std::string describeLaunch(const FunctionSpec &fn, size_t launch);

/// What a call of a cuda function launches, at the sizes its arguments bind.
struct LaunchPlan {
  struct Launch {
    std::array<uint32_t, 3> grid = {1, 1, 1};
    /// Per parameter: the value of a {"dim": SYM} one; 0 for the others.
    std::vector<int32_t> dims;
  };
  /// The call's bindings and, after them, the function's named sizes.
  DimBindings bindings;
  /// Per buffer of the function: its shape and its size in bytes.
  std::vector<Shape> bufferShapes;
  std::vector<size_t> bufferBytes;
  /// Per launch, in order.
  std::vector<Launch> launches;
};

/// Evaluates `fn`'s launches and buffers at `bindings`, which must bind every
/// symbol of `fn`'s arguments, into `plan` (reusing its memory, so that a
/// function called again and again allocates nothing here). Throws Error
/// naming the launch (describeLaunch) or the buffer, and leaves `plan` unfit
/// to launch with, if
///   * a named size overflows, divides by 0 or is less than 1:
///     size "S0" of function "F" = max(div(64, B*8), 1) ... is 0 with B=9;
///     a size must be at least 1
///   * a grid size overflows int64 or falls outside [1, kCudaGridLimits]:
///     kernel "K" (launch 0 of function "F"): grid y = B*16 is 70000 with
///     B=4375; CUDA allows 1 to 65535
///   * a dim parameter exceeds kMaxDimParam;
///   * a buffer would have more than kMaxElements elements.
void planLaunches(const FunctionSpec &fn, const DimBindings &bindings,
                  LaunchPlan &plan);
LaunchPlan planLaunches(const FunctionSpec &fn, const DimBindings &bindings);

/// Where a caller's workspace holds a call's scratch buffers
/// (CudaFunction::launch with a Workspace): buffer i at offset
/// workspaceOffsets(plan)[i], each offset a multiple of kWorkspaceAlignment
/// (the workspace's own address must be one too), and the workspace at least
/// workspaceBytes(plan) long (0 for a function without buffers).
constexpr size_t kWorkspaceAlignment = 256;
std::vector<size_t> workspaceOffsets(const LaunchPlan &plan);
size_t workspaceBytes(const LaunchPlan &plan);

} // namespace qattn::rt

#endif // QATTN_RUNTIME_LAUNCHPLAN_H
