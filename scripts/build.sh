#!/usr/bin/env bash
# Configures (once) and builds qattn incrementally into build/.
# QATTN_BUILD_DIR overrides the folder; QATTN_JOBS the parallelism.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${QATTN_BUILD_DIR:-$root/build}"
jobs="${QATTN_JOBS:-$(nproc)}"

"$root/scripts/setup.sh"
if [ ! -f "$build/build.ninja" ]; then
  mkdir -p "$build"
  cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir >"$build/configure.log" 2>&1 || {
      cat "$build/configure.log"; exit 1; }
fi
ninja -C "$build" -j "$jobs" "$@"
