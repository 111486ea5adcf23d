#!/usr/bin/env bash
# On the GPU machine, from anywhere: builds the runtime and runs, from the folder that
# prepare-all.sh wrote on the MLIR machine, the serving checks and benchmarks in one go, each
# under a time limit, then prints a summary line per part:
#   serving     the serving matrix against the NumPy model (serving.py; --sanitize: the
#               first batch of each function under compute-sanitizer memcheck and racecheck)
#   balanced    the same with balanced key chunks (prepare-all's DIR/balanced)
#   paged       test/Python/Inputs/paged_cache.py --device cuda (appends bit-exact, decode,
#               CUDA graphs with slots leaving and joining, torch.compile, errors)
#   append      append_check.py --only default (Triton against torch-ops appends, timing)
#   torch       scripts/torch-check.sh (op tests, the decode loop)
#   gate        bench/decode_gate.py run (the speed gate against the static kernel)
#   e2e         bench/e2e_decode.py run --only $E2E_ONLY --contexts $E2E_CONTEXTS (default B8,B32
#               and 4096,32768: about 160 s; all of PERF.md's rows are E2E_ONLY=B8,B32,varlen
#               E2E_CONTEXTS=4096,16384,32768,65536, several minutes: a call of its own)
#   accuracy    bench/accuracy/serving_path.py --device cuda --against-cpu, pages of 32 and 64
#               (stories260K through the serving API on the GPU, against the float model and
#               the CPU specification; needs prepare-all's DIR/accuracy); fails where a decode
#               call's output differs from the specification's on the same cache by more than
#               ATTN_TOLERANCE of the largest |o| (f16 queries and probabilities on the GPU)
# Usage: run-all.sh DIR [--sanitize] [PART...] (default: all parts, in that order). The whole
# run keeps within RUN_ALL_SECONDS (default 540, under the device tool's 10 minutes a command):
# a part is cut at what is left of it, and none starts with less than a minute left. serving,
# paged, append and torch took about 7 minutes together on the H200 (run one by one); the gate
# and e2e take minutes each: split the parts over two calls, e.g. `serving paged append torch`,
# then `gate e2e`. Logs go to DIR/logs; with $OUT set (the device tool's folder) also as one
# run-all-logs.tgz there, with gate.json and e2e.json. Exit 1 if a part failed, timed out or
# was skipped.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
art="$(cd "${1:?usage: run-all.sh DIR [PART...]}" && pwd)"
shift
parts=("$@")
sanitize=--no-sanitize
if [ "${parts[0]:-}" = --sanitize ]; then sanitize=; parts=("${parts[@]:1}"); fi
all=(serving balanced paged append torch gate e2e accuracy)
[ ${#parts[@]} -gt 0 ] || parts=("${all[@]}")
for p in "${parts[@]}"; do
  [[ " ${all[*]} " == *" $p "* ]] || {
    echo "run-all: unknown part '$p' (parts: ${all[*]})" >&2; exit 2; }
done
logs="$art/logs"
budget="${RUN_ALL_SECONDS:-540}"
rm -rf "$logs" && mkdir -p "$logs"
export PYTHONUNBUFFERED=1
cd "$root"
bash scripts/gpu-check/build-runtime.sh > "$logs/build.log" 2>&1 || {
  tail -n 20 "$logs/build.log"; exit 1; }
export QATTN_RUNTIME_LIB="$root/build-gpu/lib/libqattn_runtime_c.so"
run="$root/build-gpu/bin/qattn-run"
summary=() status=0
# Measured 0.00075-0.0014 on the H200 (docs/ACCURACY.md); f16 rounding's 2^-11 is 0.0005.
ATTN_TOLERANCE=0.004
part() { # name seconds command...
  local t0=$SECONDS rc left=$((budget - SECONDS))
  if [ "$left" -lt 60 ]; then
    summary+=("$(printf '%-8s skipped: %d s of the budget left' "$1" "$left")")
    status=1
    return
  fi
  echo "=== run-all: $1"
  timeout "$(( $2 < left ? $2 : left ))" "${@:3}" > "$logs/$1.log" 2>&1
  rc=$?
  tail -n 8 "$logs/$1.log"
  summary+=("$(printf '%-8s exit %-3s %4d s' "$1" "$rc" $((SECONDS - t0)))")
  [ "$rc" -eq 0 ] || status=1
}
for p in "${parts[@]}"; do
  case "$p" in
    serving) part serving 400 python3 scripts/gpu-check/serving/serving.py "$art/serving/cuda" \
               "$run" /tmp/run-all-serving $sanitize ;;
    balanced) part balanced 400 python3 scripts/gpu-check/serving/serving.py \
               "$art/balanced/cuda" "$run" /tmp/run-all-balanced $sanitize ;;
    paged) part paged 400 python3 test/Python/Inputs/paged_cache.py "$art/paged" --device cuda ;;
    append) part append 300 python3 scripts/gpu-check/serving/append_check.py --only default ;;
    torch) part torch 300 bash scripts/torch-check.sh "$art/torch-check" ;;
    gate) part gate 500 python3 bench/decode_gate.py run "$art/gate" "$run" /tmp/run-all-gate ;;
    e2e) part e2e 500 python3 bench/e2e_decode.py run "$art/e2e" --only "${E2E_ONLY:-B8,B32}" \
           --contexts "${E2E_CONTEXTS:-4096,32768}" --json "$logs/e2e.json" ;;
    accuracy) part accuracy 420 bash -c 'for page in 32 64; do
           python3 bench/accuracy/serving_path.py --data "$1/accuracy/stories260K" \
             --device cuda --page $page --schemes default,bpq4,bpq3-min-mse,int8 \
             --against-cpu --cache-dir "$1/accuracy/cache" --expect "default.attn_diff<=$2" \
             --expect "bpq4.attn_diff<=$2" --expect "bpq3-min-mse.attn_diff<=$2" \
             --expect "int8.attn_diff<=$2" || exit 1
           done' accuracy "$art" "$ATTN_TOLERANCE" ;;
  esac
done
[ -f /tmp/run-all-gate/gate.json ] && cp /tmp/run-all-gate/gate.json "$logs/gate.json"
if [ -n "${OUT:-}" ]; then
  tar czf "$OUT/run-all-logs.tgz" -C "$logs" .
  for f in gate.json e2e.json; do [ -f "$logs/$f" ] && cp "$logs/$f" "$OUT/"; done
fi
echo "=== run-all summary (logs in $logs)"
printf '%s\n' "${summary[@]}"
exit $status
