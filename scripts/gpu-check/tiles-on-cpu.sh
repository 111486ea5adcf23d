#!/usr/bin/env bash
# On the MLIR machine: each case of a folder cases.py wrote (run it with --only decode) whose
# GPU module the tile layer takes (qattn-tile's default: static decode its GPU lowering
# covers), lowered through the tile ops' reference semantics to the CPU and run against the
# case's CPU reference `attention` on the operands its `quantize` makes from fresh floats
# (check.py's distributions): the static matrix's GPU programs, checked on the CPU before the
# H200 runs them (run.sh). Bound: check.py's, max |tiles - reference| / max |reference| <=
# 2e-4 (f32 out), 2e-3 (f16), 1e-2 (bf16). Cases the tile layer does not take are listed, not
# run. TILE_OPTIONS are more qattn-tile options, after each case's own (cases.py's
# tile_options), e.g. tile-keys=16.
# Exit 1 on a failure.
# usage: tiles-on-cpu.sh CASES_DIR [SEED [TILE_OPTIONS]]
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cases="${1:?usage: tiles-on-cpu.sh CASES_DIR [SEED [TILE_OPTIONS]]}" seed="${2:-7}"
bin="$root/build/bin" py=/usr/bin/python3
[ -x "$py" ] || py=python3
[ -f "$cases/cases.json" ] || {
  echo "tiles-on-cpu: no $cases/cases.json (scripts/gpu-check/cases.py DIR writes it)" >&2; exit 1; }
[ -x "$bin/qattn-opt" ] || { echo "tiles-on-cpu: no $bin/qattn-opt (scripts/build.sh)" >&2; exit 1; }
status=0 passed=0 skipped=()
names=$("$py" -c "import json,sys; print(' '.join(c['name'] for c in json.load(open(sys.argv[1]))
                   if c['cpu_reference']))" "$cases/cases.json") || exit 1
for c in $names; do
  dir="$cases/$c" work="$cases/$c/tiles-on-cpu"
  rm -rf "$work" && mkdir -p "$work"
  options=$("$py" -c "import json,sys; c=next(x for x in json.load(open(sys.argv[1]))
                        if x['name'] == sys.argv[2]); print(' '.join(o for o in
                        (c.get('tile_options', ''), sys.argv[3]) if o))" "$cases/cases.json" "$c" "${3:-}")
  "$bin/qattn-opt" "$dir/gpu.mlir" "--qattn-tile${options:+=$options}" --qattn-pipeline \
    -o "$work/tiled.mlir" || { echo "$c: qattn-opt failed"; status=1; continue; }
  if ! grep -q "qattn.load_kv_tile" "$work/tiled.mlir"; then skipped+=("$c"); continue; fi
  read -r out dist operands < <("$py" -c "import json,sys; c=next(x for x in json.load(open(sys.argv[1]))
                                  if x['name'] == sys.argv[2]); print(c['out'], c['dist'], ' '.join(c['operands']))" \
                                "$cases/cases.json" "$c")
  random=(--dist normal); [ "$dist" = outlier ] && random+=(--random k=outlier)
  inputs=(); for n in $operands; do inputs+=(--input "$n=$work/run/$n.npy"); done
  if ! { "$bin/qattn-compile" "$work/tiled.mlir" -o "$work/cpu" > /dev/null &&
         "$bin/qattn-run" "$dir/cpu" --function quantize --seed "$seed" "${random[@]}" \
           --output-dir "$work/run" --quiet &&
         "$bin/qattn-run" "$dir/cpu" --function attention --output-dir "$work/ref" --quiet \
           "${inputs[@]}" &&
         "$bin/qattn-run" "$work/cpu" --function attention --output-dir "$work/tiles" --quiet \
           "${inputs[@]}"; }; then
    echo "$c: FAIL (compile or run)"; status=1; continue
  fi
  if "$py" - "$root/scripts/gpu-check" "$work" "$out" "$c" <<'PY'
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
from check import TOLERANCE, load, rel  # noqa: E402  (check.py's bounds and bf16 reading)
work, out, name = sys.argv[2:]
ref, tiles = load(f"{work}/ref/out.npy", out), load(f"{work}/tiles/out.npy", out)
err, bound = rel(tiles, ref), TOLERANCE[out]
ok = bool(np.isfinite(tiles).all() and err <= bound)
print(f"{name}: {'ok' if ok else 'FAIL'} (max err {err:.2e} of max |ref|, bound {bound:.0e})")
sys.exit(0 if ok else 1)
PY
  then passed=$((passed + 1)); else status=1; fi
done
echo "tiles-on-cpu: $passed passed (seed $seed)${skipped:+, not on the tile layer: ${skipped[*]}}, exit $status"
exit $status
