#!/usr/bin/env bash
# On the GPU machine, from the repo root: build the runtime, then run the
# benchmark compiled by bench/cases.py (carried in CASES, default
# artifacts/bench). Results, plots and logs go to $OUT when set, else
# bench-out/. Extra arguments go to run.py (--only decode, --repeat 100, ...).
# Exit 1 if the runtime does not build or a check fails.
set -uo pipefail
cases="${1:-artifacts/bench}"
out="${OUT:-bench-out}"
mkdir -p "$out"
if ! bash scripts/gpu-check/build-runtime.sh >"$out/build-runtime.log" 2>&1; then
  cat "$out/build-runtime.log"
  exit 1
fi
grep -E "^(NVIDIA|[0-9]+, )|Cuda compilation|build-runtime.sh: ok" "$out/build-runtime.log"
python3 bench/run.py "$cases" build-gpu/bin/qattn-run --out "$out" "${@:2}" 2>&1 |
  tee "$out/bench.log"
status=${PIPESTATUS[0]}
echo "bench: exit $status" | tee -a "$out/bench.log"
exit "$status"
