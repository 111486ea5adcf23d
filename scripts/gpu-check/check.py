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
       check.py --self-check    (CPU, NumPy only: e4m3_pv_bound against a model of the
                                 e4m3 kernel, and against it with one ragged V scale doubled)
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

import numpy as np

try:
    import torch
except ImportError:  # --self-check needs only NumPy
    torch = None

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
from qattn import format as F  # noqa: E402

# Allowed |gpu - reference| / max|reference|: f32 accumulation order, plus
# half an ulp of the output type.
TOLERANCE = {"f32": 2e-4, "f16": 2e-3, "bf16": 1e-2}
# The tensor-core kernels (kernel = mma, wgmma, decode, the tile layer's
# decode_tiles) multiply P and V' as f16 operands (f32 accumulation): each
# carries a relative rounding error up to 2^-11; the decode kernels also
# round float queries to f16.
F16_OPERANDS = 1e-3
# The wgmma kernel with pv = e4m3 rounds P and V to e4m3: a tolerance per
# output element, e4m3_pv_bound below (a flat 1e-1 of max|ref| let a wrong V
# scale on one ragged block through). Marks the case for operand_tolerance.
E4M3_PV = "e4m3"
# e4m3: 3 mantissa bits, so round-to-nearest is off by at most 2^-4 of the
# value in the normal range; the smallest normal is 2^-6 and the subnormal
# step 2^-9, so below 2^-6 the error is at most min(x, 2^-10).
E4M3_U = 2.0 ** -4
E4M3_SUB_HALF_STEP = 2.0 ** -10
# MmaKernel.cpp: kLazyMaxLog2E4m3 (row maxima move only past 2^lazy) and
# p' = 2^(logit - m) s 2^(8 - lazy), s the tile's V stage-1 scale.
E4M3_LAZY = 3.0
# Hopper's fp8 wgmma keeps about 14 bits of the accumulator when it adds a
# k step's products (DeepSeek-V3 report, section 3.3.2): 2^-13 of the sum of
# magnitudes per 32-key k step, a generous allowance.
E4M3_ACC = 2.0 ** -13
E4M3_K_STEP = 32
# Half an ulp of the output type.
HALF_ULP = {"f32": 2.0 ** -24, "f16": 2.0 ** -11, "bf16": 2.0 ** -8}
# SAS drops terms below the threshold n_r = -6: a score within rounding of it
# may fall on either side, moving one term of weight <= e^-6.
SAS_THRESHOLD = 5e-3


def operand_tolerance(folder):
    """The tolerance the kernels' reduced-precision operands add (0 for
    none): f16 P and V (tensor-core kernels); E4M3_PV for e4m3 P and V (pv =
    e4m3), checked per element by e4m3_pv_bound instead."""
    manifest = json.load(open(os.path.join(folder, "cuda", "manifest.json")))
    kernels = [launch["kernel"] for fn in manifest["functions"]
               for launch in fn["launches"]]
    if any(k.endswith("_wgmma_e4m3") for k in kernels):
        return E4M3_PV
    if any(k.endswith(("_mma", "_wgmma", "_decode", "_decode_tiles")) for k in kernels):
        return F16_OPERANDS
    return 0.0



def e4m3_pv_bound(qd, kd, vd, v_scale, scale, causal, out_dtype):
    """(center, bound), both [B, Hq, Nq, d]: where the wgmma kernel with pv =
    e4m3 (MmaKernel.cpp) may put each output element, |out - center| <= bound.

    v_scale: V's stage-1 scale per key, [B, Hkv, Nk, 1]. The kernel computes
    out = N / D with N = sum_j e4m3(p'_j) e4m3(c_j), c_j the int8 V code
    (V'_j = c_j s_j), p'_j = 2^(logit_j - m) s_j 2^(8 - lazy) with m the row's
    lazy reference (max logit - lazy <= m <= max logit), and D = sum_j p'_j /
    s_j in f32 from the unrounded p'. With w_j the softmax weight, p'_j / D =
    w_j s_j. V's rounding is deterministic: when V' / s gives back integer
    codes, center is float64 attention of s e4m3(c) and only P's rounding is
    uncertain; otherwise center is attention of V' and c's rounding (2^-4
    relative) is in the bound too. Per term, with u = 2^-4 and Vr = s e4m3(c)
    (or (1 + u) |V'|), e4m3(p') off by at most u p' + min(p', 2^-10):
      - rounding:  u sum_j w_j |Vr_j|  (+ u sum_j w_j |V'_j| without codes);
      - subnormal: sum_j min(p'_j, 2^-10) |e4m3(c_j)| / D
                   <= 1 / (2^(8 - lazy) W) sum_j min(2^8 wt_j X_j, 2^-10 128),
        wt_j = e^(score_j - max score) (p'_j <= 2^8 wt_j s_j), W = sum_j wt_j
        (D >= 2^(8 - lazy) W), X_j = max_c |Vr_jc| (|e4m3(c)| <= 128);
      - accumulation: ceil(Nk / 32) 2^-13 sum_j w_j |Vr_j| (1 + u) (fp8
        wgmma's short accumulator) and Nk 2^-23 of it (f32 row sums,
        rescalings, the division);
    plus half an ulp of the output type. A fault on one block (a wrong scale,
    a misplaced tile) moves the elements whose weight sits on it by more
    than this wherever that weight is large enough.
    """
    u = E4M3_U
    w = F.attention_weights(qd, kd, scale, causal)  # [B, Hq, Nq, Nk] float64
    r = w.shape[1] // vd.shape[1]
    v = np.asarray(vd, np.float64)
    s = np.asarray(v_scale, np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        c = np.where(s > 0, v / s, 0.0)
    exact = bool(np.all(np.abs(c - np.round(c)) <= 1e-4) and np.all(np.abs(c) <= 127.5))
    if exact:
        vr = s * e4m3_round(np.round(c))
        rel_v = 0.0
    else:
        vr = (1 + u) * np.abs(v)
        rel_v = u
    vr = np.repeat(vr, r, axis=1)
    va = np.repeat(np.abs(v), r, axis=1)
    center = np.matmul(w, vr if exact else np.repeat(v, r, axis=1))
    wv = np.matmul(w, np.abs(vr))  # sum_j w_j |Vr_j|
    nk = w.shape[3]
    wmax = w.max(axis=3, keepdims=True)
    wt = w / wmax  # e^(score - max score); W = 1 / max_j w_j
    x = np.abs(vr).max(axis=3)[:, :, None, :]  # [B, Hq, 1, Nk]
    sub = (wmax[..., 0] / 2.0 ** (8 - E4M3_LAZY)
           * np.minimum(2.0 ** 8 * wt * x, E4M3_SUB_HALF_STEP * 128).sum(axis=3))
    acc = -(-nk // E4M3_K_STEP) * E4M3_ACC * (1 + u) + nk * 2.0 ** -23
    bound = (u + acc) * wv + sub[..., None]
    if rel_v:
        bound = bound + rel_v * np.matmul(w, va)
    return center, bound + HALF_ULP[out_dtype] * (np.abs(center) + bound)


def e4m3_round(x):
    """x rounded to e4m3 (nearest even, satfinite at 448), float64."""
    x = np.asarray(x, np.float64)
    a = np.abs(x)
    e = np.floor(np.log2(np.where(a > 0, a, 1.0)))
    step = 2.0 ** (np.maximum(e, -6) - 3)
    return np.sign(x) * np.minimum(np.round(a / step) * step, 448.0)


def e4m3_self_check(seed=0):
    """CPU (NumPy) check of e4m3_pv_bound: a model of the pv = e4m3 kernel's
    arithmetic (e4m3 P' and V codes, lazy row references anywhere in their
    range) stays within the bound on the e4m3 cases' shapes, and the same
    model with one ragged V block's scale doubled falls outside it.
    Returns a list of lines; raises AssertionError on a failure."""
    rng = np.random.default_rng(seed)
    lines = []
    # (b, hq, hkv, n, d, causal, block) of the gpu-check e4m3 cases.
    # must_reject: n1100's ragged block is 12 keys seen only by the last 12
    # rows, each spreading its weight over ~1100 keys; doubling it moves them
    # by less than the worst-case rounding bound, so it is reported only.
    for b, hq, hkv, n, d, causal, block, must_reject in (
            (2, 4, 4, 257, 128, False, 64, True),
            (1, 8, 2, 300, 64, True, 64, True),
            (1, 16, 2, 1100, 128, True, 64, False)):
        qd = rng.normal(size=(b, hq, n, d))
        k = rng.normal(size=(b, hkv, n, d)).astype(np.float32)
        k[..., 3] = 10 * k[..., 3] + 4  # the outlier channel of cases.py's k
        q8, qs = F.stage1_quantize(qd.astype(np.float32), block)
        qd = F.stage1_dequantize(q8, qs, block)
        k8, ks = F.stage1_quantize(k, block)
        kd = F.stage1_dequantize(k8, ks, block)
        v8, vs = F.stage1_quantize(rng.normal(size=(b, hkv, n, d)).astype(np.float32), block)
        vd = F.stage1_dequantize(v8, vs, block)
        scale = 1 / np.sqrt(d)
        sv = np.repeat(np.asarray(vs, np.float64), block, axis=2)[:, :, :n, None]
        ref, bound = e4m3_pv_bound(qd, kd, vd, sv, scale, causal, "f32")
        w = F.attention_weights(qd, kd, scale, causal)
        r = hq // hkv
        s = np.repeat(sv[..., 0], r, 1)
        c = np.repeat(v8.astype(np.float64), r, 1)

        def model(s_used):
            # p'_j / 2^(8 - lazy) = 2^(logit_j - m) = wt_j 2^(max logit - m).
            shift = 2.0 ** (E4M3_LAZY * rng.random(size=w.shape[:3] + (1,)))
            wt = w / w.max(axis=3, keepdims=True)
            p = wt * shift * 2.0 ** (8 - E4M3_LAZY) * s_used[:, :, None, :]
            num = np.matmul(e4m3_round(p), e4m3_round(c))
            den = (p / s_used[:, :, None, :]).sum(axis=3, keepdims=True)
            return num / den

        good = model(s)
        over = np.abs(good - ref) / bound
        assert over.max() <= 1, f"n {n}: the model exceeds the bound ({over.max():.2f})"
        sw = s.copy()
        sw[:, :, (n - 1) // block * block:] *= 2  # the last (ragged) block
        bad = model(sw)
        worst = (np.abs(bad - ref) / bound).max()
        assert worst > 1 or not must_reject, \
            f"n {n}: a doubled ragged-block V scale passes ({worst:.2f}x the bound)"
        old = np.abs(bad - ref).max() / np.abs(ref).max()
        lines.append(f"n {n} d {d} causal {causal}: model within {over.max():.2f} of the "
                     f"bound; doubled ragged V scale {worst:.1f}x the bound "
                     f"(flat rel err {old:.1e}, the old 1e-1 {'passed' if old <= 0.1 else 'failed'} it)")
    return lines

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

    operand_tol = operand_tolerance(folder)
    if operand_tol == E4M3_PV:
        # Per element (e4m3_pv_bound); the printed errors stay relative to
        # max|ref| for comparison with the other cases, and "tol" is the
        # largest |out - center| / bound (<= 1 passes).
        n = kd.shape[2]
        sv = F._scale_per_element(t["vs"], case["block"], n) if not case["buffer"] else \
            np.ones_like(vd[..., :1])  # no codes to recover: c's rounding goes in the bound
        center, bound = e4m3_pv_bound(qd, kd, vd, sv, scale, case["causal"], out_dtype)
        worst = float((np.abs(out - center) / bound).max())
        ok_ops = worst <= 1
        if not np.isnan(err_cpu):
            cpu = load(f"{folder}/cpuref/out.npy", out_dtype)
            slack = np.abs(center - ref_deq) + TOLERANCE[out_dtype] * np.abs(cpu).max()
            worst_cpu = float((np.abs(out - cpu) / (bound + slack)).max())
            ok_ops = ok_ops and worst_cpu <= 1
        tol_text = f"e4m3 bound x{worst:.2f}"
    else:
        tol = max(TOLERANCE[out_dtype], operand_tol)
        if case["softmax"] == "sas":
            tol = max(tol, SAS_THRESHOLD)
        ok_ops = err_deq <= tol and (np.isnan(err_cpu) or err_cpu <= tol)
        tol_text = f"tol {tol:.0e}"
    ok = ok_ops and rel_fro < 0.9
    line = (f"{'PASS' if ok else 'FAIL'} {name:34s} vs-dequant {err_deq:.1e} "
            f"vs-cpu {err_cpu:.1e} ({tol_text}) | vs-float rel_fro {rel_fro:.3f} "
            f"sqnr {sqnr:5.1f} dB | gpu {gpu_us:9.1f} us  sdpa-bf16 {sdpa_us:8.1f} us")
    return ok, line, gpu_us


def main():
    if sys.argv[1:] == ["--self-check"]:
        seed = int(os.environ.get("QATTN_SEED", int(time.time()) % 100000))
        print(f"e4m3 self-check: seed {seed} (QATTN_SEED={seed} repeats it)", flush=True)
        for line in e4m3_self_check(seed):
            print(f"e4m3 self-check: {line}")
        return
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
