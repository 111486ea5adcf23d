#!/usr/bin/env python3
"""Runs the GPU correctness matrix on the GPU machine (see cases.py).

For each case, with fresh random data (the seed is printed):
  1. the CPU artifact's `quantize` turns float Q/K/V into the quantized operands;
  2. the CUDA artifact's `attention` runs on them (output poisoned first, by qattn-run);
  3. the output is compared with
     - the CPU reference `attention` on the same operands (small cases), and
     - float64 attention (torch, on the GPU) of the operands dequantized by
       python/qattn/format.py, an independent implementation of docs/FORMAT.md:
       both may differ only by f32 accumulation order and output rounding;
  4. the error against float64 attention on the unquantized inputs is reported;
  5. the kernel time (qattn-run --repeat) is printed next to torch SDPA bf16.
Exit status 1 if any case fails.

usage: check.py CASES_DIR QATTN_RUN [--only SUBSTRING] [--seed N]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

import numpy as np
import torch

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
from qattn import format as F  # noqa: E402

# Allowed |gpu - reference| / max|reference|: f32 accumulation order, plus
# half an ulp of the output type.
TOLERANCE = {"f32": 2e-4, "f16": 2e-3, "bf16": 1e-2}
# The tensor-core kernels (kernel = mma, wgmma, decode) multiply P and V' as f16
# operands (f32 accumulation): each carries a relative rounding error up to
# 2^-11; the decode kernel also rounds float queries to f16.
F16_OPERANDS = 1e-3
# The wgmma kernel with pv = e4m3 rounds P and V to e4m3 (3 mantissa bits):
# a relative error up to 2^-4 on each, so a row dominated by one key may be
# off by up to ~1/8 of it; rows spread over many keys average the errors out
# (measured on the H200: 2.4e-2 to 4.7e-2 on the gpu-check and bench cases).
# Layout or scale faults give errors of order 1.
E4M3_PV = 1e-1
# SAS drops terms below the threshold n_r = -6: a score within rounding of it
# may fall on either side, moving one term of weight <= e^-6.
SAS_THRESHOLD = 5e-3


def operand_tolerance(folder):
    """The tolerance the kernels' reduced-precision operands add (0 for
    none): f16 P and V (tensor-core kernels), e4m3 P and V (pv = e4m3)."""
    manifest = json.load(open(os.path.join(folder, "cuda", "manifest.json")))
    kernels = [launch["kernel"] for fn in manifest["functions"]
               for launch in fn["launches"]]
    if any(k.endswith("_wgmma_e4m3") for k in kernels):
        return E4M3_PV
    if any(k.endswith(("_mma", "_wgmma", "_decode")) for k in kernels):
        return F16_OPERANDS
    return 0.0


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}\n{r.stdout}\n{r.stderr}")
    return r.stdout


def load(path, dtype):
    a = np.load(path)
    return F.bf16_to_f32(a) if dtype == "bf16" else a.astype(np.float32)


def attention64(q, k, v, scale, causal):
    """float64 attention on the GPU: q [B,Hq,Nq,d], k/v [B,Hkv,Nk,d]."""
    q, k, v = (torch.from_numpy(np.asarray(x, np.float64)).cuda() for x in (q, k, v))
    r = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(r, 1), v.repeat_interleave(r, 1)
    out = torch.empty_like(q)
    nq, nk = q.shape[2], k.shape[2]
    for h in range(q.shape[1]):  # one head at a time keeps 8K x 8K scores small
        s = scale * q[:, h] @ k[:, h].transpose(-1, -2)
        if causal:
            mask = torch.arange(nk, device="cuda")[None, :] > (
                torch.arange(nq, device="cuda")[:, None] + nk - nq)
            s = s.masked_fill(mask, float("-inf"))
        out[:, h] = torch.softmax(s, -1) @ v[:, h]
    return out.cpu().numpy()


def sdpa_bf16_us(q, k, v, causal):
    """Median time of torch SDPA (bf16, default backend choice) for orientation."""
    q, k, v = (torch.from_numpy(x).cuda().to(torch.bfloat16) for x in (q, k, v))
    f = lambda: torch.nn.functional.scaled_dot_product_attention(
        q, k, v, is_causal=causal and q.shape[2] > 1, enable_gqa=True)
    for _ in range(3):
        f()
    times = []
    for _ in range(20):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); f(); e.record(); torch.cuda.synchronize()
        times.append(s.elapsed_time(e) * 1e3)
    return float(np.median(times))


def dequantize(case, t):
    """Float32 Q', K', V' from the quantized operand files, per FORMAT.md."""
    blk, grp, bits = case["block"], case["group"], case["bits"]
    q = F.stage1_dequantize(t["q8"], t["qs"], blk) if case["q_int8"] else t["q"]
    kv = []
    for x in "kv":
        extra = {}
        if case["buffer"]:
            extra = {"buffer": t[x + "b"], "buffer_scale": t[x + "bs"]}
        if bits:
            kv.append(F.dequantized_kv(t[x + "s"], blk, packed=t[x + "p"].view(np.uint8),
                                       s2=t[x + "g"].view(np.uint8), z2=t[x + "z"],
                                       bits=bits if len(bits) > 1 else bits[0],
                                       group=grp, order=case.get("order", "lsb_first"),
                                       anchor=case.get("anchor", "zero"),
                                       **extra))
        else:
            kv.append(F.dequantized_kv(t[x + "s"], blk, q8=t[x + "8"], **extra))
    return q, kv[0], kv[1]


def rel(a, ref):
    return float(np.abs(a - ref).max() / max(np.abs(ref).max(), 1e-30))


def check_case(case, folder, qattn_run, seed):
    name, out_dtype = case["name"], case["out"]
    scale = 1.0 / np.sqrt(case["d"])
    dist = ["--dist", "normal"] + (["--random", "k=outlier"] if case["dist"] == "outlier" else [])
    run([qattn_run, f"{folder}/cpu", "--function", "quantize", "--seed", str(seed),
         "--output-dir", f"{folder}/run", "--quiet"] + dist)
    inputs = sum((["--input", f"{n}={folder}/run/{n}.npy"] for n in case["operands"]), [])
    log = run([qattn_run, f"{folder}/cuda", "--function", "attention", "--output-dir",
               f"{folder}/gpu", "--repeat", "20"] + inputs)
    m = re.search(r"median[^0-9]*([0-9.]+)", log)
    gpu_us = float(m.group(1)) if m else float("nan")
    out = load(f"{folder}/gpu/out.npy", out_dtype)
    if not np.isfinite(out).all():
        return False, f"{name}: non-finite GPU output", gpu_us

    t = {n: np.load(f"{folder}/run/{n}.npy") for n in case["operands"]}
    qd, kd, vd = dequantize(case, t)
    if case["softmax"] == "sas":
        # f32 like the spec, so threshold decisions match the kernel's.
        ref_deq = F.attention(qd, kd, vd, scale, case["causal"], softmax="sas",
                              threshold=-6.0, degree=3, dtype=np.float32)
    else:
        ref_deq = attention64(qd, kd, vd, scale, case["causal"])
    err_deq = rel(out, ref_deq)
    err_cpu = float("nan")
    if case["cpu_reference"]:
        run([qattn_run, f"{folder}/cpu", "--function", "attention", "--output-dir",
             f"{folder}/cpuref", "--quiet"] + inputs)
        err_cpu = rel(out, load(f"{folder}/cpuref/out.npy", out_dtype))

    qf, kf, vf = (np.load(f"{folder}/run/{n}.npy") for n in "qkv")
    if case["buffer"]:
        kf = np.concatenate([kf, np.load(f"{folder}/run/kbf.npy")], 2)
        vf = np.concatenate([vf, np.load(f"{folder}/run/vbf.npy")], 2)
    ref = attention64(qf, kf, vf, scale, case["causal"])
    rel_fro = float(np.linalg.norm(out - ref) / np.linalg.norm(ref))
    sqnr = float(10 * np.log10((ref ** 2).sum() / ((out - ref) ** 2).sum()))
    sdpa_us = sdpa_bf16_us(qf, kf, vf, case["causal"])

    tol = max(TOLERANCE[out_dtype], operand_tolerance(folder))
    if case["softmax"] == "sas":
        tol = max(tol, SAS_THRESHOLD)
    ok = err_deq <= tol and (np.isnan(err_cpu) or err_cpu <= tol) and rel_fro < 0.9
    line = (f"{'PASS' if ok else 'FAIL'} {name:34s} vs-dequant {err_deq:.1e} "
            f"vs-cpu {err_cpu:.1e} (tol {tol:.0e}) | vs-float rel_fro {rel_fro:.3f} "
            f"sqnr {sqnr:5.1f} dB | gpu {gpu_us:9.1f} us  sdpa-bf16 {sdpa_us:8.1f} us")
    return ok, line, gpu_us


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cases")
    ap.add_argument("qattn_run")
    ap.add_argument("--only", default="")
    ap.add_argument("--seed", type=int, default=int(time.time()) % 100000)
    args = ap.parse_args()
    cases = json.load(open(os.path.join(args.cases, "cases.json")))
    print(f"gpu-check: {torch.cuda.get_device_name()}, seed {args.seed}", flush=True)
    failures = 0
    for i, case in enumerate(cases):
        if args.only not in case["name"]:
            continue
        try:
            ok, line, _ = check_case(case, os.path.join(args.cases, case["name"]),
                                     args.qattn_run, args.seed + i)
        except Exception as e:  # report and go on with the other cases
            ok, line = False, f"FAIL {case['name']}: {e}"
        failures += not ok
        print(line, flush=True)
    print(f"gpu-check: {failures} of {len(cases)} cases failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
