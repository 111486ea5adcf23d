#!/usr/bin/env bash
# On the GPU machine, from the repo root: build the runtime, run the case
# matrix compiled by cases.py (carried in CASES, default artifacts/gpu-check),
# and compute-sanitizer (memcheck, racecheck) on a small decode and a small
# prefill case. Writes gpu-check.log into $OUT when set. Exit 1 on a failure.
set -uo pipefail
cases="${1:-artifacts/gpu-check}"
log="${OUT:-.}/gpu-check.log"
bash scripts/gpu-check/build-runtime.sh || exit 1
run=build-gpu/bin/qattn-run
status=0
python3 scripts/gpu-check/check.py "$cases" "$run" "${@:2}" 2>&1 | tee "$log"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1

sanitize() { # case tool
  local dir="$cases/$1" inputs=()
  for n in $(python3 -c "import json,sys; print(' '.join(next(c for c in json.load(open('$cases/cases.json')) if c['name']=='$1')['operands']))"); do
    inputs+=(--input "$n=$dir/run/$n.npy")
  done
  echo "== compute-sanitizer --tool $2 on $1" | tee -a "$log"
  compute-sanitizer --tool "$2" --error-exitcode 9 "$run" "$dir/cuda" \
    --function attention "${inputs[@]}" --quiet 2>&1 | tail -n 4 | tee -a "$log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
}
for c in decode_with_buffer decode_b2_h32x8_d128_n1000_4bit decode_group8_block8_d128 \
    decode_d96_4bit_buffer decode_d192_4bit_buffer decode_d256_4bit_buffer \
    decode_d80_4bit_buffer decode_d80_3bit_msb_buffer decode_int8_kv_token_d128 \
    prefill_n300_causal_d64; do
  [ -d "$cases/$c/run" ] || continue
  sanitize "$c" memcheck
  sanitize "$c" racecheck
done
echo "gpu-check: exit $status" | tee -a "$log"
exit $status
