#!/usr/bin/env bash
# Builds qattn-run with the cuda target on the GPU machine (CUDA toolkit,
# cmake, ninja; no LLVM/MLIR): configures the tree with
# -DQATTN_RUNTIME_ONLY=ON -DQATTN_ENABLE_CUDA=ON into build-gpu/ (or
# $QATTN_GPU_BUILD), builds qattn-run and the runtime's C ABI for Python
# (lib/libqattn_runtime_c.so), and prints the driver and devices it
# finds. Run from anywhere; exits non-zero on any failure.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${QATTN_GPU_BUILD:-$root/build-gpu}"
cuda_home="${CUDA_HOME:-/usr/local/cuda}"
if ! command -v nvcc >/dev/null && [ -x "$cuda_home/bin/nvcc" ]; then
  export PATH="$cuda_home/bin:$PATH"
fi

echo "=== machine"
uname -srm
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=index,name,driver_version,compute_cap,memory.total --format=csv || echo "(no nvidia-smi)"
command -v nvcc >/dev/null && nvcc --version | tail -2 || echo "(no nvcc on PATH)"
cmake --version | head -1
echo "ninja $(ninja --version)"

echo "=== configure $build"
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
mkdir -p "$build"
if ! cmake "${generator[@]}" -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
    -DQATTN_RUNTIME_ONLY=ON -DQATTN_ENABLE_CUDA=ON \
    >"$build/configure.log" 2>&1; then
  cat "$build/configure.log"
  echo "build-runtime.sh: configure failed"
  exit 1
fi
grep -E "qattn runtime" "$build/configure.log"

echo "=== build qattn-run, libqattn_runtime_c.so"
cmake --build "$build" --target qattn-run qattn_runtime_c -- -j "$(nproc)"

echo "=== qattn-run --list-devices"
"$build/bin/qattn-run" --list-devices
echo "build-runtime.sh: ok ($build/bin/qattn-run)"
