//===- CudaArtifact.h - Artifacts for target "cuda" -------------*- C++ -*-===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//
//
// Target "cuda" (docs/ARTIFACT.md): a cubin or PTX module whose kernels each
// manifest function launches in order, with the device addresses of its
// arguments, results and scratch buffers as parameters.
//
// The runtime talks to the CUDA driver API only, and loads the driver
// (libcuda.so.1) with dlopen when the first cuda artifact is loaded: a
// runtime built with CUDA still starts, and runs cpu artifacts, on a machine
// without a driver. This header needs no CUDA header: device pointers are
// CUdeviceptr values and streams CUstream (= cudaStream_t) handles, passed
// as integers and opaque pointers.
//
//===----------------------------------------------------------------------===//

#ifndef QATTN_RUNTIME_CUDAARTIFACT_H
#define QATTN_RUNTIME_CUDAARTIFACT_H

#include "qattn/Runtime/Artifact.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace qattn::rt {

/// A device address, as the driver API's CUdeviceptr.
using DevicePtr = uint64_t;
/// A CUstream, which is also a cudaStream_t; nullptr is the legacy default
/// stream.
using CudaStream = void *;

/// Buffers handed to a cuda function must be aligned to this many bytes
/// (cuMemAlloc and PyTorch's allocator give 256 or more).
constexpr uint64_t kCudaAlignment = 16;

/// A tensor in device memory, for CudaFunction::launch. It does not own the
/// memory or the shape: shape[0..rank) must stay valid during the call.
struct DeviceTensorRef {
  DevicePtr data = 0;
  DType dtype = DType::F32;
  const int64_t *shape = nullptr;
  size_t rank = 0;

  DeviceTensorRef() = default;
  DeviceTensorRef(DevicePtr data, DType dtype, const Shape &shape)
      : data(data), dtype(dtype), shape(shape.data()), rank(shape.size()) {}
  DeviceTensorRef(DevicePtr data, DType dtype, const int64_t *shape,
                  size_t rank)
      : data(data), dtype(dtype), shape(shape), rank(rank) {}
};

/// Device memory a caller lends one call for its scratch buffers
/// (LaunchPlan.h: workspaceOffsets, workspaceBytes).
struct Workspace {
  DevicePtr data = 0;
  size_t bytes = 0;
};

/// A function of a cuda artifact. Function::call is the host-buffer
/// convenience: it copies the arguments to device memory, fills the results'
/// device memory (and the scratch buffers) with 0xFF bytes (NaN for floats),
/// launches, waits, and copies the results back.
///
/// The device memory of the manifest's `buffers` belongs to the function
/// object and is shared by its calls: do not run one object on two streams
/// at once. A buffer of static shape is allocated when the artifact loads.
/// One whose shape has symbols is allocated at the first call, at that
/// call's sizes, and kept: a later call that needs more waits for the
/// context's pending work (cuCtxSynchronize), frees it and allocates the
/// new size; a call that needs no more allocates nothing. While the
/// launch's stream captures a CUDA graph, such a growth is an error: call
/// the function, or reserve(), at the largest sizes before capturing. A
/// graph holds the buffers' addresses, so one captured before a growth must
/// not be replayed after it.
class CudaFunction : public Function {
public:
  ~CudaFunction() override;

  /// Enqueues the function's launches on `stream` and returns without
  /// waiting: the entry point for callers that hold device memory (a
  /// PyTorch op). Checks the tensors' count, dtypes and shapes against the
  /// manifest, and that every pointer is non-null and kCudaAlignment-aligned;
  /// throws Error before launching anything if one is wrong. The pointers
  /// must be device memory of the artifact's device, the stream one of its
  /// primary context (the one the CUDA runtime and PyTorch use). Errors that
  /// a kernel hits while running surface at the caller's next
  /// synchronization, as with any CUDA launch. The arguments bind the
  /// symbols of the manifest's shapes, which size the grids, the dim
  /// parameters and the scratch buffers (qattn/Runtime/LaunchPlan.h).
  virtual void launch(const std::vector<DeviceTensorRef> &args,
                      const std::vector<DeviceTensorRef> &results,
                      CudaStream stream) = 0;

  /// launch() with the scratch buffers in `workspace` instead of the
  /// function's own: nothing is allocated, and calls with distinct
  /// workspaces may run on different streams at once (FlashInfer's
  /// `workspace` habit). Throws Error before launching if `workspace` is null
  /// (where the function has buffers), misaligned (kWorkspaceAlignment) or
  /// shorter than workspaceBytes() at these sizes.
  virtual void launch(const std::vector<DeviceTensorRef> &args,
                      const std::vector<DeviceTensorRef> &results,
                      CudaStream stream, const Workspace &workspace) = 0;

  /// The workspace a call with arguments of shapes `argShapes` needs. Throws
  /// Error as launch() would on the shapes.
  virtual size_t workspaceBytes(const std::vector<Shape> &argShapes) = 0;

  /// Sizes the scratch buffers for arguments of shapes `argShapes` (which
  /// bind the symbols as a call would), growing them where they are
  /// smaller, so that no later call at these sizes or smaller allocates:
  /// before capturing a CUDA graph. Launches nothing. Throws Error as
  /// launch() would on the shapes.
  virtual void reserve(const std::vector<Shape> &argShapes) = 0;

  /// Times the function: copies `args` to device memory, poisons the
  /// results as call() does, runs it `warmups` times, then `runs` times,
  /// each run between two CUDA events on the function's own stream, with no
  /// host synchronization in between. Returns the `runs` event times in
  /// microseconds, in order. The results stay on the device. With
  /// `coldL2`, a 256 MiB memset (outside the events) precedes every run, so
  /// no operand is still in the L2 cache (H100/H200: 50/60 MB).
  virtual std::vector<double> time(const std::vector<Tensor> &args,
                                   unsigned warmups, unsigned runs,
                                   bool coldL2 = false) = 0;

protected:
  using Function::Function;
};

/// Loads a cuda artifact on device `options.device`: loads the driver,
/// checks the device against the manifest's chip, loads the module (the
/// cubin, else the manifest's PTX through the driver's JIT), resolves every
/// kernel, checks each launch against the kernel's limits and allocates the
/// scratch buffers. Throws Error saying what failed; in a runtime built
/// without CUDA, that "this qattn-run was built without CUDA".
std::unique_ptr<Artifact> loadCudaArtifact(Manifest manifest,
                                           const LoadOptions &options);

/// Whether this runtime was built with the cuda target.
bool isCudaBuilt();

/// Lines describing the CUDA driver and each device ("device 0: NVIDIA H200,
/// compute capability 9.0, ..."). Throws Error if the runtime was built
/// without CUDA or the driver cannot be loaded or initialized.
std::vector<std::string> describeCudaDevices();

} // namespace qattn::rt

#endif // QATTN_RUNTIME_CUDAARTIFACT_H
