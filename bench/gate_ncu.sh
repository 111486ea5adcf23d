#!/usr/bin/env bash
# On the GPU machine, repo root: Nsight Compute on one decode-gate row's two grid kernels (the
# static shape's and the serving function's), one launch each after two warm-up calls, on the
# operands `decode_gate.py run --keep` writes: OUT/<tag>_{static,serving}_details.txt (--set
# full) and OUT/<tag>_{static,serving}_source.csv (SASS source counters), which
# bench/ncu_regions.py splits into the key loop and the once-per-warp code.
# usage: gate_ncu.sh GATE_DIR ROW QATTN_RUN WORK OUT   (GATE_DIR from decode_gate.py prepare)
set -uo pipefail
art="${1:?usage: gate_ncu.sh GATE_DIR ROW QATTN_RUN WORK OUT}" row="${2:?}" run="${3:?}"
work="${4:?}" out="${5:?}"
mkdir -p "$out"
python3 bench/decode_gate.py run "$art" "$run" "$work" --only "$row" --rounds 1 --keep \
  > "$out/${row}_gate.txt" 2>&1 || { tail -n 5 "$out/${row}_gate.txt"; exit 1; }
for kind in static serving; do
  read -r a f < <(python3 -c "import json,sys; p=json.load(open(sys.argv[1] + '/plan.json'))
r=next(x for x in p['rows'] if x['name'] == sys.argv[2]); print(sys.argv[1] + '/' +
r[sys.argv[3]]['artifact'], r[sys.argv[3]]['function'])" "$art" "$row" "$kind")
  inputs=()
  for npy in "$work/$row/${kind}_"*.npy; do
    n=$(basename "$npy" .npy); inputs+=(--input "${n#"${kind}"_}=$npy")
  done
  common=(--clock-control none -k regex:_decode --launch-skip 2 --launch-count 1)
  ncu "${common[@]}" --set full --print-summary none "$run" "$a" --function "$f" --repeat 3 \
    --quiet "${inputs[@]}" > "$out/${row}_${kind}_details.txt" 2>&1
  ncu "${common[@]}" --section SourceCounters --section WarpStateStats --page source \
    --print-source sass --csv "$run" "$a" --function "$f" --repeat 3 --quiet "${inputs[@]}" \
    > "$out/${row}_${kind}_source.csv" 2>&1
done
echo "gate_ncu: wrote $out/${row}_{static,serving}_{details.txt,source.csv}"
