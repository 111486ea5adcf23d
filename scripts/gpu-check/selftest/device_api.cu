// Exercises CudaFunction::launch, the device-pointer entry point meant for a
// PyTorch op, the way such an op would call it: memory from the CUDA runtime
// API (cudaMalloc, so the primary context), a cudaStream_t, no driver calls
// of its own. Checks the results against the host-buffer path and the
// errors for bad pointers and signatures; then symbolic sizes: one function
// at several batch sizes (grids, dim parameters, a scratch buffer that
// grows), CUDA graph capture (a growth refused, reserve() first), and the
// C ABI on a cuda artifact.
//
// usage: device_api ARTIFACT_DIR   (the selftest artifact; exit 0 = pass)
// Built by selftest.sh: nvcc -std=c++17 device_api.cu -I runtime/include
//   build-gpu/lib/libqattn_runtime.a -ldl -Lbuild-gpu/lib -lqattn_runtime_c

#include "qattn/Runtime/CApi.h"
#include "qattn/Runtime/CudaArtifact.h"
#include "qattn/Runtime/Error.h"
#include "qattn/Runtime/Random.h"

#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using namespace qattn::rt;

namespace {
int failures = 0;

void expect(bool ok, const std::string &what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAIL", what.c_str());
  failures += !ok;
}

#define CUDART(call)                                                           \
  do {                                                                         \
    cudaError_t status = (call);                                               \
    if (status != cudaSuccess) {                                               \
      std::printf("FAIL: %s: %s\n", #call, cudaGetErrorString(status));        \
      std::exit(1);                                                            \
    }                                                                          \
  } while (0)

/// A device copy of a host tensor.
DevicePtr upload(const Tensor &tensor) {
  void *ptr = nullptr;
  CUDART(cudaMalloc(&ptr, tensor.getByteSize()));
  CUDART(cudaMemcpy(ptr, tensor.data(), tensor.getByteSize(),
                    cudaMemcpyHostToDevice));
  return reinterpret_cast<DevicePtr>(ptr);
}

Tensor download(DevicePtr ptr, DType dtype, const Shape &shape) {
  Tensor tensor(dtype, shape);
  CUDART(cudaMemcpy(tensor.data(), reinterpret_cast<void *>(ptr),
                    tensor.getByteSize(), cudaMemcpyDeviceToHost));
  return tensor;
}

void release(DevicePtr ptr) { CUDART(cudaFree(reinterpret_cast<void *>(ptr))); }

bool sameBytes(const Tensor &a, const Tensor &b) {
  return a.getByteSize() == b.getByteSize() &&
         std::memcmp(a.data(), b.data(), a.getByteSize()) == 0;
}

/// Runs `body`, expecting an Error whose message contains `needle`.
template <typename Body>
void expectError(const std::string &what, const std::string &needle,
                 Body body) {
  try {
    body();
    expect(false, what + " (no error)");
  } catch (const Error &error) {
    bool ok = std::string(error.what()).find(needle) != std::string::npos;
    expect(ok, what + ": " + error.what());
  }
}
} // namespace

/// copy_dims at batch `b` through launch() on `stream`: whether y == x.
bool copyAt(CudaFunction &fn, int64_t b, cudaStream_t stream) {
  Shape shape = {b, 1000, 33};
  Tensor x = randomTensor(DType::F32, shape, Distribution::Normal, 200 + b);
  DevicePtr dx = upload(x), dy = upload(x);
  CUDART(cudaMemset(reinterpret_cast<void *>(dy), 0xFF, x.getByteSize()));
  fn.launch({{dx, DType::F32, shape}}, {{dy, DType::F32, shape}}, stream);
  CUDART(cudaStreamSynchronize(stream));
  bool same = sameBytes(download(dy, DType::F32, shape), x);
  release(dx);
  release(dy);
  return same;
}

/// grid_probe at b, n: whether every block of the grid [n, b, 2] ran, saw
/// that grid and got b and n as its parameters.
bool probeAt(CudaFunction &fn, int64_t b, int64_t n, cudaStream_t stream) {
  Shape xShape = {b, n}, idsShape = {b, 2, n, 4};
  Tensor x(DType::F32, xShape), ids(DType::I32, idsShape);
  std::memset(ids.data(), 0xFF, ids.getByteSize());
  DevicePtr dx = upload(x), dids = upload(ids);
  fn.launch({{dx, DType::F32, xShape}}, {{dids, DType::I32, idsShape}}, stream);
  CUDART(cudaStreamSynchronize(stream));
  Tensor got = download(dids, DType::I32, idsShape);
  release(dx);
  release(dids);
  const int32_t *v = static_cast<const int32_t *>(got.data());
  for (int64_t y = 0; y < b; ++y)
    for (int64_t z = 0; z < 2; ++z)
      for (int64_t i = 0; i < n; ++i) {
        const int32_t *e = v + ((y * 2 + z) * n + i) * 4;
        if (e[0] != i || e[1] != y || e[2] != z || e[3] != 1000 * b + n)
          return false;
      }
  return true;
}

/// One function at several sizes, and CUDA graph capture.
void symbolicSizes(Artifact &artifact, cudaStream_t stream) {
  auto &copy = dynamic_cast<CudaFunction &>(artifact.getFunction("copy_dims"));
  // The scratch buffer is allocated at B = 2, grows at 5, is reused at 3.
  expect(copyAt(copy, 2, stream), "copy_dims at B=2 is bit-exact");
  expect(copyAt(copy, 5, stream),
         "copy_dims at B=5 (scratch grown) is bit-exact");
  expect(copyAt(copy, 3, stream),
         "copy_dims at B=3 (scratch reused) is bit-exact");

  auto &probe =
      dynamic_cast<CudaFunction &>(artifact.getFunction("grid_probe"));
  expect(probeAt(probe, 3, 5, stream),
         "grid_probe at B=3, N=5: grid [5, 3, 2]");
  expect(probeAt(probe, 1, 70, stream),
         "grid_probe at B=1, N=70: grid [70, 1, 2]");

  // Binding errors, before anything is launched.
  Shape three = {3, 1000, 33}, four = {4, 1000, 33};
  expectError("result batch differs",
              "dimension 0 (B) is 4, but B = 3 from argument \"x\"", [&] {
                copy.launch({{256, DType::F32, three}},
                            {{256, DType::F32, four}}, stream);
              });

  // A capture that would need a bigger scratch buffer is refused, before
  // anything is captured; the capture itself stays valid.
  Shape eight = {8, 1000, 33};
  Tensor x = randomTensor(DType::F32, eight, Distribution::Normal, 300);
  DevicePtr dx = upload(x), dy = upload(x);
  CUDART(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  expectError("growing while capturing", "is capturing a CUDA graph", [&] {
    copy.launch({{dx, DType::F32, eight}}, {{dy, DType::F32, eight}}, stream);
  });
  cudaGraph_t graph = nullptr;
  CUDART(cudaStreamEndCapture(stream, &graph));
  CUDART(cudaGraphDestroy(graph));

  // Reserved first, the same launch captures, and the graph replays it.
  copy.reserve({eight});
  CUDART(cudaMemset(reinterpret_cast<void *>(dy), 0xFF, x.getByteSize()));
  CUDART(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  copy.launch({{dx, DType::F32, eight}}, {{dy, DType::F32, eight}}, stream);
  CUDART(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec = nullptr;
  CUDART(cudaGraphInstantiate(&exec, graph, 0));
  CUDART(cudaGraphLaunch(exec, stream));
  CUDART(cudaStreamSynchronize(stream));
  expect(sameBytes(download(dy, DType::F32, eight), x),
         "copy_dims at B=8 captured after reserve() replays bit-exact");
  CUDART(cudaGraphExecDestroy(exec));
  CUDART(cudaGraphDestroy(graph));
  release(dx);
  release(dy);
}

/// The C ABI on the same artifact: result shapes, reserve, in-place and host
/// runs at a symbolic size.
void cApi(const char *dir, cudaStream_t stream) {
  QAttnRtArtifact *art = qattnRtOpen(dir, 0, 0);
  expect(art != nullptr, std::string("qattnRtOpen ") + qattnRtGetLastError());
  if (!art)
    return;
  int64_t fn = qattnRtFindFunction(art, "copy_dims");
  const char *name = nullptr;
  int32_t dtype = 0, rank = 0;
  const int64_t *specShape = nullptr;
  int status = qattnRtGetTensor(art, fn, QATTN_RT_BUFFER, 0, &name, &dtype,
                                &rank, &specShape);
  const char *symbol = qattnRtGetTensorSymbol(art, fn, QATTN_RT_BUFFER, 0, 0);
  expect(status == 0 && rank == 3 && specShape[0] == -1 &&
             std::string(symbol ? symbol : "") == "B",
         "C ABI: buffer staging is [B, 1000, 33]");

  int64_t shape[3] = {6, 1000, 33}, resultShape[3] = {0, 0, 0};
  Tensor x = randomTensor(DType::F32, {6, 1000, 33}, Distribution::Normal, 400);
  QAttnRtTensor arg = {nullptr, QATTN_RT_F32, 3, shape};
  status = qattnRtGetResultShapes(art, fn, &arg, 1, resultShape, 3);
  expect(status == 0 && resultShape[0] == 6 && resultShape[1] == 1000 &&
             resultShape[2] == 33,
         "C ABI: qattnRtGetResultShapes at B=6 gives [6, 1000, 33]");
  int64_t big[3] = {12, 1000, 33};
  QAttnRtTensor bigArg = {nullptr, QATTN_RT_F32, 3, big};
  expect(qattnRtReserve(art, fn, &bigArg, 1) == 0,
         std::string("C ABI: qattnRtReserve at B=12 ") + qattnRtGetLastError());

  DevicePtr dx = upload(x), dy = upload(x);
  CUDART(cudaMemset(reinterpret_cast<void *>(dy), 0xFF, x.getByteSize()));
  QAttnRtTensor in = {reinterpret_cast<void *>(dx), QATTN_RT_F32, 3, shape};
  QAttnRtTensor out = {reinterpret_cast<void *>(dy), QATTN_RT_F32, 3,
                       resultShape};
  status = qattnRtRun(art, fn, &in, 1, &out, 1, stream);
  CUDART(cudaStreamSynchronize(stream));
  expect(status == 0 && sameBytes(download(dy, DType::F32, {6, 1000, 33}), x),
         std::string("C ABI: qattnRtRun at B=6 is bit-exact ") +
             qattnRtGetLastError());
  int64_t wrong[3] = {5, 1000, 33};
  QAttnRtTensor bad = {reinterpret_cast<void *>(dy), QATTN_RT_F32, 3, wrong};
  status = qattnRtRun(art, fn, &in, 1, &bad, 1, stream);
  expect(status == 1 && std::string(qattnRtGetLastError())
                                .find("dimension 0 (B) is 5, but B = 6") !=
                            std::string::npos,
         std::string("C ABI: a result of another batch: ") +
             qattnRtGetLastError());

  Tensor host(DType::F32, {6, 1000, 33});
  QAttnRtTensor hostIn = {x.data(), QATTN_RT_F32, 3, shape};
  QAttnRtTensor hostOut = {host.data(), QATTN_RT_F32, 3, resultShape};
  status = qattnRtRunHost(art, fn, &hostIn, 1, &hostOut, 1);
  expect(status == 0 && sameBytes(host, x),
         std::string("C ABI: qattnRtRunHost at B=6 is bit-exact ") +
             qattnRtGetLastError());
  release(dx);
  release(dy);
  qattnRtClose(art);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: device_api ARTIFACT_DIR\n");
    return 2;
  }
  try {
    // The CUDA runtime first, as in PyTorch: it owns the primary context.
    CUDART(cudaSetDevice(0));
    cudaStream_t stream;
    CUDART(cudaStreamCreate(&stream));
    std::unique_ptr<Artifact> artifact = loadArtifact(argv[1]);

    // copy on device pointers: bit-exact.
    auto &copy = dynamic_cast<CudaFunction &>(artifact->getFunction("copy"));
    Shape shape = copy.getSpec().args[0].shape;
    Tensor x = randomTensor(DType::F32, shape, Distribution::Normal, 7);
    DevicePtr dx = upload(x);
    Tensor poison(DType::F32, shape);
    std::memset(poison.data(), 0xFF, poison.getByteSize());
    DevicePtr dy = upload(poison);
    copy.launch({{dx, DType::F32, shape}}, {{dy, DType::F32, shape}}, stream);
    CUDART(cudaStreamSynchronize(stream));
    expect(sameBytes(download(dy, DType::F32, shape), x),
           "copy through launch() on a cudaStream_t is bit-exact");

    // The legacy default stream.
    CUDART(cudaMemset(reinterpret_cast<void *>(dy), 0xFF, x.getByteSize()));
    copy.launch({{dx, DType::F32, shape}}, {{dy, DType::F32, shape}}, nullptr);
    CUDART(cudaDeviceSynchronize());
    expect(sameBytes(download(dy, DType::F32, shape), x),
           "copy through launch() on the default stream is bit-exact");

    // attention on device pointers equals the host-buffer path bit for bit
    // (same kernels, same data).
    Function &attention = artifact->getFunction("attention");
    const FunctionSpec &spec = attention.getSpec();
    std::vector<Tensor> args;
    std::vector<DeviceTensorRef> dargs;
    for (size_t i = 0; i < spec.args.size(); ++i) {
      args.push_back(randomTensor(DType::F32, spec.args[i].shape,
                                  Distribution::Normal, 100 + i));
      dargs.emplace_back(upload(args.back()), DType::F32, spec.args[i].shape);
    }
    const TensorSpec &outSpec = spec.results[0];
    std::vector<Tensor> hostOut = {Tensor(DType::F32, outSpec.shape)};
    attention.call(args, hostOut);
    DevicePtr dout = upload(hostOut[0]);
    CUDART(cudaMemset(reinterpret_cast<void *>(dout), 0xFF,
                      hostOut[0].getByteSize()));
    dynamic_cast<CudaFunction &>(attention)
        .launch(dargs, {{dout, DType::F32, outSpec.shape}}, stream);
    CUDART(cudaStreamSynchronize(stream));
    expect(sameBytes(download(dout, DType::F32, outSpec.shape), hostOut[0]),
           "attention through launch() equals call() bit for bit");

    // Errors, before anything is launched.
    DeviceTensorRef in{dx, DType::F32, shape}, out{dy, DType::F32, shape};
    expectError("misaligned result", "is not 16-byte aligned", [&] {
      copy.launch({in}, {{dy + 4, DType::F32, shape}}, stream);
    });
    expectError("null argument", "null device pointer", [&] {
      copy.launch({{0, DType::F32, shape}}, {out}, stream);
    });
    expectError("wrong dtype", "expected f32 [4, 1000, 33], got f16", [&] {
      copy.launch({{dx, DType::F16, shape}}, {out}, stream);
    });
    Shape wrong = {4, 1000, 32};
    expectError("wrong shape", "got f32 [4, 1000, 32]", [&] {
      copy.launch({in}, {{dy, DType::F32, wrong}}, stream);
    });
    expectError("missing result", "takes 1 results, got 0",
                [&] { copy.launch({in}, {}, stream); });

    symbolicSizes(*artifact, stream);
    cApi(argv[1], stream);

    // The CUDA runtime is unaffected: no pending error, and its memory and
    // context outlive the artifact.
    expect(cudaGetLastError() == cudaSuccess, "no CUDA runtime error pending");
    artifact.reset();
    CUDART(cudaMemset(reinterpret_cast<void *>(dy), 0, x.getByteSize()));
    CUDART(cudaDeviceSynchronize());
    CUDART(cudaFree(reinterpret_cast<void *>(dy)));
    expect(true, "the CUDA runtime works after the artifact is destroyed");
  } catch (const std::exception &error) {
    std::printf("FAIL: %s\n", error.what());
    return 1;
  }
  std::printf("%s\n", failures ? "device_api: FAILED" : "device_api: passed");
  return failures ? 1 : 0;
}
