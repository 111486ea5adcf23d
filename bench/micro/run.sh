#!/usr/bin/env bash
# Microbenchmarks behind docs/PERF.md's notes on the decode kernel's memory
# access and on exp2 throughput. GPU machine (nvcc, sm_90a), repo root:
#   bash bench/micro/run.sh            # all three, binaries in ${OUT:-/tmp}
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-/tmp}
for name in kv_stream kv_stream_compute ex2_throughput; do
  echo "== $name"
  nvcc -O3 -arch=sm_90a "$here/$name.cu" -o "$out/$name"
  "$out/$name"
done
