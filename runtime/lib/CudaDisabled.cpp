//===- CudaDisabled.cpp - Target "cuda" in a runtime built without it -----===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//
//
// Stands in for CudaArtifact.cpp and CudaDriver.cpp when the runtime is built
// without the CUDA toolkit (QATTN_ENABLE_CUDA=OFF, or AUTO without one): the
// target is still known, so that a cuda artifact gets this explanation
// rather than "unknown target".
//
//===----------------------------------------------------------------------===//

#include "qattn/Runtime/CudaArtifact.h"

#include "qattn/Runtime/Error.h"

using namespace qattn::rt;

namespace {
constexpr const char *kNotBuilt =
    "target cuda: this qattn-run was built without CUDA (reconfigure with "
    "the CUDA toolkit installed, or -DQATTN_ENABLE_CUDA=ON)";
} // namespace

CudaFunction::~CudaFunction() = default;

bool qattn::rt::isCudaBuilt() { return false; }

std::unique_ptr<Artifact> qattn::rt::loadCudaArtifact(Manifest,
                                                      const LoadOptions &) {
  fail(kNotBuilt);
}

std::vector<std::string> qattn::rt::describeCudaDevices() { fail(kNotBuilt); }
