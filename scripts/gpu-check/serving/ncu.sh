#!/usr/bin/env bash
# Nsight Compute's details and SASS source view of the serving grid kernel
# and of the static shape (the tile layer) at timing.py's shape, on inputs timing.py
# wrote to WORK (run it first). ART picks the serving artifact.
# usage: ART=artifacts/serving/cuda ncu.sh WORK OUT
set -euo pipefail
w=$1 out=$2 art=${ART:-artifacts/serving/cuda}
inputs=$(for f in "$w"/*.npy; do n=$(basename "$f" .npy)
  case $n in static_*) ;; *) echo "--input $n=$f" ;; esac; done)
ncu --clock-control none --set full --import-source no -k regex:llama_int4_d128_decode_tiles \
  --launch-count 1 -o "$out/tile" build-gpu/bin/qattn-run "$art" --function llama_int4_d128 \
  --repeat 1 $inputs --output-dir "$w/o2" > "$out/ncu_run.log" 2>&1
ncu -i "$out/tile.ncu-rep" --page details > "$out/tile_details.txt" 2>&1
ncu -i "$out/tile.ncu-rep" --page source --csv --print-source sass > "$out/tile_sass.csv" 2>&1
static=$(for f in "$w"/static_*.npy; do n=$(basename "$f" .npy); echo "--input ${n#static_}=$f"; done)
ncu --clock-control none --set full --import-source no -k regex:decode --launch-count 1 \
  -o "$out/static" build-gpu/bin/qattn-run artifacts/serving/static --function static_llama \
  --repeat 1 $static --input "q=$w/q.npy" --output-dir "$w/o3" > "$out/ncu_static.log" 2>&1
ncu -i "$out/static.ncu-rep" --page details > "$out/static_details.txt" 2>&1
ncu -i "$out/static.ncu-rep" --page source --csv --print-source sass > "$out/static_sass.csv" 2>&1
rm -f "$out"/*.ncu-rep
