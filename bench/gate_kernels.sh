#!/usr/bin/env bash
# On the GPU machine: each kernel's duration (Nsight Compute, one launch of
# each) in the static and serving runs of decode_gate.py rows, whose
# operands `decode_gate.py run ... --keep` left in WORK.
#   bash bench/gate_kernels.sh OUT WORK ROW... > kernels.txt
set -euo pipefail
out=$1 work=$2; shift 2
run=${QATTN_GPU_BUILD:-build-gpu}/bin/qattn-run
plan="$out/plan.json"
for row in "$@"; do
  for side in static serving; do
    read -r art fn < <(python3 - "$plan" "$row" "$side" <<'PY'
import json, sys
plan, row, side = sys.argv[1:]
r = next(x for x in json.load(open(plan))["rows"] if x["name"] == row)
print(r[side]["artifact"], r[side]["function"])
PY
)
    inputs=()
    for f in "$work/$row/${side}_"*.npy; do
      n=$(basename "$f" .npy); inputs+=(--input "${n#${side}_}=$f")
    done
    echo "== $row $side"
    ncu --clock-control none --metrics gpu__time_duration.sum,launch__grid_size,sm__warps_active.avg.pct_of_peak_sustained_active \
      "$run" "$out/$art" --function "$fn" --repeat 1 --quiet "${inputs[@]}" 2>&1 |
      grep -E "^\s+[a-z_0-9]+.*\(|gpu__time_duration|launch__grid_size|warps_active" | sed 's/^ *//'
  done
done
