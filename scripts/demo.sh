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

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi >/dev/null 2>&1; then
  echo "== a GPU is present, but the GPU pipeline is not built yet: running the CPU reference"
else
  echo "== no GPU here: running the CPU reference (the executable specification)"
fi

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
echo "   errors are against float64 attention on the unquantized inputs;"
echo "   rel_fro = ||O - R|| / ||R||, sqnr = 10 log10(sum R^2 / sum (O - R)^2)"
