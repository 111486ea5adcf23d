//===- CudaDriver.h - The CUDA driver API, loaded at run time ---*- C++ -*-===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//
//
// The few driver API functions the cuda target uses, resolved with dlsym
// from libcuda.so.1 on first use instead of linked: the runtime then starts
// on machines without an NVIDIA driver (CI, build machines) and fails only
// when a cuda artifact is loaded there.
//
// cuda.h maps many names to versioned symbols (cuMemAlloc -> cuMemAlloc_v2,
// cuEventElapsedTime -> cuEventElapsedTime_v2, ...) that match the
// prototypes it declares. Each entry below is named and typed through those
// macros, so it is resolved by the same symbol that linking against
// libcuda.so would use, with the prototype the header declares for it.
//
// Only compiled when the runtime is built with CUDA (QATTN_ENABLE_CUDA).
//
//===----------------------------------------------------------------------===//

#ifndef QATTN_RUNTIME_LIB_CUDADRIVER_H
#define QATTN_RUNTIME_LIB_CUDADRIVER_H

#include <cuda.h>

#include <string>

namespace qattn::rt {

// X(name) for every function the runtime needs; the driver must have all.
#define QATTN_CUDA_REQUIRED(X)                                                 \
  X(cuInit)                                                                    \
  X(cuDriverGetVersion)                                                        \
  X(cuGetErrorName)                                                            \
  X(cuGetErrorString)                                                          \
  X(cuDeviceGetCount)                                                          \
  X(cuDeviceGet)                                                               \
  X(cuDeviceGetName)                                                           \
  X(cuDeviceGetAttribute)                                                      \
  X(cuDeviceTotalMem)                                                          \
  X(cuDevicePrimaryCtxRetain)                                                  \
  X(cuDevicePrimaryCtxRelease)                                                 \
  X(cuCtxGetCurrent)                                                           \
  X(cuCtxPushCurrent)                                                          \
  X(cuCtxPopCurrent)                                                           \
  X(cuCtxSynchronize)                                                          \
  X(cuModuleLoadDataEx)                                                        \
  X(cuModuleUnload)                                                            \
  X(cuModuleGetFunction)                                                       \
  X(cuFuncGetAttribute)                                                        \
  X(cuFuncSetAttribute)                                                        \
  X(cuLaunchKernel)                                                            \
  X(cuMemAlloc)                                                                \
  X(cuMemFree)                                                                 \
  X(cuMemcpyHtoDAsync)                                                         \
  X(cuMemcpyDtoHAsync)                                                         \
  X(cuMemsetD8Async)                                                           \
  X(cuStreamCreate)                                                            \
  X(cuStreamDestroy)                                                           \
  X(cuStreamSynchronize)                                                       \
  X(cuEventCreate)                                                             \
  X(cuEventDestroy)                                                            \
  X(cuEventRecord)                                                             \
  X(cuEventElapsedTime)

// X(name) for functions used when present (newer drivers only).
#define QATTN_CUDA_OPTIONAL(X)                                                 \
  X(cuFuncGetParamInfo)  /* CUDA 12.4 */                                       \
  X(cuLaunchKernelEx)    /* CUDA 12.0: early launches */                       \
  X(cuStreamIsCapturing) /* CUDA 10.0: graph capture */

/// The driver's entry points. Members are named like the cuda.h functions
/// (through its macros), so `driver.cuMemAlloc(...)` reads like a call of
/// the linked API.
struct CudaDriver {
#define QATTN_CUDA_DECLARE(name) decltype(&::name) name = nullptr;
  QATTN_CUDA_REQUIRED(QATTN_CUDA_DECLARE)
  QATTN_CUDA_OPTIONAL(QATTN_CUDA_DECLARE)
#undef QATTN_CUDA_DECLARE

  /// Where libcuda.so.1 was found, and its cuDriverGetVersion (e.g. 13000).
  std::string path;
  int version = 0;

  /// The driver, loaded and cuInit-ed on first use. Throws Error if
  /// libcuda.so.1 cannot be loaded, lacks a required function, or cuInit
  /// fails (no device, driver/kernel module mismatch, ...); a later call
  /// tries again.
  static const CudaDriver &get();

  /// "CUDA_ERROR_X: description" for a result code.
  std::string describe(CUresult result) const;
};

/// "13.0" for 13000.
std::string formatCudaVersion(int version);

} // namespace qattn::rt

#endif // QATTN_RUNTIME_LIB_CUDADRIVER_H
