//===- CudaArtifact.cpp - Artifacts for target "cuda" ---------------------===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//
//
// Loads a cuda artifact's module into the primary context of one device and
// launches its kernels through the driver API (see CudaDriver.h for how the
// driver is reached). Only compiled when the runtime is built with CUDA;
// CudaDisabled.cpp stands in otherwise.
//
//===----------------------------------------------------------------------===//

#include "qattn/Runtime/CudaArtifact.h"

#include "qattn/Runtime/Error.h"
#include "qattn/Runtime/LaunchPlan.h"

#include "Checks.h"
#include "CudaDriver.h"
#include "Files.h"
#include "Sha256.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <optional>
#include <ostream>
#include <sstream>
#include <type_traits>

using namespace qattn::rt;

namespace {
const CudaDriver &driver() { return CudaDriver::get(); }

/// Throws Error if `result` is not CUDA_SUCCESS: "CALL failed CONTEXT:
/// CUDA_ERROR_X: description". `context` is a string or a callable that
/// makes one, so that hot paths build it only on failure.
template <typename Context>
void check(CUresult result, const char *call, const Context &context) {
  if (result == CUDA_SUCCESS)
    return;
  std::string where;
  if constexpr (std::is_invocable_v<Context>)
    where = context();
  else
    where = context;
  fail(call, " failed", where.empty() ? "" : " ", where, ": ",
       driver().describe(result));
}

#define QATTN_CU(context, fn, ...)                                             \
  check(driver().fn(__VA_ARGS__), #fn, context)

std::string hex(uint64_t value) {
  char text[32];
  std::snprintf(text, sizeof(text), "0x%llx", (unsigned long long)value);
  return text;
}

std::string formatDims(const std::array<uint32_t, 3> &dims) {
  return "[" + std::to_string(dims[0]) + ", " + std::to_string(dims[1]) + ", " +
         std::to_string(dims[2]) + "]";
}

/// "[B*6, 8, 1]".
std::string formatGrid(const std::array<SizeExpr, 3> &grid) {
  return "[" + formatSizeExpr(grid[0]) + ", " + formatSizeExpr(grid[1]) + ", " +
         formatSizeExpr(grid[2]) + "]";
}

//===----------------------------------------------------------------------===//
// Devices and contexts
//===----------------------------------------------------------------------===//

struct DeviceInfo {
  int ordinal = 0;
  CUdevice device = 0;
  std::string name;
  int major = 0, minor = 0;
  int sharedOptin = 0; // Most shared memory a block may opt in to.
  int multiprocessors = 0;
  size_t memory = 0;
};

int attribute(CUdevice device, CUdevice_attribute which, const char *what) {
  int value = 0;
  QATTN_CU(std::string("(") + what + ")", cuDeviceGetAttribute, &value, which,
           device);
  return value;
}

DeviceInfo queryDevice(int ordinal) {
  DeviceInfo info;
  info.ordinal = ordinal;
  QATTN_CU("", cuDeviceGet, &info.device, ordinal);
  char name[256] = {};
  QATTN_CU("", cuDeviceGetName, name, sizeof(name) - 1, info.device);
  info.name = name;
  info.major = attribute(info.device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                         "compute capability");
  info.minor = attribute(info.device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                         "compute capability");
  info.sharedOptin =
      attribute(info.device, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                "shared memory per block");
  info.multiprocessors = attribute(
      info.device, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "multiprocessors");
  QATTN_CU("", cuDeviceTotalMem, &info.memory, info.device);
  return info;
}

int deviceCount() {
  int count = 0;
  QATTN_CU("", cuDeviceGetCount, &count);
  return count;
}

/// The device's primary context (the one the CUDA runtime uses), retained
/// for the life of the artifact.
class PrimaryContext {
public:
  explicit PrimaryContext(CUdevice device) : device(device) {
    QATTN_CU("", cuDevicePrimaryCtxRetain, &context, device);
  }
  ~PrimaryContext() { driver().cuDevicePrimaryCtxRelease(device); }
  PrimaryContext(const PrimaryContext &) = delete;
  PrimaryContext &operator=(const PrimaryContext &) = delete;

  CUcontext get() const { return context; }

private:
  CUdevice device;
  CUcontext context = nullptr;
};

/// Makes `context` current for a scope, and restores the caller's after.
/// Costs nothing when it already is current (a PyTorch caller's case).
class ScopedContext {
public:
  explicit ScopedContext(CUcontext context) {
    CUcontext current = nullptr;
    QATTN_CU("", cuCtxGetCurrent, &current);
    if (current != context) {
      QATTN_CU("", cuCtxPushCurrent, context);
      pushed = true;
    }
  }
  ~ScopedContext() {
    if (pushed) {
      CUcontext popped;
      driver().cuCtxPopCurrent(&popped);
    }
  }
  ScopedContext(const ScopedContext &) = delete;
  ScopedContext &operator=(const ScopedContext &) = delete;

private:
  bool pushed = false;
};

/// Device memory, freed with its owner (while the context is current: the
/// owners are destroyed under a ScopedContext).
class DeviceMemory {
public:
  DeviceMemory(size_t bytes, const std::string &what) : bytes(bytes) {
    QATTN_CU("for " + what + " (" + std::to_string(bytes) + " bytes)",
             cuMemAlloc, &ptr, bytes);
  }
  ~DeviceMemory() {
    if (ptr)
      driver().cuMemFree(ptr);
  }
  DeviceMemory(const DeviceMemory &) = delete;
  DeviceMemory &operator=(const DeviceMemory &) = delete;

  CUdeviceptr get() const { return ptr; }
  size_t size() const { return bytes; }

private:
  CUdeviceptr ptr = 0;
  size_t bytes;
};

/// CUDA events, destroyed with their owner.
class Events {
public:
  explicit Events(size_t count) {
    events.reserve(count);
    for (size_t i = 0; i < count; ++i) {
      CUevent event;
      QATTN_CU("", cuEventCreate, &event, CU_EVENT_DEFAULT);
      events.push_back(event);
    }
  }
  ~Events() {
    for (CUevent event : events)
      driver().cuEventDestroy(event);
  }
  Events(const Events &) = delete;
  Events &operator=(const Events &) = delete;

  CUevent operator[](size_t i) const { return events[i]; }

private:
  std::vector<CUevent> events;
};

//===----------------------------------------------------------------------===//
// Chips and modules
//===----------------------------------------------------------------------===//

/// Throws Error unless code for `chip` ("sm_90a", "sm_80", "sm_100f") runs
/// on the device: an "a" chip (architecture-specific features) needs exactly
/// its compute capability, an "f" chip (family) one of the same major
/// version at least as high, a plain one any compute capability at least as
/// high (a cubin of another major version then fails to load, and the PTX is
/// JIT-compiled).
void checkChip(const Manifest &manifest, const DeviceInfo &device) {
  const std::string &chip = manifest.chip;
  char suffix = std::isdigit((unsigned char)chip.back()) ? 0 : chip.back();
  int number = std::stoi(chip.substr(3, chip.size() - 3 - (suffix ? 1 : 0)));
  int major = number / 10, minor = number % 10;
  int have = device.major * 10 + device.minor;
  bool ok = suffix == 'a'   ? have == number
            : suffix == 'f' ? device.major == major && have >= number
                            : have >= number;
  if (ok)
    return;
  std::string need = std::to_string(major) + "." + std::to_string(minor);
  const char *how = suffix == 'a'   ? "exactly "
                    : suffix == 'f' ? "at least (same major version) "
                                    : "at least ";
  fail(manifest.directory, "/manifest.json: chip ", chip,
       " needs a device of compute capability ", how, need, "; device ",
       device.ordinal, " (", device.name, ") has ", device.major, ".",
       device.minor);
}

/// What a module image holds, for messages.
const char *imageKind(const std::string &image) {
  if (image.compare(0, 4, "\x7f"
                          "ELF") == 0)
    return "cubin";
  if (image.size() >= 4 && uint8_t(image[0]) == 0x50 &&
      uint8_t(image[1]) == 0xed && uint8_t(image[2]) == 0x55 &&
      uint8_t(image[3]) == 0xba)
    return "fatbin";
  return "PTX";
}

/// Loads an image into the current context; returns nullptr and sets
/// `reason` if the driver rejects it.
CUmodule tryLoadImage(const std::string &image, std::string &reason) {
  // The JIT's error log says what is wrong with a PTX module.
  char log[8192] = {};
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER,
                            CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {log, reinterpret_cast<void *>(uintptr_t(sizeof(log) - 1))};
  CUmodule module = nullptr;
  // std::string keeps a NUL after the data, which PTX text needs.
  CUresult result =
      driver().cuModuleLoadDataEx(&module, image.c_str(), 2, options, values);
  if (result == CUDA_SUCCESS)
    return module;
  reason = "cuModuleLoadDataEx failed: " + driver().describe(result);
  std::string text(log);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
    text.pop_back();
  if (!text.empty())
    reason += "\n" + text;
  return nullptr;
}

/// The loaded module and how it was found, for reports.
struct LoadedModule {
  CUmodule module = nullptr;
  std::string file;        // The manifest's name for it.
  std::string kind;        // "cubin", "PTX", ...
  std::string fallbackWhy; // Why `library` was not used; empty if it was.
};

/// Loads the manifest's library; if that file is missing or the driver
/// rejects it for this device, its PTX instead, which the driver JITs.
LoadedModule loadModule(const Manifest &manifest, std::ostream *log) {
  LoadedModule loaded;
  std::string why;
  std::optional<std::string> image;
  try {
    image = readFile(manifest.libraryPath());
  } catch (const Error &error) {
    why = error.what();
  }
  if (image) {
    // A file that is there but not the one compiled is an error, not a
    // reason to fall back: the driver would parse whatever it holds.
    checkSha256(*image, manifest.libraryPath(), manifest.librarySha256,
                "library_sha256");
    loaded.module = tryLoadImage(*image, why);
    loaded.kind = imageKind(*image);
  }
  if (loaded.module) {
    loaded.file = manifest.library;
    if (log)
      *log << "cuda: loaded " << manifest.libraryPath() << " (" << loaded.kind
           << (loaded.kind == "PTX" ? ", compiled by the driver's JIT" : "")
           << ")\n";
    return loaded;
  }
  if (manifest.ptx.empty() || manifest.ptx == manifest.library)
    fail("cannot load the artifact's module ", manifest.libraryPath(), ": ",
         why, manifest.ptx.empty() ? " (the manifest names no ptx to fall "
                                     "back to)"
                                   : "");
  if (log)
    *log << "cuda: " << manifest.libraryPath() << " not used: " << why
         << "\ncuda: falling back to " << manifest.ptxPath()
         << " (PTX, compiled by the driver's JIT)\n";
  std::string ptxWhy;
  std::string ptxImage;
  try {
    ptxImage = readFile(manifest.ptxPath());
  } catch (const Error &error) {
    fail("cannot load the artifact's module: ", manifest.libraryPath(), ": ",
         why, "; and the fallback: ", error.what());
  }
  checkSha256(ptxImage, manifest.ptxPath(), manifest.ptxSha256, "ptx_sha256");
  loaded.module = tryLoadImage(ptxImage, ptxWhy);
  if (!loaded.module)
    fail("cannot load the artifact's module: ", manifest.libraryPath(), ": ",
         why, "; and the fallback ", manifest.ptxPath(), ": ", ptxWhy);
  loaded.file = manifest.ptx;
  loaded.kind = imageKind(ptxImage);
  loaded.fallbackWhy = why;
  if (log)
    *log << "cuda: loaded " << manifest.ptxPath() << " (" << loaded.kind
         << ")\n";
  return loaded;
}

//===----------------------------------------------------------------------===//
// Functions
//===----------------------------------------------------------------------===//

/// What every function of an artifact shares.
struct CudaState {
  DeviceInfo device;
  std::unique_ptr<PrimaryContext> context;
  CUmodule module = nullptr;
  CUstream stream = nullptr; // For the host-buffer entry points.
  std::ostream *log = nullptr;
};

/// Device memory that a function keeps from call to call: allocated when a
/// call first needs it, reallocated only when a call needs more than it has
/// (never shrunk), so that calls at sizes seen before allocate nothing.
using GrowingMemory = std::unique_ptr<DeviceMemory>;

class CudaFunctionImpl final : public CudaFunction {
public:
  CudaFunctionImpl(const FunctionSpec &spec, CudaState &state,
                   const std::map<std::string, CUfunction> &kernels)
      : CudaFunction(spec), state(state) {
    for (const LaunchSpec &launch : spec.launches)
      this->kernels.push_back(kernels.at(launch.kernel));
    // Buffers of static shape are allocated now, so that a device without
    // the memory fails the load; the others at the first call.
    size_t total = 0, symbolic = 0;
    buffers.resize(spec.buffers.size());
    for (size_t i = 0; i < spec.buffers.size(); ++i) {
      const TensorSpec &buffer = spec.buffers[i];
      if (buffer.hasSymbols()) {
        ++symbolic;
        continue;
      }
      size_t bytes =
          size_t(*numElements(buffer.shape)) * dtypeSize(buffer.dtype);
      buffers[i] = std::make_unique<DeviceMemory>(bytes, describeBuffer(i));
      total += bytes;
    }
    if (state.log && !buffers.empty())
      *state.log << "cuda: function " << spec.name << ": " << buffers.size()
                 << " scratch buffer" << (buffers.size() == 1 ? "" : "s")
                 << ", " << total << " bytes"
                 << (symbolic ? " + " + std::to_string(symbolic) +
                                    " sized by each call's symbols"
                              : "")
                 << "\n";
  }

  void launch(const std::vector<DeviceTensorRef> &args,
              const std::vector<DeviceTensorRef> &results,
              CudaStream stream) override {
    DimBindings bindings;
    std::vector<CUdeviceptr> argPtrs, resultPtrs;
    checkCall(args, results, bindings, argPtrs, resultPtrs);
    ScopedContext scope(state.context->get());
    CUstream cuStream = static_cast<CUstream>(stream);
    prepare(bindings, cuStream, true);
    enqueue(argPtrs, resultPtrs, ownBufferPtrs(), cuStream, false);
  }

  void launch(const std::vector<DeviceTensorRef> &args,
              const std::vector<DeviceTensorRef> &results, CudaStream stream,
              const Workspace &workspace) override {
    const FunctionSpec &spec = getSpec();
    DimBindings bindings;
    std::vector<CUdeviceptr> argPtrs, resultPtrs;
    checkCall(args, results, bindings, argPtrs, resultPtrs);
    planLaunches(spec, bindings, plan);
    size_t need = qattn::rt::workspaceBytes(plan);
    if (need && workspace.data == 0)
      fail("workspace of function \"", spec.name, "\": null device pointer (",
           need, " bytes needed at ", bindings.format(), ")");
    if (workspace.data % kWorkspaceAlignment)
      fail("workspace of function \"", spec.name, "\": device pointer ",
           hex(workspace.data), " is not ", kWorkspaceAlignment,
           "-byte aligned");
    if (workspace.bytes < need)
      fail("workspace of function \"", spec.name, "\": ", workspace.bytes,
           " bytes, ", need, " needed at ", bindings.format());
    std::vector<CUdeviceptr> bufferPtrs;
    for (size_t offset : workspaceOffsets(plan))
      bufferPtrs.push_back(workspace.data + offset);
    ScopedContext scope(state.context->get());
    enqueue(argPtrs, resultPtrs, bufferPtrs, static_cast<CUstream>(stream),
            false);
  }

  size_t workspaceBytes(const std::vector<Shape> &argShapes) override {
    DimBindings bindings;
    getResultShapes(getSpec(), argShapes, &bindings);
    return qattn::rt::workspaceBytes(planLaunches(getSpec(), bindings));
  }

  void reserve(const std::vector<Shape> &argShapes) override {
    DimBindings bindings;
    getResultShapes(getSpec(), argShapes, &bindings);
    ScopedContext scope(state.context->get());
    prepare(bindings, nullptr, false);
  }

  std::vector<double> time(const std::vector<Tensor> &args, unsigned warmups,
                           unsigned runs, bool coldL2) override {
    const FunctionSpec &spec = getSpec();
    checkCount("argument", spec.args.size(), args.size(), spec.name);
    DimBindings bindings;
    for (size_t i = 0; i < args.size(); ++i) {
      const Shape &shape = args[i].getShape();
      checkTensor("argument", spec.args[i], args[i].getDType(), shape.data(),
                  shape.size(), spec.name, bindings);
    }
    ScopedContext scope(state.context->get());
    stage(args, bindings);
    for (unsigned i = 0; i < warmups; ++i)
      enqueue(argPtrs(), resultPtrs(), ownBufferPtrs(), state.stream, false);
    Events events(2 * size_t(runs));
    constexpr size_t kFlushBytes = size_t(256) << 20;
    std::unique_ptr<DeviceMemory> flush;
    if (coldL2)
      flush = std::make_unique<DeviceMemory>(kFlushBytes, "the L2 flush buffer");
    for (unsigned i = 0; i < runs; ++i) {
      if (flush)
        QATTN_CU("", cuMemsetD8Async, flush->get(), static_cast<unsigned char>(i),
                 kFlushBytes, state.stream);
      QATTN_CU("", cuEventRecord, events[2 * i], state.stream);
      enqueue(argPtrs(), resultPtrs(), ownBufferPtrs(), state.stream, false);
      QATTN_CU("", cuEventRecord, events[2 * i + 1], state.stream);
    }
    synchronize();
    std::vector<double> micros;
    for (unsigned i = 0; i < runs; ++i) {
      float ms = 0;
      QATTN_CU("", cuEventElapsedTime, &ms, events[2 * i], events[2 * i + 1]);
      micros.push_back(double(ms) * 1000.0);
    }
    return micros;
  }

private:
  /// Host buffers: copy in, poison, launch, wait, copy out.
  void invoke(const std::vector<Tensor> &args, std::vector<Tensor> &results,
              const DimBindings &bindings) override {
    ScopedContext scope(state.context->get());
    stage(args, bindings);
    // With a log, wait after each kernel, so that a fault names it.
    enqueue(argPtrs(), resultPtrs(), ownBufferPtrs(), state.stream,
            state.log != nullptr);
    for (size_t i = 0; i < results.size(); ++i)
      QATTN_CU(
          [&] { return "for result \"" + getSpec().results[i].name + "\""; },
          cuMemcpyDtoHAsync, results[i].data(), resultMem[i]->get(),
          results[i].getByteSize(), state.stream);
    synchronize();
  }

  /// Checks a call's device tensors: the arguments bind the symbols in
  /// `bindings`, the results must agree; their pointers into `argPtrs` and
  /// `resultPtrs`.
  void checkCall(const std::vector<DeviceTensorRef> &args,
                 const std::vector<DeviceTensorRef> &results,
                 DimBindings &bindings, std::vector<CUdeviceptr> &argPtrs,
                 std::vector<CUdeviceptr> &resultPtrs) const {
    argPtrs = checkDevice("argument", getSpec().args, args, bindings);
    resultPtrs = checkDevice("result", getSpec().results, results, bindings);
  }

  /// Checks device tensors against `specs`, binding their symbols in
  /// `bindings`; returns their pointers.
  std::vector<CUdeviceptr>
  checkDevice(const char *kind, const std::vector<TensorSpec> &specs,
              const std::vector<DeviceTensorRef> &tensors,
              DimBindings &bindings) const {
    const std::string &name = getSpec().name;
    checkCount(kind, specs.size(), tensors.size(), name);
    std::vector<CUdeviceptr> ptrs;
    for (size_t i = 0; i < specs.size(); ++i) {
      const DeviceTensorRef &tensor = tensors[i];
      checkTensor(kind, specs[i], tensor.dtype, tensor.shape, tensor.rank, name,
                  bindings);
      if (tensor.data == 0)
        fail(kind, " \"", specs[i].name, "\" of function \"", name,
             "\": null device pointer");
      if (tensor.data % kCudaAlignment)
        fail(kind, " \"", specs[i].name, "\" of function \"", name,
             "\": device pointer ", hex(tensor.data), " is not ",
             kCudaAlignment, "-byte aligned");
      ptrs.push_back(tensor.data);
    }
    return ptrs;
  }

  std::string describeBuffer(size_t i) const {
    return "buffer \"" + getSpec().buffers[i].name + "\" of function \"" +
           getSpec().name + "\"";
  }

  /// Evaluates the launches at `bindings` into `plan` and makes each scratch
  /// buffer big enough for it: everything that can fail before a launch.
  /// `stream` is where the launches will go; with `checkCapture`, a buffer
  /// that must grow while it captures a CUDA graph is an error.
  void prepare(const DimBindings &bindings, CUstream stream,
               bool checkCapture) {
    planLaunches(getSpec(), bindings, plan);
    for (size_t i = 0; i < buffers.size(); ++i) {
      size_t had = buffers[i] ? buffers[i]->size() : 0;
      bool grew = grow(buffers[i], plan.bufferBytes[i], stream, checkCapture,
                       bindings, [&] { return describeBuffer(i); });
      if (grew && state.log)
        *state.log << "cuda: " << describeBuffer(i) << ": "
                   << plan.bufferBytes[i] << " bytes"
                   << (had ? " (grown from " + std::to_string(had) + ")" : "")
                   << " at " << bindings.format() << "\n";
    }
  }

  /// Makes `memory` hold at least `bytes`; returns whether it allocated. A
  /// reallocation first waits for the context's work, which may still use
  /// the old memory. Neither the wait nor a new address has a place in a
  /// CUDA graph being captured on `stream`, so growing then is an error.
  template <typename Describe>
  bool grow(GrowingMemory &memory, size_t bytes, CUstream stream,
            bool checkCapture, const DimBindings &bindings,
            const Describe &describe) {
    if (memory && memory->size() >= bytes)
      return false;
    size_t had = memory ? memory->size() : 0;
    if (checkCapture && isCapturing(stream))
      fail(describe(), ": needs ", bytes, " bytes at ", bindings.format(),
           had ? ", more than the " + std::to_string(had) + " it has," : "",
           " and stream ", hex(reinterpret_cast<uintptr_t>(stream)),
           " is capturing a CUDA graph, during which the runtime does not "
           "allocate: call the function at its largest sizes, or reserve "
           "them (CudaFunction::reserve, qattnRtReserve), before capturing");
    if (memory) {
      QATTN_CU([&] { return "(before growing " + describe() + ")"; },
               cuCtxSynchronize);
      memory.reset();
    }
    memory = std::make_unique<DeviceMemory>(bytes, describe());
    return true;
  }

  /// Whether `stream` is capturing a CUDA graph. A driver without
  /// cuStreamIsCapturing (older than CUDA 10.0) captures none.
  bool isCapturing(CUstream stream) const {
    if (!driver().cuStreamIsCapturing)
      return false;
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    CUresult result = driver().cuStreamIsCapturing(stream, &status);
    // The legacy stream, asked while another stream captures in global
    // mode: a capture is under way.
    if (result == CUDA_ERROR_STREAM_CAPTURE_IMPLICIT)
      return true;
    check(result, "cuStreamIsCapturing", "");
    return status != CU_STREAM_CAPTURE_STATUS_NONE;
  }

  /// Sizes the host entry points' device copies of the arguments and
  /// results for this call (allocated on first use, grown when a call is
  /// larger), copies `args` in, and fills the results and scratch buffers
  /// with 0xFF bytes, so that whatever a kernel leaves unwritten (or reads
  /// before writing) shows up as NaN.
  void stage(const std::vector<Tensor> &args, const DimBindings &bindings) {
    const FunctionSpec &spec = getSpec();
    prepare(bindings, state.stream, false);
    argMem.resize(spec.args.size());
    resultMem.resize(spec.results.size());
    resultBytes.resize(spec.results.size());
    for (size_t i = 0; i < args.size(); ++i)
      grow(argMem[i], args[i].getByteSize(), state.stream, false, bindings,
           [&] { return "argument \"" + spec.args[i].name + "\""; });
    for (size_t i = 0; i < spec.results.size(); ++i) {
      const TensorSpec &result = spec.results[i];
      Shape shape =
          resolveShape(result, bindings, "result \"" + result.name + "\"");
      resultBytes[i] = size_t(*numElements(shape)) * dtypeSize(result.dtype);
      grow(resultMem[i], resultBytes[i], state.stream, false, bindings,
           [&] { return "result \"" + result.name + "\""; });
    }
    for (size_t i = 0; i < args.size(); ++i)
      QATTN_CU([&] { return "for argument \"" + spec.args[i].name + "\""; },
               cuMemcpyHtoDAsync, argMem[i]->get(), args[i].data(),
               args[i].getByteSize(), state.stream);
    for (size_t i = 0; i < resultMem.size(); ++i)
      QATTN_CU("(poisoning a result)", cuMemsetD8Async, resultMem[i]->get(),
               0xFF, resultBytes[i], state.stream);
    for (size_t i = 0; i < buffers.size(); ++i)
      QATTN_CU("(poisoning a scratch buffer)", cuMemsetD8Async,
               buffers[i]->get(), 0xFF, plan.bufferBytes[i], state.stream);
  }

  std::vector<CUdeviceptr> argPtrs() const {
    std::vector<CUdeviceptr> ptrs;
    for (const auto &memory : argMem)
      ptrs.push_back(memory->get());
    return ptrs;
  }

  std::vector<CUdeviceptr> resultPtrs() const {
    std::vector<CUdeviceptr> ptrs;
    for (const auto &memory : resultMem)
      ptrs.push_back(memory->get());
    return ptrs;
  }

  /// The function's own scratch buffers, as sized by the last prepare().
  std::vector<CUdeviceptr> ownBufferPtrs() const {
    std::vector<CUdeviceptr> ptrs;
    for (const auto &memory : buffers)
      ptrs.push_back(memory->get());
    return ptrs;
  }

  /// Launches every kernel in order on `stream`, with the grids and sizes
  /// of the last planLaunches() (prepare()), the scratch buffers at
  /// `bufferPtrs`.
  void enqueue(const std::vector<CUdeviceptr> &args,
               const std::vector<CUdeviceptr> &results,
               const std::vector<CUdeviceptr> &bufferPtrs, CUstream stream,
               bool waitEach) {
    const FunctionSpec &spec = getSpec();
    for (size_t i = 0; i < spec.launches.size(); ++i) {
      const LaunchSpec &launch = spec.launches[i];
      LaunchPlan::Launch &planned = plan.launches[i];
      // One slot per parameter, each holding what cuLaunchKernel copies
      // from it: an 8-byte address, or (a dim) the plan's 4-byte size.
      pointers.resize(launch.params.size());
      params.resize(launch.params.size());
      for (size_t p = 0; p < launch.params.size(); ++p) {
        const LaunchParam &param = launch.params[p];
        switch (param.kind) {
        case LaunchParam::Kind::Arg:
          pointers[p] = args[param.index];
          break;
        case LaunchParam::Kind::Result:
          pointers[p] = results[param.index];
          break;
        case LaunchParam::Kind::Buffer:
          pointers[p] = bufferPtrs[param.index];
          break;
        case LaunchParam::Kind::Dim:
          params[p] = &planned.dims[p];
          continue;
        }
        params[p] = &pointers[p];
      }
      const std::array<uint32_t, 3> &grid = planned.grid;
      if (launch.early && driver().cuLaunchKernelEx) {
        // Programmatic dependent launch: the kernel may start while the
        // previous one finishes, and waits for it (griddepcontrol.wait).
        CUlaunchAttribute attr = {};
        attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        attr.value.programmaticStreamSerializationAllowed = 1;
        CUlaunchConfig config = {};
        config.gridDimX = grid[0];
        config.gridDimY = grid[1];
        config.gridDimZ = grid[2];
        config.blockDimX = launch.block[0];
        config.blockDimY = launch.block[1];
        config.blockDimZ = launch.block[2];
        config.sharedMemBytes = launch.sharedBytes;
        config.hStream = stream;
        config.attrs = &attr;
        config.numAttrs = 1;
        QATTN_CU([&] { return "for " + describeLaunch(spec, i); },
                 cuLaunchKernelEx, &config, kernels[i], params.data(), nullptr);
      } else {
        // Without the attribute the wait returns at once: stream order.
        QATTN_CU([&] { return "for " + describeLaunch(spec, i); },
                 cuLaunchKernel, kernels[i], grid[0], grid[1], grid[2],
                 launch.block[0], launch.block[1], launch.block[2],
                 launch.sharedBytes, stream, params.data(), nullptr);
      }
      if (waitEach)
        QATTN_CU([&] { return "after " + describeLaunch(spec, i); },
                 cuStreamSynchronize, stream);
    }
  }

  /// Waits for the host stream; a fault of any kernel surfaces here.
  void synchronize() {
    QATTN_CU(
        [&] {
          std::string names;
          for (const LaunchSpec &launch : getSpec().launches)
            names += (names.empty() ? "" : ", ") + launch.kernel;
          return "after function \"" + getSpec().name + "\" (kernels " + names +
                 "; run with a log, qattn-run --verbose, to wait after each)";
        },
        cuStreamSynchronize, state.stream);
  }

  CudaState &state;
  std::vector<CUfunction> kernels; // One per launch.
  std::vector<GrowingMemory> buffers;
  // The grids, dim parameters and buffer sizes of the call being made.
  LaunchPlan plan;
  // cuLaunchKernel's parameter array, and the addresses it points to.
  std::vector<CUdeviceptr> pointers;
  std::vector<void *> params;
  // Device copies for the host entry points, allocated on first use, and
  // the results' sizes in the call being made.
  std::vector<GrowingMemory> argMem, resultMem;
  std::vector<size_t> resultBytes;
};

//===----------------------------------------------------------------------===//
// Artifact
//===----------------------------------------------------------------------===//

int functionAttribute(CUfunction kernel, CUfunction_attribute which,
                      const std::string &kernelName) {
  int value = 0;
  QATTN_CU("for kernel \"" + kernelName + "\"", cuFuncGetAttribute, &value,
           which, kernel);
  return value;
}

/// How far the launch's parameters were checked against the kernel's.
enum class ParamCheck { Unknown, Passed, Exact };

/// Checks the launch's parameters against the kernel's with
/// cuFuncGetParamInfo (CUDA 12.4+ drivers): the kernel must have each of
/// them, 8 bytes like a pointer, or 4 for a dim. With `exact`, also that it
/// has no more,
/// which takes a query past its last parameter: the driver answers it with
/// an error, which compute-sanitizer reports, so only a log asks for it.
ParamCheck checkParams(CUfunction kernel, const LaunchSpec &launch,
                       const std::string &where, bool exact) {
  if (!driver().cuFuncGetParamInfo)
    return ParamCheck::Unknown;
  size_t passed = launch.params.size();
  for (size_t i = 0;; ++i) {
    if (i == passed && !exact)
      return ParamCheck::Passed;
    size_t offset = 0, size = 0;
    CUresult result = driver().cuFuncGetParamInfo(kernel, i, &offset, &size);
    // Asking past the last parameter is an invalid value.
    if (result == CUDA_ERROR_INVALID_VALUE) {
      if (i == passed)
        return ParamCheck::Exact;
      fail(where, ": the kernel takes ", i, " parameters, the launch passes ",
           passed);
    }
    if (result != CUDA_SUCCESS)
      return ParamCheck::Unknown;
    if (i >= passed && i >= 4096)
      return ParamCheck::Unknown;
    if (i >= passed)
      continue; // Counting the kernel's parameters for the message.
    bool dim = launch.params[i].kind == LaunchParam::Kind::Dim;
    size_t expected = dim ? sizeof(int32_t) : sizeof(CUdeviceptr);
    if (size != expected)
      fail(where, ": parameter ", i, " of the kernel is ", size, " bytes; ",
           dim ? "a {\"dim\": ...} parameter is a 4-byte integer"
               : "an argument, result or buffer is an 8-byte device pointer");
  }
}

class CudaArtifact : public Artifact {
public:
  CudaArtifact(Manifest manifest, const LoadOptions &options)
      : Artifact(std::move(manifest)) {
    const Manifest &m = this->manifest;
    state.log = options.log;
    const CudaDriver &d = driver();
    int count = deviceCount();
    if (count == 0)
      fail("target cuda: the CUDA driver sees no device");
    if (options.device < 0 || options.device >= count)
      fail("target cuda: no device ", options.device, " (the CUDA driver sees ",
           count, " device", count == 1 ? "" : "s", ": 0",
           count > 1 ? " to " + std::to_string(count - 1) : "", ")");
    state.device = queryDevice(options.device);
    if (state.log)
      *state.log << "cuda: driver " << formatCudaVersion(d.version) << " ("
                 << d.path << "), device " << state.device.ordinal << ": "
                 << state.device.name << ", compute capability "
                 << state.device.major << "." << state.device.minor << "\n";
    checkChip(m, state.device);

    state.context = std::make_unique<PrimaryContext>(state.device.device);
    ScopedContext scope(state.context->get());
    try {
      LoadedModule loaded = loadModule(m, state.log);
      state.module = loaded.module;
      moduleFile = loaded.file;
      moduleKind = loaded.kind;
      fallbackWhy = loaded.fallbackWhy;
      QATTN_CU("", cuStreamCreate, &state.stream, CU_STREAM_NON_BLOCKING);
      std::map<std::string, CUfunction> kernels = resolveKernels();
      for (const FunctionSpec &spec : m.functions)
        functions.push_back(
            std::make_unique<CudaFunctionImpl>(spec, state, kernels));
    } catch (...) {
      release();
      throw;
    }
  }

  ~CudaArtifact() override {
    try {
      ScopedContext scope(state.context->get());
      release();
    } catch (const Error &) {
      // The driver is shutting down; it frees everything itself.
    }
  }

  std::string describe() const override {
    std::string text = "device " + std::to_string(state.device.ordinal) + ": " +
                       state.device.name + " (compute capability " +
                       std::to_string(state.device.major) + "." +
                       std::to_string(state.device.minor) + ", CUDA driver " +
                       formatCudaVersion(driver().version) + "), module " +
                       moduleFile + " (" + moduleKind;
    if (moduleKind == "PTX")
      text += ", JIT-compiled";
    if (!fallbackWhy.empty())
      text += "; " + manifest.library + " did not load";
    return text + ")";
  }

private:
  /// Frees the functions' memory, the stream and the module; the context
  /// must be current.
  void release() {
    functions.clear();
    if (state.stream)
      driver().cuStreamDestroy(state.stream);
    if (state.module)
      driver().cuModuleUnload(state.module);
    state.stream = nullptr;
    state.module = nullptr;
  }

  /// Looks up every launch's kernel and checks the launch against it; raises
  /// the kernels' dynamic shared memory limit where a launch needs more than
  /// the default 48 KiB.
  std::map<std::string, CUfunction> resolveKernels() {
    std::map<std::string, CUfunction> kernels;
    std::map<std::string, uint32_t> maxShared;
    for (const FunctionSpec &spec : manifest.functions)
      for (size_t i = 0; i < spec.launches.size(); ++i) {
        const LaunchSpec &launch = spec.launches[i];
        std::string where = "kernel \"" + launch.kernel + "\" (launch " +
                            std::to_string(i) + " of function \"" + spec.name +
                            "\")";
        auto found = kernels.find(launch.kernel);
        if (found == kernels.end()) {
          CUfunction kernel = nullptr;
          CUresult result = driver().cuModuleGetFunction(
              &kernel, state.module, launch.kernel.c_str());
          if (result == CUDA_ERROR_NOT_FOUND)
            fail(moduleFile, ": no kernel \"", launch.kernel, "\" for launch ",
                 i, " of function \"", spec.name, "\"");
          check(result, "cuModuleGetFunction", "for " + where);
          found = kernels.emplace(launch.kernel, kernel).first;
        }
        checkLaunch(found->second, launch, where);
        uint32_t &shared = maxShared[launch.kernel];
        shared = std::max(shared, launch.sharedBytes);
      }
    for (const auto &[name, bytes] : maxShared)
      if (bytes > kDefaultSharedLimit)
        QATTN_CU("(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = " +
                     std::to_string(bytes) + ") for kernel \"" + name + "\"",
                 cuFuncSetAttribute, kernels.at(name),
                 CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, int(bytes));
    return kernels;
  }

  void checkLaunch(CUfunction kernel, const LaunchSpec &launch,
                   const std::string &where) {
    const std::string &name = launch.kernel;
    int maxThreads = functionAttribute(
        kernel, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, name);
    int registers = functionAttribute(kernel, CU_FUNC_ATTRIBUTE_NUM_REGS, name);
    int staticShared =
        functionAttribute(kernel, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, name);
    int64_t threads =
        int64_t(launch.block[0]) * launch.block[1] * launch.block[2];
    if (threads > maxThreads)
      fail(where, ": block ", formatDims(launch.block), " has ", threads,
           " threads; the kernel allows at most ", maxThreads, " (it uses ",
           registers, " registers per thread)");
    int64_t shared = int64_t(launch.sharedBytes) + staticShared;
    if (shared > state.device.sharedOptin)
      fail(where, ": needs ", launch.sharedBytes,
           " bytes of dynamic shared memory", staticShared ? " + " : "",
           staticShared ? std::to_string(staticShared) + " static" : "",
           "; device ", state.device.ordinal, " allows ",
           state.device.sharedOptin, " per block");
    ParamCheck params = checkParams(kernel, launch, where, state.log);
    if (state.log)
      *state.log << "cuda: " << where << ": grid " << formatGrid(launch.grid)
                 << ", block " << formatDims(launch.block) << ", shared "
                 << launch.sharedBytes << " B dynamic + " << staticShared
                 << " B static, " << registers << " registers, "
                 << launch.params.size() << " params"
                 << (params == ParamCheck::Exact ? " (as the kernel takes)"
                     : params == ParamCheck::Unknown
                         ? " (unchecked: the driver has no cuFuncGetParamInfo)"
                         : "")
                 << "\n";
  }

  static constexpr uint32_t kDefaultSharedLimit = 48 * 1024;

  CudaState state;
  std::string moduleFile, moduleKind, fallbackWhy;
};
} // namespace

CudaFunction::~CudaFunction() = default;

bool qattn::rt::isCudaBuilt() { return true; }

std::unique_ptr<Artifact>
qattn::rt::loadCudaArtifact(Manifest manifest, const LoadOptions &options) {
  return std::make_unique<CudaArtifact>(std::move(manifest), options);
}

std::vector<std::string> qattn::rt::describeCudaDevices() {
  const CudaDriver &d = driver();
  std::vector<std::string> lines;
  lines.push_back("CUDA driver " + formatCudaVersion(d.version) + " (" +
                  d.path + "); runtime built with CUDA " +
                  formatCudaVersion(CUDA_VERSION) + " headers");
  int count = deviceCount();
  if (count == 0)
    lines.push_back("no CUDA device");
  for (int i = 0; i < count; ++i) {
    DeviceInfo info = queryDevice(i);
    std::ostringstream os;
    os.precision(1);
    os << std::fixed << "device " << i << ": " << info.name
       << ", compute capability " << info.major << "." << info.minor << " (sm_"
       << info.major << info.minor << "), " << info.multiprocessors
       << " SMs, " << double(info.memory) / (1 << 30) << " GiB, "
       << info.sharedOptin / 1024 << " KiB shared memory per block";
    lines.push_back(os.str());
  }
  return lines;
}
