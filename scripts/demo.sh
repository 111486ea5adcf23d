#!/usr/bin/env bash
# The README's first command: build qattn, compile the built-in example
# (examples/attention.mlir: causal GQA attention over a 4-bit and a mixed
# 2/4-bit KV cache), run it on seeded data and report accuracy against
# float64 attention on the unquantized inputs.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${QATTN_BUILD_DIR:-$root/build}"
out="$build/demo"

echo "== building qattn (incremental)"
"$root/scripts/build.sh" qattn-opt qattn-compile qattn-run | tail -n 1

echo "== compiling examples/attention.mlir"
rm -rf "$out"
"$build/bin/qattn-compile" "$root/examples/attention.mlir" -o "$out/artifact" --emit-llvm
echo "   artifact:  $out/artifact/module.so (CPU reference), manifest.json, module.ll"

echo "== compiling examples/attention_gpu.mlir for sm_90a"
"$build/bin/qattn-compile" "$root/examples/attention_gpu.mlir" -o "$out/gpu-artifact" --target=cuda
echo "   artifact:  $out/gpu-artifact/ (module.ptx, module.cubin where ptxas ran, manifest.json)"

echo "== the CPU reference (the executable specification)"

run() { # function, label, qattn-run distribution options...
  local fn="$1" label="$2"; shift 2
  printf '   %-22s %-30s ' "$fn" "$label"
  "$build/bin/qattn-run" "$out/artifact" --function "$fn" --seed 2026 --quiet \
    --output-dir "$out/$fn-${label%% *}" "$@" | sed 's/^result out vs float64 attention: //'
}
for fn in attention_int8 attention_int4 attention_mixed_2_4; do
  run "$fn" "normal Q/K/V" --dist normal
  run "$fn" "outlier-channel K" --dist normal --random k=outlier
done
echo "   inputs and outputs (.npy): $out/<function>-<data>/"

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi >/dev/null 2>&1; then
  echo "== a GPU is present: the 4-bit attention on the GPU, same inputs as above"
  data="$out/attention_int4-normal"
  "$build/bin/qattn-run" "$out/artifact" --function quantize_int4 --quiet \
    --input q="$data/q.npy" --input k="$data/k.npy" --input v="$data/v.npy" \
    --output-dir "$out/gpu-run"
  inputs=()
  for n in q8 qs kp ks kg kz vp vs vg vz; do inputs+=(--input "$n=$out/gpu-run/$n.npy"); done
  "$build/bin/qattn-run" "$out/gpu-artifact" --function attention_int4 --repeat 20 \
    --output-dir "$out/gpu-run" "${inputs[@]}" | grep -i -E "median|error" || true
  python3 - "$data/out.npy" "$out/gpu-run/out.npy" <<'PY'
import sys
import numpy as np
cpu, gpu = (np.load(p).astype(np.float64) for p in sys.argv[1:])
print(f"   GPU vs CPU reference: max |diff| / max |cpu| = "
      f"{np.abs(gpu - cpu).max() / np.abs(cpu).max():.2e}")
PY
else
  echo "== no GPU here: the GPU artifact is compiled, not run"
fi
echo "   errors are against float64 attention on the unquantized inputs;"
echo "   rel_fro = ||O - R|| / ||R||, sqnr = 10 log10(sum R^2 / sum (O - R)^2)"
