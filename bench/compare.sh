#!/usr/bin/env bash
# On the GPU machine, from anywhere: times the same cases compiled by
# different compilers (or with different options) against each other, on the
# same inputs, alternating variants within each round, so that clock and
# thermal drift fall on all of them alike.
#
#   bash bench/compare.sh DIR BASE VARIANT... [--rounds N] [--repeat N]
#
# DIR holds one folder per variant, each written by bench/cases.py (e.g.
# `python3 bench/cases.py DIR/base --only decode_b8 --qattn-compile OLD` and
# the same with the new compiler into DIR/new). The case list is BASE's.
# Inputs are bench/profile_inputs.py's (finite random operands, not quantizer
# output: outputs of two kernels can differ where a kernel assumes the
# encoder's ranges). Prints, per case and round, each variant's qattn-run
# median (us, cold L2), then each variant's max |output - BASE's output|.
set -euo pipefail
usage() { sed -n '7,15p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
[ $# -ge 3 ] || usage
dir="$(cd "$1" && pwd)"; shift
rounds=3 repeat=20 variants=()
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds="$2"; shift 2 ;;
    --repeat) repeat="$2"; shift 2 ;;
    -*) usage ;;
    *) variants+=("$1"); shift ;;
  esac
done
[ ${#variants[@]} -ge 2 ] || usage
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/gpu-check/build-runtime.sh >/tmp/compare-build.log 2>&1 ||
  { cat /tmp/compare-build.log; exit 1; }
run="${QATTN_GPU_BUILD:-$root/build-gpu}/bin/qattn-run"
work="$(mktemp -d)"
base="${variants[0]}"
for c in $(ls "$dir/$base"); do
  [ -d "$dir/$base/$c/cuda" ] || continue
  args=$(python3 bench/profile_inputs.py "$dir/$base/$c/cuda" "$work/in_$c")
  for round in $(seq "$rounds"); do
    line="$c r$round"
    for v in "${variants[@]}"; do
      t=$("$run" "$dir/$v/$c/cuda" --function attention $args --repeat "$repeat" \
            --cold-l2 --quiet --output-dir "$work/out_${v}_$c" |
          grep -oE "median [0-9.]+" | awk '{print $2}')
      line="$line $v=$t"
    done
    echo "$line"
  done
  for v in "${variants[@]:1}"; do
    python3 - "$work/out_${base}_$c" "$work/out_${v}_$c" "$v" "$base" <<'PY'
import glob, sys
import numpy as np
a = np.load(glob.glob(sys.argv[1] + "/*.npy")[0]).astype(np.float64)
b = np.load(glob.glob(sys.argv[2] + "/*.npy")[0]).astype(np.float64)
print(f"  {sys.argv[3]} vs {sys.argv[4]}: max|diff| {np.abs(a - b).max():.3g}, "
      f"max|{sys.argv[4]}| {np.abs(a).max():.3g}")
PY
  done
done
rm -rf "$work"
