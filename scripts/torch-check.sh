#!/usr/bin/env bash
# The PyTorch check on the GPU machine (CUDA toolkit, cmake, ninja, PyTorch with CUDA; no
# LLVM/MLIR), from the repository root, with the folder that
#   python3 scripts/torch-check/prepare.py artifacts/torch-check
# wrote on the MLIR machine:
#   bash scripts/torch-check.sh [artifacts/torch-check]
# Builds the runtime and its C ABI (build-gpu/), runs the torch-op tests
# (scripts/torch-check/test_ops.py) and the decode loop (examples/decode_loop.py, qattn.paged
# with the decode functions precompiled into $art/cache). Writes
# torch-check.log into $OUT when set, else into the current folder. Exit 1 on a failure.
set -uo pipefail
art="${1:-artifacts/torch-check}"
log="${OUT:-.}/torch-check.log"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
if [ ! -f "$art/model.json" ] || [ ! -f "$art/ops/manifest.json" ] || [ ! -d "$art/cache/paged" ]; then
  echo "torch-check: no artifacts in $art: run scripts/torch-check/prepare.py $art on the MLIR machine"
  exit 1
fi
bash scripts/gpu-check/build-runtime.sh 2>&1 | tee "$log"
[ "${PIPESTATUS[0]}" -eq 0 ] || exit 1
export QATTN_RUNTIME_LIB="${QATTN_GPU_BUILD:-$root/build-gpu}/lib/libqattn_runtime_c.so"
python3 -c "import torch, numpy; print('torch', torch.__version__, 'CUDA', torch.version.cuda, torch.cuda.get_device_name(0))" 2>&1 | tee -a "$log"
status=0
echo "=== torch ops" | tee -a "$log"
python3 scripts/torch-check/test_ops.py "$art" 2>&1 | tee -a "$log"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
echo "=== decode loop" | tee -a "$log"
python3 examples/decode_loop.py --artifacts "$art" 2>&1 | tee -a "$log"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
echo "torch-check: exit $status" | tee -a "$log"
exit $status
