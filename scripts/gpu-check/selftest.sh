#!/usr/bin/env bash
# Validates qattn-run's cuda target on a GPU with hand-written kernels
# (selftest/selftest.cu, manifest selftest/manifest.json), before the
# compiler emits any. Run from the repository root after build-runtime.sh:
#
#   bash scripts/gpu-check/build-runtime.sh && bash scripts/gpu-check/selftest.sh
#
# Builds the kernels with nvcc for sm_90a (cubin and PTX) into
# build-gpu/selftest/, then checks: copy bit-exact; attention (two launches,
# a scratch buffer, 130 KiB of dynamic shared memory) against the float64
# reference; NaN poisoning of unwritten results; --repeat timing; the PTX
# fallback through the driver's JIT; clean errors for a bad manifest;
# symbolic sizes (one function at several batch sizes: grids and dim
# parameters evaluated per call, a scratch buffer sized by B, --plan-only
# against the run); the device-pointer API and the C ABI from the CUDA
# runtime (device_api.cu: growth of scratch, graph capture); and
# compute-sanitizer memcheck. Prints every command and its output; ends with
# "selftest: N passed, M failed" and exits 1 if anything failed.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
here="$root/scripts/gpu-check/selftest"
build="${QATTN_GPU_BUILD:-$root/build-gpu}"
cuda_home="${CUDA_HOME:-/usr/local/cuda}"
if ! command -v nvcc >/dev/null && [ -x "$cuda_home/bin/nvcc" ]; then
  export PATH="$cuda_home/bin:$PATH"
fi
run="$build/bin/qattn-run"
work="$build/selftest"
art="$work/art"

passed=0
failed=0
pass() { echo "--- ok: $1"; passed=$((passed + 1)); }
failure() { echo "--- FAIL: $1"; failed=$((failed + 1)); }
die() { echo "selftest: $1"; echo "selftest: 0 passed, 1 failed"; exit 1; }
step() { echo; echo "=== $1"; }

# check NAME EXPECTED_STATUS PATTERN COMMAND...: runs COMMAND (echoed, its
# stdout and stderr shown), passes if it exits with EXPECTED_STATUS and its
# output matches the extended regex PATTERN (empty: anything).
check() {
  local name="$1" want="$2" pattern="$3"
  shift 3
  echo "\$ $*"
  local out status
  out="$("$@" 2>&1)"
  status=$?
  echo "$out"
  if [ "$status" -ne "$want" ]; then
    failure "$name: exit status $status, expected $want"
  elif [ -n "$pattern" ] && ! grep -Eq -- "$pattern" <<<"$out"; then
    failure "$name: output does not match /$pattern/"
  else
    pass "$name"
  fi
}

step "setup"
[ -x "$run" ] || die "no $run: run scripts/gpu-check/build-runtime.sh first"
command -v nvcc >/dev/null || die "no nvcc (set CUDA_HOME)"
nvcc --version | tail -1
"$run" --list-devices || die "qattn-run finds no CUDA device"

step "build the kernels (nvcc -cubin / -ptx -arch=sm_90a)"
rm -rf "$work" && mkdir -p "$art" || die "cannot create $work"
cp "$here/manifest.json" "$art/manifest.json"
echo "\$ nvcc -cubin -arch=sm_90a -O3 -Xptxas -v $here/selftest.cu -o $art/module.cubin"
nvcc -cubin -arch=sm_90a -O3 -Xptxas -v "$here/selftest.cu" \
  -o "$art/module.cubin" || die "nvcc -cubin failed"
nvcc -ptx -arch=sm_90a -O3 "$here/selftest.cu" -o "$art/module.ptx" ||
  die "nvcc -ptx failed"
grep -E '^\.(version|target)|\.entry' "$art/module.ptx"
# stamp DIR: record the SHA-256 of DIR's library and PTX in its manifest, as
# qattn-compile does (docs/ARTIFACT.md, "Verifying an artifact").
stamp() {
  python3 - "$1" <<'PY'
import hashlib, json, os, sys
d = sys.argv[1]
path = os.path.join(d, "manifest.json")
m = json.load(open(path))
for f, h in [("library", "library_sha256"), ("ptx", "ptx_sha256")]:
    if os.path.isfile(os.path.join(d, m[f])):
        m[h] = hashlib.sha256(open(os.path.join(d, m[f]), "rb").read()).hexdigest()
json.dump(m, open(path, "w"), indent=2)
PY
}
stamp "$art" || die "cannot stamp $art/manifest.json"

step "copy: bit-exact"
check "copy exact" 0 'result y vs arg x: max_abs=0.000e\+00 rel_fro=0.000e\+00 sqnr=inf dB' \
  "$run" "$art" --function copy --verbose --seed 3 --max-rel-error 0 \
  --output-dir "$work/copy"
echo "\$ cmp $work/copy/x.npy $work/copy/y.npy"
if cmp "$work/copy/x.npy" "$work/copy/y.npy"; then
  pass "copy: y.npy == x.npy byte for byte"
else
  failure "copy: y.npy differs from x.npy"
fi

step "copy_partial: half of y unwritten must be NaN (exit 2)"
check "unwritten result detected" 2 'FAIL: result y holds 65952 NaN values of 132000' \
  "$run" "$art" --function copy_partial

step "attention: two launches, scratch buffer, 130 KiB dynamic shared memory"
check "attention vs float64" 0 'result out vs float64 attention: .*rel_fro=[0-9.]+e-0[6-9]' \
  "$run" "$art" --function attention --verbose --max-rel-error 1e-5 \
  --random k=outlier --seed 1
check "attention, uniform inputs" 0 'result out vs float64 attention' \
  "$run" "$art" --function attention --dist uniform --seed 2 \
  --max-rel-error 1e-5 --min-sqnr 100

step "--repeat (CUDA events)"
check "attention --repeat 100" 0 'time: median [0-9.]+ us, min [0-9.]+ us over 100 runs \(CUDA events, after 3 warm-up runs\)' \
  "$run" "$art" --function attention --max-rel-error 1e-5 --repeat 100 --quiet
check "copy --repeat 20" 0 'time: median [0-9.]+ us, min [0-9.]+ us over 20 runs' \
  "$run" "$art" --function copy --max-rel-error 0 --repeat 20 --quiet

step "PTX fallback (no cubin: the driver JITs module.ptx)"
mkdir -p "$work/ptx"
cp "$art/module.ptx" "$work/ptx/"
sed 's/"module.cubin"/"missing.cubin"/' "$art/manifest.json" >"$work/ptx/manifest.json"
check "fallback to PTX" 0 'falling back to .*module.ptx' \
  "$run" "$work/ptx" --function attention --verbose --max-rel-error 1e-5
check "fallback reported" 0 'module module.ptx \(PTX, JIT-compiled; missing.cubin did not load\)' \
  "$run" "$work/ptx" --function copy --max-rel-error 0
mkdir -p "$work/ptxonly"
cp "$art/module.ptx" "$work/ptxonly/"
sed -e 's/"module.cubin"/"module.ptx"/' "$art/manifest.json" >"$work/ptxonly/manifest.json"
stamp "$work/ptxonly"
check "PTX as the library" 0 'module module.ptx \(PTX, JIT-compiled\)' \
  "$run" "$work/ptxonly" --function attention --max-rel-error 1e-5

step "clean errors (exit 1)"
edit() { # edit DIR PYTHON: a copy of the artifact with manifest `m` edited
  mkdir -p "$1" && cp "$art/module.cubin" "$art/module.ptx" "$1/" &&
    python3 -c "import json,sys; m=json.load(open(sys.argv[1])); $2; json.dump(m, open(sys.argv[2],'w'))" \
      "$art/manifest.json" "$1/manifest.json"
}
edit "$work/nokernel" 'm["functions"][2]["launches"][1]["kernel"] = "attn_nope"'
check "unknown kernel" 1 'module.cubin: no kernel "attn_nope" for launch 1 of function "attention"' \
  "$run" "$work/nokernel" --function attention
edit "$work/extra" 'm["functions"][2]["launches"][0]["params"].append({"arg": 2})'
check "too many parameters" 1 'kernel "attn_scores" \(launch 0 of function "attention"\): the kernel takes 3 parameters, the launch passes 4' \
  "$run" "$work/extra" --function attention
# Too few shows only with --verbose (the check queries past the last
# parameter, an API error that compute-sanitizer would report).
edit "$work/fewer" 'm["functions"][2]["launches"][0]["params"].pop()'
check "too few parameters (--verbose)" 1 'kernel "attn_scores" \(launch 0 of function "attention"\): the kernel takes 3 parameters, the launch passes 2' \
  "$run" "$work/fewer" --function attention --verbose
edit "$work/shared" 'm["functions"][2]["launches"][1]["shared_bytes"] = 300000'
check "too much shared memory" 1 'needs 300000 bytes of dynamic shared memory' \
  "$run" "$work/shared" --function attention
edit "$work/chip" 'm["chip"] = "sm_80a"'
check "wrong chip" 1 'chip sm_80a needs a device of compute capability exactly 8.0; device 0 \(.*\) has 9.0' \
  "$run" "$work/chip" --function copy
check "no such device" 1 'target cuda: no device 99' \
  "$run" "$art" --function copy --device 99
edit "$work/nomodule" 'm["library"] = "gone.cubin"; m["ptx"] = "gone.ptx"'
check "no module at all" 1 'cannot load the artifact.s module.*gone.cubin.*gone.ptx' \
  "$run" "$work/nomodule" --function copy
edit "$work/flipped" 'pass'
python3 -c "import sys; p=sys.argv[1]; b=bytearray(open(p,'rb').read()); b[len(b)//2]^=0xff; open(p,'wb').write(b)" "$work/flipped/module.cubin"
check "cubin that is not the manifest's" 1 'module.cubin: the file does not match the manifest: its SHA-256 is' \
  "$run" "$work/flipped" --function copy

step "symbolic sizes: one function at several batch sizes"
check "copy_dims at B=1" 0 'launch copy_rows_f32 grid \[129, 1, 1\] = \[ceil_div\(B\*33000, 256\), 1, 1\]' \
  "$run" "$art" --function copy_dims --dim B=1 --max-rel-error 0
check "copy_dims at B=7, bit-exact" 0 'result y vs arg x: max_abs=0.000e\+00 rel_fro=0.000e\+00 sqnr=inf dB' \
  "$run" "$art" --function copy_dims --dim B=7 --max-rel-error 0
check "copy_dims at B=7: the grid" 0 'launch copy_rows_f32 grid \[903, 1, 1\]' \
  "$run" "$art" --function copy_dims --dim B=7 --max-rel-error 0
check "copy_dims: scratch sized by B (--verbose)" 0 'buffer "staging" of function "copy_dims": 924000 bytes at B=7' \
  "$run" "$art" --function copy_dims --dim B=7 --max-rel-error 0 --verbose
check "copy_dims --repeat at B=4" 0 'time: median [0-9.]+ us, min [0-9.]+ us over 20 runs' \
  "$run" "$art" --function copy_dims --dim B=4 --max-rel-error 0 --repeat 20 --quiet
check "grid_probe: grid [N, B, 2]" 0 'launch grid_probe grid \[5, 3, 2\] = \[N, B, 2\]' \
  "$run" "$art" --function grid_probe --dim B=3 --dim N=5
check "--plan-only agrees with the run" 0 'params x, staging, B=7' \
  "$run" "$art" --function copy_dims --dim B=7 --plan-only
edit "$work/staticgrid" 'm["functions"][3]["launches"][1]["grid"][0] = 129'
check "a grid that ignores B leaves y unwritten (exit 2)" 2 'FAIL: result y holds 197976 NaN values of 231000' \
  "$run" "$work/staticgrid" --function copy_dims --dim B=7
edit "$work/dimptr" 'm["functions"][3]["launches"][0]["params"][2] = {"arg": 0}'
check "a pointer where the kernel takes an i32" 1 'parameter 2 of the kernel is 4 bytes; an argument, result or buffer is an 8-byte device pointer' \
  "$run" "$work/dimptr" --function copy_dims --dim B=1
edit "$work/ptrdim" 'm["functions"][4]["launches"][0]["params"][0] = {"dim": "B"}; m["functions"][4]["launches"][0]["params"].append({"result": 0})'
check "an i32 where the kernel takes a pointer" 1 'parameter 0 of the kernel is 8 bytes; a \{"dim": ...\} parameter is a 4-byte integer' \
  "$run" "$work/ptrdim" --function grid_probe --dim B=1 --dim N=1

step "device-pointer API and C ABI from the CUDA runtime (device_api.cu)"
lib="$(find "$build" -name libqattn_runtime.a | head -1)"
clib="$(dirname "$(find "$build" -name libqattn_runtime_c.so | head -1)")"
echo "\$ nvcc -std=c++17 -O2 device_api.cu -I runtime/include $lib -ldl -L$clib -lqattn_runtime_c"
if nvcc -std=c++17 -O2 "$here/device_api.cu" -I "$root/runtime/include" \
    "$lib" -ldl -L"$clib" -lqattn_runtime_c -Xlinker -rpath="$clib" \
    -o "$work/device_api"; then
  check "device_api" 0 'device_api: passed' "$work/device_api" "$art"
else
  failure "device_api: does not build"
fi

step "compute-sanitizer --tool memcheck"
sanitizer="$(command -v compute-sanitizer || true)"
for candidate in "$cuda_home/bin/compute-sanitizer" \
    "$cuda_home/compute-sanitizer/compute-sanitizer"; do
  [ -z "$sanitizer" ] && [ -x "$candidate" ] && sanitizer="$candidate"
done
if [ -z "$sanitizer" ]; then
  failure "compute-sanitizer not found (PATH, $cuda_home)"
else
  check "memcheck attention" 0 'ERROR SUMMARY: 0 errors' \
    "$sanitizer" --tool memcheck --error-exitcode 3 \
    "$run" "$art" --function attention --max-rel-error 1e-5
  check "memcheck copy" 0 'ERROR SUMMARY: 0 errors' \
    "$sanitizer" --tool memcheck --error-exitcode 3 \
    "$run" "$art" --function copy --max-rel-error 0 --repeat 3
  check "memcheck copy_dims at B=5" 0 'ERROR SUMMARY: 0 errors' \
    "$sanitizer" --tool memcheck --error-exitcode 3 \
    "$run" "$art" --function copy_dims --dim B=5 --max-rel-error 0
  check "memcheck grid_probe at B=2, N=9" 0 'ERROR SUMMARY: 0 errors' \
    "$sanitizer" --tool memcheck --error-exitcode 3 \
    "$run" "$art" --function grid_probe --dim B=2 --dim N=9
fi

echo
echo "selftest: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
