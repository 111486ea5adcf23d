#!/usr/bin/env bash
# On the MLIR machine, from anywhere: compiles everything the serving checks and benchmarks of
# the GPU machine run, into one folder to carry there (run-all.sh runs them in one call):
#   DIR/serving/cuda   the serving matrix (scripts/gpu-check/serving/decode.mlir)
#   DIR/balanced/cuda  the same module with balanced key chunks (qattn-tile balance-splits)
#   DIR/paged          paged_cache.py --device cuda's functions (its OUT_DIR; cache/ inside)
#   DIR/torch-check    scripts/torch-check/prepare.py's (torch op tests, the decode loop)
#   DIR/gate           bench/decode_gate.py prepare (every row; --only/--tile-options pass on)
#   DIR/e2e            bench/e2e_decode.py prepare
#   DIR/accuracy       stories260K (copied from $QATTN_DATA, default ../shared/data beside the
#                      checkout; skipped without it) and bench/accuracy/serving_path.py
#                      --precompile --against-cpu's functions, pages of 32 and 64
# Usage: prepare-all.sh DIR [decode_gate.py prepare options...]. About 1 MB a part, tens of
# seconds in all; exit 1 if a part failed (the others are still written).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
out="${1:?usage: prepare-all.sh DIR [decode_gate.py prepare options...]}"
shift
py=/usr/bin/python3
[ -x "$py" ] || py=python3
export PATH="$root/build/bin:$PATH"
status=0
part() { # name command...
  local t0=$SECONDS
  if "${@:2}" > "$out/$1.log" 2>&1; then
    echo "prepare-all: $1 ($((SECONDS - t0)) s)"
  else
    echo "prepare-all: $1 FAILED, see $out/$1.log" >&2
    tail -n 5 "$out/$1.log" >&2
    status=1
  fi
}
mkdir -p "$out"
# The serving-path accuracy schemes of the GPU run (run-all.sh's accuracy part).
ACCURACY_SCHEMES=default,bpq4,bpq3-min-mse,int8
part serving qattn-compile "$root/scripts/gpu-check/serving/decode.mlir" --target=cuda \
  -o "$out/serving/cuda"
part balanced qattn-compile "$root/scripts/gpu-check/serving/decode.mlir" --target=cuda \
  --tile-options=balance-splits=true -o "$out/balanced/cuda"
part paged "$py" "$root/test/Python/Inputs/paged_cache.py" "$out/paged" --precompile
part torch-check "$py" "$root/scripts/torch-check/prepare.py" "$out/torch-check"
part gate "$py" "$root/bench/decode_gate.py" prepare "$out/gate" "$@"
part e2e "$py" "$root/bench/e2e_decode.py" prepare "$out/e2e"
data="${QATTN_DATA:-$root/../shared/data}/stories260K"
if [ -f "$data/stories260K.bin" ]; then
  mkdir -p "$out/accuracy/stories260K" && cp "$data/stories260K.bin" "$out/accuracy/stories260K/"
  for page in 32 64; do
    part "accuracy-p$page" "$py" "$root/bench/accuracy/serving_path.py" --data "$data" \
      --page "$page" --schemes "$ACCURACY_SCHEMES" --precompile --against-cpu \
      --cache-dir "$out/accuracy/cache"
  done
else
  echo "prepare-all: accuracy skipped (no $data/stories260K.bin)"
fi
echo "prepare-all: $(du -sh "$out" | cut -f1) in $out, exit $status"
exit $status
