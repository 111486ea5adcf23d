//===- CApi.cpp - C ABI of the qattn runtime -------------------------------===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//
//
// The C functions of qattn/Runtime/CApi.h over the C++ runtime. Every entry
// point catches what the runtime throws and turns it into a status and a
// per-thread message, so that no exception crosses the C boundary (a ctypes
// caller would abort on one).
//
//===----------------------------------------------------------------------===//

#include "qattn/Runtime/CApi.h"

#include "qattn/Runtime/Artifact.h"
#include "qattn/Runtime/CpuArtifact.h"
#include "qattn/Runtime/CudaArtifact.h"
#include "qattn/Runtime/Dims.h"
#include "qattn/Runtime/Error.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <iostream>
#include <memory>
#include <new>
#include <string>
#include <vector>

using namespace qattn::rt;

static_assert(QATTN_RT_F64 == int(DType::F64) && QATTN_RT_I8 == int(DType::I8),
              "QAttnRtDType follows qattn::rt::DType");

struct QAttnRtArtifact {
  std::unique_ptr<Artifact> artifact;
  std::string description;
};

namespace {
thread_local std::string lastError;

/// Runs `body`, turning what it throws into `onError` and lastError.
template <typename T, typename Body> T guarded(T onError, Body &&body) {
  lastError.clear();
  try {
    return body();
  } catch (const Error &error) {
    lastError = error.what();
  } catch (const std::bad_alloc &) {
    lastError = "out of memory";
  } catch (const std::exception &error) {
    lastError = std::string("internal error: ") + error.what();
  } catch (...) {
    lastError = "internal error: unknown exception";
  }
  return onError;
}

const FunctionSpec &functionAt(const QAttnRtArtifact *artifact,
                               int64_t index) {
  if (!artifact)
    fail("null artifact");
  const std::vector<FunctionSpec> &functions =
      artifact->artifact->getManifest().functions;
  if (index < 0 || size_t(index) >= functions.size())
    fail("no function ", index, " (the artifact has ", functions.size(), ")");
  return functions[size_t(index)];
}

const std::vector<TensorSpec> &tensorsOf(const FunctionSpec &spec,
                                         int32_t kind) {
  switch (kind) {
  case QATTN_RT_ARG:
    return spec.args;
  case QATTN_RT_RESULT:
    return spec.results;
  case QATTN_RT_BUFFER:
    return spec.buffers;
  }
  fail("unknown tensor kind ", kind);
}

const TensorSpec &tensorAt(const QAttnRtArtifact *artifact, int64_t function,
                           int32_t kind, int64_t index) {
  const std::vector<TensorSpec> &tensors =
      tensorsOf(functionAt(artifact, function), kind);
  if (index < 0 || size_t(index) >= tensors.size())
    fail("no tensor ", index, " of kind ", kind, " (there are ", tensors.size(),
         ")");
  return tensors[size_t(index)];
}

DType checkedDType(int32_t dtype, const char *what, int64_t index) {
  if (dtype < int32_t(DType::F64) || dtype > int32_t(DType::I8))
    fail(what, " ", index, ": unknown dtype code ", dtype);
  return DType(dtype);
}

void checkList(const QAttnRtTensor *tensors, int64_t count, const char *what) {
  if (count < 0 || (count > 0 && !tensors))
    fail("bad ", what, " list (", count, " entries)");
  for (int64_t i = 0; i < count; ++i)
    if (tensors[i].rank < 0 || (tensors[i].rank > 0 && !tensors[i].shape))
      fail(what, " ", i, ": bad rank ", tensors[i].rank, " or null shape");
}

/// The function's object, which refers to the artifact's manifest.
Function &functionObject(QAttnRtArtifact *artifact, int64_t index) {
  return artifact->artifact->getFunction(functionAt(artifact, index).name);
}
} // namespace

//===----------------------------------------------------------------------===//
// Artifacts and their signatures
//===----------------------------------------------------------------------===//

int qattnRtGetAbiVersion(void) { return QATTN_RT_ABI_VERSION; }

const char *qattnRtGetLastError(void) { return lastError.c_str(); }

int qattnRtIsCudaBuilt(void) { return isCudaBuilt() ? 1 : 0; }

QAttnRtArtifact *qattnRtOpen(const char *directory, int device, int verbose) {
  return guarded<QAttnRtArtifact *>(nullptr, [&] {
    if (!directory)
      fail("null artifact directory");
    LoadOptions options;
    options.device = device;
    options.log = verbose ? &std::cerr : nullptr;
    auto handle = std::make_unique<QAttnRtArtifact>();
    handle->artifact = loadArtifact(directory, options);
    handle->description = handle->artifact->describe();
    return handle.release();
  });
}

void qattnRtClose(QAttnRtArtifact *artifact) {
  guarded<int>(0, [&] {
    delete artifact;
    return 0;
  });
}

const char *qattnRtGetTarget(const QAttnRtArtifact *artifact) {
  return artifact ? artifact->artifact->getManifest().target.c_str() : "";
}

const char *qattnRtDescribe(const QAttnRtArtifact *artifact) {
  return artifact ? artifact->description.c_str() : "";
}

int64_t qattnRtGetNumFunctions(const QAttnRtArtifact *artifact) {
  return artifact ? int64_t(artifact->artifact->getManifest().functions.size())
                  : 0;
}

const char *qattnRtGetFunctionName(const QAttnRtArtifact *artifact,
                                   int64_t index) {
  return guarded<const char *>(
      nullptr, [&] { return functionAt(artifact, index).name.c_str(); });
}

int64_t qattnRtFindFunction(const QAttnRtArtifact *artifact, const char *name) {
  return guarded<int64_t>(-1, [&]() -> int64_t {
    if (!artifact || !name)
      fail("null artifact or name");
    const auto &functions = artifact->artifact->getManifest().functions;
    for (size_t i = 0; i < functions.size(); ++i)
      if (functions[i].name == name)
        return int64_t(i);
    // getFunction's message lists the functions there are.
    artifact->artifact->getFunction(name);
    fail("no function \"", name, "\"");
  });
}

int64_t qattnRtGetNumTensors(const QAttnRtArtifact *artifact, int64_t function,
                             int32_t kind) {
  return guarded<int64_t>(-1, [&] {
    return int64_t(tensorsOf(functionAt(artifact, function), kind).size());
  });
}

int qattnRtGetTensor(const QAttnRtArtifact *artifact, int64_t function,
                     int32_t kind, int64_t index, const char **name,
                     int32_t *dtype, int32_t *rank, const int64_t **shape) {
  return guarded<int>(1, [&] {
    const TensorSpec &spec = tensorAt(artifact, function, kind, index);
    if (name)
      *name = spec.name.c_str();
    if (dtype)
      *dtype = int32_t(spec.dtype);
    if (rank)
      *rank = int32_t(spec.shape.size());
    if (shape)
      *shape = spec.shape.data();
    return 0;
  });
}

const char *qattnRtGetTensorSymbol(const QAttnRtArtifact *artifact,
                                   int64_t function, int32_t kind,
                                   int64_t index, int32_t dim) {
  return guarded<const char *>(nullptr, [&] {
    const TensorSpec &spec = tensorAt(artifact, function, kind, index);
    if (dim < 0 || size_t(dim) >= spec.shape.size())
      fail("no dimension ", dim, " of \"", spec.name, "\" (its rank is ",
           spec.shape.size(), ")");
    return spec.getSymbol(size_t(dim)).c_str();
  });
}

/// The shapes of C tensors (the entry points that take shapes only).
static std::vector<Shape> shapesOf(const QAttnRtTensor *tensors, int64_t n) {
  std::vector<Shape> shapes;
  for (int64_t i = 0; i < n; ++i)
    shapes.emplace_back(tensors[i].shape, tensors[i].shape + tensors[i].rank);
  return shapes;
}

int qattnRtGetResultShapes(const QAttnRtArtifact *artifact, int64_t function,
                           const QAttnRtTensor *args, int64_t numArgs,
                           int64_t *resultShapes, int64_t numSizes) {
  return guarded<int>(1, [&] {
    const FunctionSpec &spec = functionAt(artifact, function);
    checkList(args, numArgs, "argument");
    int64_t total = 0;
    for (const TensorSpec &result : spec.results)
      total += int64_t(result.shape.size());
    if (numSizes != total || (total > 0 && !resultShapes))
      fail("function \"", spec.name, "\": its results have ", total,
           " sizes in all, got room for ", numSizes);
    std::vector<Shape> argShapes = shapesOf(args, numArgs);
    int64_t *out = resultShapes;
    for (const Shape &shape : getResultShapes(spec, argShapes))
      out = std::copy(shape.begin(), shape.end(), out);
    return 0;
  });
}

//===----------------------------------------------------------------------===//
// Running functions
//===----------------------------------------------------------------------===//

int qattnRtReserve(QAttnRtArtifact *artifact, int64_t function,
                   const QAttnRtTensor *args, int64_t numArgs) {
  return guarded<int>(1, [&] {
    Function &fn = functionObject(artifact, function);
    checkList(args, numArgs, "argument");
    std::vector<Shape> argShapes = shapesOf(args, numArgs);
    if (auto *cuda = dynamic_cast<CudaFunction *>(&fn))
      cuda->reserve(argShapes);
    else
      getResultShapes(fn.getSpec(), argShapes);
    return 0;
  });
}

/// The C tensors as device tensor references (the cuda entry points).
static void deviceTensors(const QAttnRtTensor *tensors, int64_t n,
                          const char *kind, std::vector<DeviceTensorRef> &out) {
  for (int64_t i = 0; i < n; ++i)
    out.emplace_back(DevicePtr(reinterpret_cast<uintptr_t>(tensors[i].data)),
                     checkedDType(tensors[i].dtype, kind, i), tensors[i].shape,
                     size_t(tensors[i].rank));
}

int qattnRtGetWorkspaceSize(const QAttnRtArtifact *artifact, int64_t function,
                            const QAttnRtTensor *args, int64_t numArgs,
                            int64_t *bytes) {
  return guarded<int>(1, [&] {
    Function &fn =
        functionObject(const_cast<QAttnRtArtifact *>(artifact), function);
    checkList(args, numArgs, "argument");
    if (!bytes)
      fail("qattnRtGetWorkspaceSize: null bytes pointer");
    std::vector<Shape> argShapes = shapesOf(args, numArgs);
    if (auto *cuda = dynamic_cast<CudaFunction *>(&fn)) {
      *bytes = int64_t(cuda->workspaceBytes(argShapes));
    } else {
      getResultShapes(fn.getSpec(), argShapes);
      *bytes = 0;
    }
    return 0;
  });
}

int qattnRtRunWorkspace(QAttnRtArtifact *artifact, int64_t function,
                        const QAttnRtTensor *args, int64_t numArgs,
                        const QAttnRtTensor *results, int64_t numResults,
                        void *stream, void *workspace, int64_t bytes) {
  return guarded<int>(1, [&] {
    Function &fn = functionObject(artifact, function);
    auto *cuda = dynamic_cast<CudaFunction *>(&fn);
    if (!cuda)
      return qattnRtRun(artifact, function, args, numArgs, results, numResults,
                        stream);
    if (bytes < 0)
      fail("workspace of function \"", fn.getSpec().name, "\": ", bytes,
           " bytes");
    checkList(args, numArgs, "argument");
    checkList(results, numResults, "result");
    std::vector<DeviceTensorRef> a, r;
    deviceTensors(args, numArgs, "argument", a);
    deviceTensors(results, numResults, "result", r);
    cuda->launch(a, r, stream,
                 Workspace{DevicePtr(reinterpret_cast<uintptr_t>(workspace)),
                           size_t(bytes)});
    return 0;
  });
}

int qattnRtRun(QAttnRtArtifact *artifact, int64_t function,
               const QAttnRtTensor *args, int64_t numArgs,
               const QAttnRtTensor *results, int64_t numResults,
               void *stream) {
  return guarded<int>(1, [&] {
    Function &fn = functionObject(artifact, function);
    checkList(args, numArgs, "argument");
    checkList(results, numResults, "result");
    if (auto *cpu = dynamic_cast<CpuFunction *>(&fn)) {
      if (stream)
        fail("function \"", fn.getSpec().name,
             "\" of a cpu artifact takes no stream");
      std::vector<HostTensorRef> a, r;
      for (int64_t i = 0; i < numArgs; ++i)
        a.push_back({args[i].data, checkedDType(args[i].dtype, "argument", i),
                     args[i].shape, size_t(args[i].rank)});
      for (int64_t i = 0; i < numResults; ++i)
        r.push_back({results[i].data,
                     checkedDType(results[i].dtype, "result", i),
                     results[i].shape, size_t(results[i].rank)});
      cpu->callInPlace(a, r);
      return 0;
    }
    if (auto *cuda = dynamic_cast<CudaFunction *>(&fn)) {
      std::vector<DeviceTensorRef> a, r;
      deviceTensors(args, numArgs, "argument", a);
      deviceTensors(results, numResults, "result", r);
      cuda->launch(a, r, stream);
      return 0;
    }
    fail("function \"", fn.getSpec().name, "\": target \"",
         artifact->artifact->getManifest().target,
         "\" has no in-place entry point; use qattnRtRunHost");
  });
}

int qattnRtRunHost(QAttnRtArtifact *artifact, int64_t function,
                   const QAttnRtTensor *args, int64_t numArgs,
                   const QAttnRtTensor *results, int64_t numResults) {
  return guarded<int>(1, [&] {
    Function &fn = functionObject(artifact, function);
    checkList(args, numArgs, "argument");
    checkList(results, numResults, "result");
    auto toTensor = [](const QAttnRtTensor &t, const char *what, int64_t i) {
      Tensor tensor(checkedDType(t.dtype, what, i),
                    Shape(t.shape, t.shape + t.rank));
      if (!t.data)
        fail(what, " ", i, ": null pointer");
      return tensor;
    };
    std::vector<Tensor> a, r;
    for (int64_t i = 0; i < numArgs; ++i) {
      a.push_back(toTensor(args[i], "argument", i));
      std::memcpy(a.back().data(), args[i].data, a.back().getByteSize());
    }
    for (int64_t i = 0; i < numResults; ++i)
      r.push_back(toTensor(results[i], "result", i));
    fn.call(a, r);
    for (int64_t i = 0; i < numResults; ++i)
      std::memcpy(results[i].data, r[size_t(i)].data(),
                  r[size_t(i)].getByteSize());
    return 0;
  });
}
