//===- CudaDriver.cpp - The CUDA driver API, loaded at run time -----------===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//

#include "CudaDriver.h"

#include "qattn/Runtime/Error.h"

#include <cstring>
#include <dlfcn.h>

using namespace qattn::rt;

// The symbol name of a cuda.h function: the argument is macro-expanded
// before it is stringified, so QATTN_CUDA_SYMBOL(cuMemAlloc) is
// "cuMemAlloc_v2".
#define QATTN_CUDA_STRINGIFY(name) #name
#define QATTN_CUDA_SYMBOL(name) QATTN_CUDA_STRINGIFY(name)

namespace {
constexpr const char *kLibrary = "libcuda.so.1";

/// Older names with the same prototype, for symbols that cuda.h versions
/// newer than some drivers in use (cuEventElapsedTime_v2 is CUDA 12.8).
const char *olderName(const char *symbol) {
  if (std::strcmp(symbol, "cuEventElapsedTime_v2") == 0)
    return "cuEventElapsedTime";
  return nullptr;
}

void *lookup(void *library, const char *symbol) {
  if (void *address = dlsym(library, symbol))
    return address;
  if (const char *older = olderName(symbol))
    return dlsym(library, older);
  return nullptr;
}

CudaDriver load() {
  // Never unloaded: the driver stays for the life of the process, as it
  // would if it were linked.
  void *library = dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char *reason = dlerror();
    fail("cannot load the CUDA driver: ", reason ? reason : kLibrary,
         " (target cuda needs an NVIDIA driver)");
  }
  CudaDriver driver;
#define QATTN_CUDA_RESOLVE(name)                                               \
  driver.name = reinterpret_cast<decltype(driver.name)>(                       \
      lookup(library, QATTN_CUDA_SYMBOL(name)));                               \
  if (!driver.name)                                                            \
    fail("the CUDA driver ", kLibrary, " has no ", QATTN_CUDA_SYMBOL(name),    \
         ": it is older than the CUDA ", formatCudaVersion(CUDA_VERSION),     \
         " headers this runtime was built with");
  QATTN_CUDA_REQUIRED(QATTN_CUDA_RESOLVE)
#undef QATTN_CUDA_RESOLVE
#define QATTN_CUDA_RESOLVE_OPTIONAL(name)                                      \
  driver.name = reinterpret_cast<decltype(driver.name)>(                       \
      lookup(library, QATTN_CUDA_SYMBOL(name)));
  QATTN_CUDA_OPTIONAL(QATTN_CUDA_RESOLVE_OPTIONAL)
#undef QATTN_CUDA_RESOLVE_OPTIONAL

  Dl_info info;
  driver.path = dladdr(reinterpret_cast<void *>(driver.cuInit), &info) &&
                        info.dli_fname
                    ? info.dli_fname
                    : kLibrary;
  if (CUresult result = driver.cuDriverGetVersion(&driver.version))
    fail("cuDriverGetVersion failed (", driver.path,
         "): ", driver.describe(result));
  if (CUresult result = driver.cuInit(0))
    fail("cuInit failed (CUDA driver ", formatCudaVersion(driver.version),
         ", ", driver.path, "): ", driver.describe(result));
  return driver;
}
} // namespace

const CudaDriver &CudaDriver::get() {
  static const CudaDriver driver = load();
  return driver;
}

std::string CudaDriver::describe(CUresult result) const {
  const char *name = nullptr, *text = nullptr;
  // The toolkit's link stub answers every call, this one too, with
  // CUDA_ERROR_STUB_LIBRARY.
  if (result == CUDA_ERROR_STUB_LIBRARY)
    return "CUDA_ERROR_STUB_LIBRARY: this libcuda.so.1 is the CUDA toolkit's "
           "link stub, not a driver";
  if (cuGetErrorName(result, &name) != CUDA_SUCCESS || !name)
    return "CUDA error " + std::to_string(int(result));
  if (cuGetErrorString(result, &text) != CUDA_SUCCESS || !text)
    return name;
  return std::string(name) + ": " + text;
}

std::string qattn::rt::formatCudaVersion(int version) {
  return std::to_string(version / 1000) + "." +
         std::to_string(version % 1000 / 10);
}
