// Exercises CudaFunction::launch, the device-pointer entry point meant for a
// PyTorch op, the way such an op would call it: memory from the CUDA runtime
// API (cudaMalloc, so the primary context), a cudaStream_t, no driver calls
// of its own. Checks the results against the host-buffer path and the
// errors for bad pointers and signatures.
//
// usage: device_api ARTIFACT_DIR   (the selftest artifact; exit 0 = pass)
// Built by selftest.sh: nvcc -std=c++17 device_api.cu -I runtime/include
//   build-gpu/lib/libqattn_runtime.a -ldl

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
