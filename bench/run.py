#!/usr/bin/env python3
"""The performance benchmark, on the GPU machine (CUDA, PyTorch; no LLVM/MLIR):
qattn's compiled kernels against PyTorch peers on the decode and prefill shapes
that bench/cases.py compiled. Method, metrics and byte counts: bench/README.md.

First the copy bandwidth (a large device-to-device torch copy), then the xcheck
cases: the GPU correctness check of scripts/gpu-check/check.py on the CPU
artifact's quantization, and the GPU quantizer of torch_format.py compared bit
for bit with that quantization (and the GPU dequantizer with
python/qattn/format.py). Then, per timed case, with fresh seeded random float
Q/K/V (normal, the seed printed):
  1. quantize on the GPU (torch_format.py; --quantizer cpu runs the case's CPU
     artifact instead, about a minute per large case), and compare quantized
     operands and dequantized values with python/qattn/format.py on batch 0,
     the first 1024 tokens;
  2. run the CUDA artifact with qattn-run and check its output against float64
     attention of the dequantized operands (the tolerances of gpu-check); a
     failed check marks the case FAIL and skips its timing;
  3. time it: qattn-run --repeat --cold-l2 (median and minimum of CUDA-event
     kernel times, the L2 flushed by an untimed memset before each run);
  4. time the peers in this process, each on its own CUDA graph, inputs rotated
     among enough copies to exceed 4x the L2, CUDA events, median of --repeat:
     SDPA bf16 with the cuDNN backend and with the flash backend, and
     dequantize-then-SDPA (the quantized operands dequantized to bf16 by
     torch_format.py, then SDPA on the faster backend, timed end to end); each
     peer's output is checked first (float64 attention, rel. Frobenius error).
After the last case, the prefill cases' float inputs and float64 outputs go to
bench/jax_peer.py, run once in a process of its own: JAX's Pallas Mosaic GPU
attention (attention_mgpu) in bf16, checked, then timed by the host wall clock
over batches of calls (JAX exposes no CUDA events). If JAX or the kernel is
missing or refuses a shape, that peer is n/a with the reason; it never fails
the run (--pallas-budget bounds its time, 0 turns it off).
Writes results.json, results.md and the plots (matplotlib, if importable) into
--out. Exit status 1 if any check failed.

usage: run.py CASES_DIR QATTN_RUN [--only SUBSTRING] [--out DIR] [--seed N]
              [--repeat N] [--quantizer torch|cpu] [--keep] [--pallas-budget S]
"""
import argparse
import datetime
import importlib.util
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np
import torch
import torch.nn.functional as TF

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "scripts", "gpu-check"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check as gpucheck  # noqa: E402  (tolerances, the xcheck cases' correctness check)
import torch_format as T  # noqa: E402
from qattn import format as F  # noqa: E402

DEV = "cuda"
PEER_TOL = 2e-2  # rel. Frobenius error of a bf16 peer (bf16 inputs, bf16 output: ~4e-3)
ROTATE_L2 = 4  # inputs of a timed call rotate among copies that exceed this many L2s
SLICE_TOKENS = 1024  # tokens of batch 0 compared with python/qattn/format.py
PEERS = ("cudnn", "flash", "deq_sdpa")  # in this process, CUDA-event timed
PEER_TITLE = {"cudnn": "SDPA cuDNN", "flash": "SDPA flash", "deq_sdpa": "deq+SDPA",
              "pallas": "Pallas MGPU"}
JAX_PEER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jax_peer.py")
PALLAS_GRACE_S = 60  # jax_peer.py is killed this long after its own time budget


def family_peers(family):
    """The peers of a family's table and plot: prefill adds JAX's Pallas kernel."""
    return PEERS + ("pallas",) if family == "prefill" else PEERS


def first_line(e, n=160):
    return f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:n]}"


def cdiv(a, b):
    return -(-a // b)


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}\n{r.stdout}\n{r.stderr}")
    return r.stdout


# ------------------------------------------------------------------------------------------
# Byte and operation counts (bench/README.md)
# ------------------------------------------------------------------------------------------

OUT_BYTES = {"f32": 4, "f16": 2, "bf16": 2}


def kernel_bytes(c):
    """What the kernel must move at least: Q (int8 + f32 block scales), K and V
    (packed codes + f32 stage-1 scales + int8 stage-2 scales and zero points),
    and O."""
    b, hq, hkv, nq, nk, d = (c[k] for k in ("batch", "hq", "hkv", "nq", "nk", "d"))
    bits = c["bits"] * hkv if len(c["bits"]) == 1 else c["bits"]
    codes = b * nk * d * sum(bits) // 8
    s1 = b * hkv * cdiv(nk, c["block"]) * 4
    s2z2 = 2 * b * hkv * cdiv(nk, c["group"]) * d
    q = b * hq * nq * d + b * hq * cdiv(nq, c["block"]) * 4
    o = b * hq * nq * d * OUT_BYTES[c["out"]]
    return q + 2 * (codes + s1 + s2z2) + o


def bf16_bytes(c, kv_heads):
    """The bf16 peers' Q, K, V and O (K/V with KV_HEADS heads)."""
    b, hq, nq, nk, d = (c[k] for k in ("batch", "hq", "nq", "nk", "d"))
    return 2 * (2 * b * hq * nq * d + 2 * b * kv_heads * nk * d)


def attention_ops(c):
    """4 B H Nq Nk d (two products, a multiply and an add each), halved if causal."""
    ops = 4 * c["batch"] * c["hq"] * c["nq"] * c["nk"] * c["d"]
    return ops / 2 if c["causal"] else ops


# ------------------------------------------------------------------------------------------
# Quantization, dequantization, references
# ------------------------------------------------------------------------------------------


def supported_by_torch_quantizer(c):
    return c["q_int8"] and c["bits"] and not c["buffer"] and all(b in (2, 4) for b in c["bits"])


def quantize(c, qf, kf, vf):
    """The case's quantized operands (GPU tensors), torch_format.py."""
    blk, grp = c["block"], c["group"]
    ops = {}
    ops["q8"], ops["qs"] = T.stage1_quantize(qf, blk)
    for x, data in (("k", kf), ("v", vf)):
        q8, ops[x + "s"] = T.stage1_quantize(data, blk)
        ops[x + "p"], ops[x + "g"], ops[x + "z"] = T.stage2_quantize(q8, c["bits"], grp)
        del q8
    return ops


def dequantized(c, ops, dtype=torch.float32):
    blk, grp, bits = c["block"], c["group"], c["bits"]
    q = T.dequantize_q(ops["q8"], ops["qs"], blk, dtype)
    k, v = (T.dequantize_kv(ops[x + "p"], ops[x + "s"], ops[x + "g"], ops[x + "z"], bits,
                            blk, grp, dtype) for x in "kv")
    return q, k, v


def as_np(t):
    return t.detach().cpu().numpy()


def same_bits(a, b):
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    return a.shape == b.shape and a.dtype.itemsize == b.dtype.itemsize and \
        a.view(np.uint8).tobytes() == b.view(np.uint8).tobytes()


def format_slice_check(c, qf, kf, vf, ops, deq):
    """Quantized operands and dequantized values of batch 0, first SLICE_TOKENS
    tokens, against python/qattn/format.py. Blocks and groups are independent,
    so a block-aligned slice quantizes alone as in the whole. Returns the names
    that differ."""
    blk, grp, bits = c["block"], c["group"], c["bits"]
    bad = []
    nq, nk = min(c["nq"], SLICE_TOKENS), min(c["nk"], SLICE_TOKENS)
    q8, qs = F.stage1_quantize(as_np(qf[:1, :, :nq]), blk)
    if not same_bits(q8, as_np(ops["q8"][:1, :, :nq])):
        bad.append("q8")
    if not same_bits(qs, as_np(ops["qs"][:1, :, :cdiv(nq, blk)])):
        bad.append("qs")
    if not same_bits(F.stage1_dequantize(q8, qs, blk), as_np(deq[0][:1, :, :nq])):
        bad.append("dequantized q")
    for x, data, dx in (("k", kf, deq[1]), ("v", vf, deq[2])):
        x8, s1 = F.stage1_quantize(as_np(data[:1, :, :nk]), blk)
        packed, s2, z2 = F.stage2_quantize(x8, bits, grp)
        want = {x + "p": packed, x + "s": s1, x + "g": s2, x + "z": z2}
        got = {x + "p": ops[x + "p"][:1, :nk], x + "s": ops[x + "s"][:1, :, :cdiv(nk, blk)],
               x + "g": ops[x + "g"][:1, :, :cdiv(nk, grp)],
               x + "z": ops[x + "z"][:1, :, :cdiv(nk, grp)]}
        bad += [n for n in want if not same_bits(want[n], as_np(got[n]))]
        ref = F.dequantized_kv(s1, blk, packed=packed, s2=s2, z2=z2, bits=bits, group=grp)
        if not same_bits(ref, as_np(dx[:1, :, :nk])):
            bad.append("dequantized " + x)
    return bad


def attention64(q, k, v, scale, causal, budget=1 << 31):
    """float64 attention on the GPU, [B, Hq, Nq, d] from K/V [B, Hkv, Nk, d]:
    query head h reads KV head h // (Hq / Hkv); causal masks key j for query i
    when j > i + Nk - Nq. Chunks of (batch, KV head) keep the scores < BUDGET bytes."""
    b, hq, nq, d = q.shape
    hkv, nk = k.shape[1], k.shape[2]
    r = hq // hkv
    qg = q.reshape(b * hkv, r * nq, d)
    kg, vg = k.reshape(b * hkv, nk, d), v.reshape(b * hkv, nk, d)
    out = torch.empty(b * hkv, r * nq, d, dtype=torch.float64, device=q.device)
    mask = None
    if causal:
        row = torch.arange(nq, device=q.device).repeat(r)
        mask = torch.arange(nk, device=q.device)[None, :] > (row[:, None] + nk - nq)
    step = max(1, budget // (r * nq * nk * 8))
    for i in range(0, b * hkv, step):
        s = torch.matmul(qg[i:i + step].double(), kg[i:i + step].double().transpose(1, 2))
        s *= scale
        if mask is not None:
            s.masked_fill_(mask, float("-inf"))
        out[i:i + step] = torch.matmul(torch.softmax(s, -1), vg[i:i + step].double())
        del s
    return out.view(b, hq, nq, d)


def rel_max(out, ref):
    return float((out.double() - ref).abs().max() / ref.abs().max().clamp_min(1e-30))


def rel_fro(out, ref):
    return float(torch.linalg.vector_norm(out.double() - ref) / torch.linalg.vector_norm(ref))


# ------------------------------------------------------------------------------------------
# Timing
# ------------------------------------------------------------------------------------------


def event_times(fns, warmup, repeat):
    """(median, min) microseconds of REPEAT calls, each between two CUDA events,
    enqueued back to back; call i runs fns[i % len(fns)]."""
    for i in range(warmup):
        fns[i % len(fns)]()
    torch.cuda.synchronize()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(repeat)]
    for i, (s, e) in enumerate(events):
        s.record()
        fns[i % len(fns)]()
        e.record()
    torch.cuda.synchronize()
    us = [s.elapsed_time(e) * 1e3 for s, e in events]
    return statistics.median(us), min(us)


def graphed(fns):
    """One CUDA graph that calls every fn once, in order, so that a timed sample
    sees GPU time and not PyTorch's launch overhead. Returns (the graph's replay,
    the outputs of the captured calls)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for fn in fns:
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        outs = [fn() for fn in fns]
    return g.replay, outs


def copies_for(nbytes, l2):
    return max(1, min(64, cdiv(ROTATE_L2 * l2, max(nbytes, 1))))


def copy_bandwidth(nbytes=2 << 30, repeat=30):
    """Device-to-device copy bandwidth, bytes read + bytes written per second."""
    src = torch.ones(nbytes, dtype=torch.uint8, device=DEV)
    dst = torch.empty_like(src)
    med, _ = event_times([lambda copy=dst.copy_, s=src: copy(s)], 5, repeat)
    del src, dst
    torch.cuda.empty_cache()
    return 2 * nbytes / (med * 1e-6)


def qattn_time(qattn_run, folder, inputs, repeat):
    log = run([qattn_run, os.path.join(folder, "cuda"), "--function", "attention", "--repeat",
               str(repeat), "--cold-l2", "--quiet"] + inputs)
    m = re.search(r"time: median ([0-9.]+) us, min ([0-9.]+) us", log)
    if not m:
        raise RuntimeError(f"no time line in qattn-run's output:\n{log}")
    return float(m.group(1)), float(m.group(2))


# ------------------------------------------------------------------------------------------
# Peers
# ------------------------------------------------------------------------------------------


def sdpa(q, k, v, causal, backend, scale, mode, mask):
    """SDPA on one backend ("cudnn", "flash", or None: PyTorch's choice). Causal
    attention with Nq < Nk is aligned bottom-right as qattn's: SDPA's is_causal
    aligns top-left, so flash runs through its own op (which aligns bottom-right,
    as torch.nn.attention.bias.causal_lower_right does) and cuDNN gets the
    boolean mask MASK."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    nq, nk = q.shape[2], k.shape[2]
    if mode == "repeat_interleave" and q.shape[1] != k.shape[1]:
        k, v = repeat_heads(k, q.shape[1] // k.shape[1]), repeat_heads(v, q.shape[1] // k.shape[1])
    if causal and nq < nk and backend == "flash":
        return torch.ops.aten._scaled_dot_product_flash_attention(
            q, k, v, 0.0, True, False, scale=scale)[0]
    call = lambda: TF.scaled_dot_product_attention(
        q, k, v, attn_mask=mask if causal and nq < nk else None,
        is_causal=causal and nq == nk, scale=scale, enable_gqa=mode == "enable_gqa")
    if backend is None:
        return call()
    with sdpa_kernel([{"cudnn": SDPBackend.CUDNN_ATTENTION,
                       "flash": SDPBackend.FLASH_ATTENTION}[backend]]):
        return call()


def repeat_heads(x, r):
    """x.repeat_interleave(r, 1) without the host synchronization that can come
    with repeat_interleave (and would break a CUDA-graph capture)."""
    b, h, n, d = x.shape
    return x[:, :, None].expand(b, h, r, n, d).reshape(b, h * r, n, d)


def gqa_modes(c, backend):
    """How the peer reads Hkv < Hq KV heads, in order of preference: SDPA's
    enable_gqa, the backend taking fewer KV heads as they are, or K/V repeated
    to Hq heads (repeat_interleave, before the timed call: the peer then reads
    Hq/Hkv times the KV bytes)."""
    if c["hq"] == c["hkv"]:
        return ["mha"]
    if backend == "flash" and c["causal"] and c["nq"] < c["nk"]:
        return ["heads", "repeat_interleave"]
    return ["enable_gqa", "heads", "repeat_interleave"]


def time_peer(make_inputs, call, ref, nbytes, l2, repeat):
    """Checks CALL on the first copy of the inputs against REF, then times it:
    each sample calls it once on each of enough input copies to exceed ROTATE_L2
    L2s (one CUDA graph), and counts the sample's time over the copies. Returns
    the peer's result dict."""
    ncopies = copies_for(nbytes, l2)
    inputs = [make_inputs() for _ in range(ncopies)]
    fns = [lambda x=x: call(*x) for x in inputs]
    out = fns[0]()  # eager first: an unsupported call fails here, outside a capture
    torch.cuda.synchronize()
    err = rel_fro(out, ref)
    del out
    if not err <= PEER_TOL:
        return {"ok": False, "error": f"output check failed: rel_fro {err:.2e} > {PEER_TOL}"}
    try:
        sample, outs = graphed(fns)
        sample()
        torch.cuda.synchronize()
        err = max(err, rel_fro(outs[0], ref))  # the graph computes the same
        del outs
        launch = "cuda-graph"
    except Exception as e:  # eager launches: host overhead included when kernels are short
        torch.cuda.synchronize()
        sample = lambda: [fn() for fn in fns]
        launch = f"eager (graph capture failed: {str(e).splitlines()[0][:100]})"
    if not err <= PEER_TOL:
        return {"ok": False, "error": f"CUDA-graph output check failed: rel_fro {err:.2e}"}
    med, mn = event_times([sample], 3, repeat)
    return {"ok": True, "median_us": med / ncopies, "min_us": mn / ncopies, "rel_fro": err,
            "copies": ncopies, "launch": launch}


def bf16_peer(c, backend, qf, kf, vf, ref_float, scale, mask, l2, repeat):
    errors = []
    for mode in gqa_modes(c, backend):
        heads = c["hq"] if mode == "repeat_interleave" else c["hkv"]

        def make_inputs(mode=mode):
            q, k, v = (x.to(torch.bfloat16) for x in (qf, kf, vf))
            if mode == "repeat_interleave":
                k, v = (repeat_heads(x, c["hq"] // c["hkv"]) for x in (k, v))
            return q, k, v

        call = lambda q, k, v, mode=mode: sdpa(q, k, v, c["causal"], backend, scale,
                                               "heads" if mode == "repeat_interleave" else mode,
                                               mask)
        try:
            res = time_peer(make_inputs, call, ref_float, bf16_bytes(c, heads), l2, repeat)
        except Exception as e:
            torch.cuda.synchronize()
            errors.append(f"{mode}: {type(e).__name__}: {str(e).splitlines()[0][:160]}")
            continue
        res["gqa"] = mode
        res["bytes"] = bf16_bytes(c, heads)
        if res["ok"]:
            return res
        errors.append(f"{mode}: {res['error']}")
    return {"ok": False, "error": "; ".join(errors)}


def deq_peer(c, ops, ref_deq, backend, mode, scale, mask, l2, repeat):
    """Dequantize Q, K and V from the quantized operands to bf16 (torch_format.py,
    eager PyTorch), then SDPA; timed end to end."""
    def make_inputs():
        return ({n: t.clone() for n, t in ops.items()},)

    def call(o):
        q, k, v = dequantized(c, o, torch.bfloat16)
        return sdpa(q, k, v, c["causal"], backend, scale, mode, mask)

    try:
        res = time_peer(make_inputs, call, ref_deq, kernel_bytes(c), l2, repeat)
    except Exception as e:
        torch.cuda.synchronize()
        return {"ok": False, "error": f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"}
    res["sdpa"] = f"{backend or 'default'}, {mode}"
    return res


def pallas_root(args):
    return os.path.join(args.work or args.cases, "pallas_peer")


def stage_pallas(c, qf, kf, vf, ref_float, scale, args, requests):
    """Writes the float Q/K/V the PyTorch peers were given and the float64
    attention on them (as f32 .npy, [B, H, N, d]) for bench/jax_peer.py, and
    queues the case in REQUESTS. Returns the peer's placeholder result."""
    if args.pallas_budget <= 0:
        return {"ok": False, "error": "not run (--pallas-budget 0)", "reason": "turned off"}
    if importlib.util.find_spec("jax") is None:
        return {"ok": False, "error": "JAX is not installed for this Python",
                "reason": "JAX not installed"}
    if c["nq"] != c["nk"]:
        return {"ok": False, "error": "Nq != Nk: not a prefill shape", "reason": "Nq != Nk"}
    folder = os.path.join(pallas_root(args), c["name"])
    paths = {}
    try:
        os.makedirs(folder, exist_ok=True)
        for n, t in (("q", qf), ("k", kf), ("v", vf), ("ref", ref_float)):
            paths[n] = os.path.join(folder, n + ".npy")
            np.save(paths[n], as_np(t.float()))
    except Exception as e:  # disk full, ...: this peer only
        shutil.rmtree(folder, ignore_errors=True)
        return {"ok": False, "error": f"inputs not written: {first_line(e)}",
                "reason": "inputs not written"}
    requests.append({"name": c["name"], "B": c["batch"], "H": c["hq"], "Hkv": c["hkv"],
                     "N": c["nq"], "d": c["d"], "causal": c["causal"], "scale": scale,
                     "repeat": args.repeat, "warmup": 3, **paths})
    return {"ok": False, "pending": True, "error": "not run yet"}


def pallas_peer(requests, args, env):
    """Runs bench/jax_peer.py once on the staged cases, in its own process (JAX
    must not share PyTorch's: it holds GPU memory of its own), with JAX's GPU
    memory preallocation off and the rest of the environment inherited. Its
    console goes to OUT/jax_peer.log. Returns (what it says of JAX, {case name:
    result}), a not-ok result for each case it did not report."""
    root = pallas_root(args)
    req_path, res_path = os.path.join(root, "request.json"), os.path.join(root, "result.json")
    request = {"tolerance": PEER_TOL, "budget_s": args.pallas_budget, "l2_bytes": env["l2"],
               "rotate_l2": ROTATE_L2, "calls_per_batch": 10, "cases": requests}
    os.makedirs(root, exist_ok=True)
    with open(req_path, "w") as f:
        json.dump(request, f, indent=1)
    if os.path.exists(res_path):
        os.remove(res_path)
    torch.cuda.empty_cache()  # leave the GPU's memory to the JAX process
    limit = args.pallas_budget + PALLAS_GRACE_S
    stamp = time.time()
    try:
        p = subprocess.run([sys.executable, JAX_PEER, req_path, res_path], capture_output=True,
                           text=True, timeout=limit,
                           env=dict(os.environ, XLA_PYTHON_CLIENT_PREALLOCATE="false"))
        status, log = f"exit status {p.returncode}", p.stdout + p.stderr
    except subprocess.TimeoutExpired as e:
        status = f"killed after {limit} s"
        log = "".join(x.decode(errors="replace") if isinstance(x, bytes) else (x or "")
                      for x in (e.stdout, e.stderr))
    except Exception as e:
        status, log = f"not started: {first_line(e)}", ""
    with open(os.path.join(args.out, "jax_peer.log"), "w") as f:
        f.write(log + ("" if log.endswith("\n") or not log else "\n") + f"jax_peer.py: {status}\n")
    try:
        got = json.load(open(res_path))
    except Exception:
        got = {}
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    meta = {k: got[k] for k in ("jax", "backend", "device", "api", "api_notes") if k in got}
    meta.update(status=status, wall_s=round(time.time() - stamp, 1))
    tail = (log.strip().splitlines() or [""])[-1][:160] if status.startswith("exit") else ""
    missing = {"ok": False, "reason": f"no result ({status})",
               "error": f"no result from jax_peer.py ({status}{': ' + tail if tail else ''}; "
                        "see jax_peer.log)"}
    return meta, {q["name"]: got.get("cases", {}).get(q["name"], missing) for q in requests}


# ------------------------------------------------------------------------------------------
# Cases
# ------------------------------------------------------------------------------------------


def save_operands(c, ops, folder):
    os.makedirs(folder, exist_ok=True)
    for n in c["operands"]:
        np.save(os.path.join(folder, n + ".npy"), as_np(ops[n]))
    return sum((["--input", f"{n}={folder}/{n}.npy"] for n in c["operands"]), [])


def kernels(folder):
    manifest = json.load(open(os.path.join(folder, "cuda", "manifest.json")))
    return [f"{l['kernel']} grid {l['grid']} block {l['block']}"
            for fn in manifest["functions"] for l in fn["launches"]]


def xcheck_case(c, folder, args, seed):
    """gpu-check's correctness check on the CPU artifact's quantization, then the
    GPU quantizer and dequantizer against it, bit for bit."""
    ok, line, _ = gpucheck.check_case(c, folder, args.qattn_run, seed)
    rundir = os.path.join(folder, "run")
    t = {n: np.load(os.path.join(rundir, n + ".npy")) for n in c["operands"] + ["q", "k", "v"]}
    qf, kf, vf = (torch.from_numpy(t[n]).to(DEV) for n in "qkv")
    ops = quantize(c, qf, kf, vf)
    bad = [n for n in c["operands"] if not same_bits(as_np(ops[n]), t[n])]
    cpu_ops = {n: torch.from_numpy(t[n]).to(DEV) for n in c["operands"]}
    for n in ("kp", "vp", "kg", "vg"):
        cpu_ops[n] = cpu_ops[n].view(torch.uint8)
    want = gpucheck.dequantize(c, t)
    got = dequantized(c, cpu_ops)
    bad += [f"dequantized {x}" for x, w, g in zip("qkv", want, got)
            if not same_bits(np.asarray(w, np.float32), as_np(g))]
    verdict = "bit-exact" if not bad else "DIFFERS in " + ", ".join(bad)
    return {"name": c["name"], "family": "xcheck", "ok": ok and not bad, "seed": seed,
            "line": line, "quantizer": verdict}


def bench_case(c, folder, args, seed, env, pallas):
    b, hq, hkv, nq, nk, d = (c[k] for k in ("batch", "hq", "hkv", "nq", "nk", "d"))
    scale = 1.0 / math.sqrt(d)
    res = {"name": c["name"], "family": c["family"], "sweep": c["sweep"], "seed": seed,
           "shape": {k: c[k] for k in ("batch", "hq", "hkv", "nq", "nk", "d", "bits", "causal")},
           "kernels": kernels(folder), "bytes": kernel_bytes(c), "ops": attention_ops(c)}
    # qattn-run --cold-l2 flushes the L2 before each timed run.
    res["warm_l2"] = False
    data = os.path.join(args.work or folder, "data" if args.work is None else c["name"])
    shutil.rmtree(data, ignore_errors=True)
    stamp = time.time()
    try:
        if args.quantizer == "torch":
            g = torch.Generator(device=DEV)
            g.manual_seed(seed)
            qf = torch.randn((b, hq, nq, d), generator=g, device=DEV)
            kf = torch.randn((b, hkv, nk, d), generator=g, device=DEV)
            vf = torch.randn((b, hkv, nk, d), generator=g, device=DEV)
            ops = quantize(c, qf, kf, vf)
            inputs = save_operands(c, ops, data)
        else:
            run([args.qattn_run, os.path.join(folder, "cpu"), "--function", "quantize", "--seed",
                 str(seed), "--output-dir", data, "--quiet", "--dist", "normal"])
            load = lambda n: torch.from_numpy(np.load(os.path.join(data, n + ".npy"))).to(DEV)
            qf, kf, vf = (load(n) for n in "qkv")
            ops = {n: load(n) for n in c["operands"]}
            for n in ("kp", "vp", "kg", "vg"):
                ops[n] = ops[n].view(torch.uint8)
            inputs = sum((["--input", f"{n}={data}/{n}.npy"] for n in c["operands"]), [])
        res["quantize_s"] = time.time() - stamp
        deq = dequantized(c, ops)
        bad = format_slice_check(c, qf, kf, vf, ops, deq)
        res["format_check"] = "bit-exact" if not bad else "DIFFERS in " + ", ".join(bad)

        # Check the kernel before timing it.
        run([args.qattn_run, os.path.join(folder, "cuda"), "--function", "attention",
             "--output-dir", os.path.join(data, "gpu"), "--quiet"] + inputs)
        out = torch.from_numpy(gpucheck.load(os.path.join(data, "gpu", "out.npy"), c["out"]))
        out = out.to(DEV)
        ref_deq = attention64(*deq, scale, c["causal"])
        ref_float = attention64(qf, kf, vf, scale, c["causal"])
        tol = max(gpucheck.TOLERANCE[c["out"]], gpucheck.operand_tolerance(folder))
        finite = bool(torch.isfinite(out).all())
        res["vs_dequant"] = rel_max(out, ref_deq) if finite else float("nan")
        res["tolerance"] = tol
        err = out.double() - ref_float
        res["sqnr_vs_float_db"] = float(10 * torch.log10((ref_float ** 2).sum() / (err ** 2).sum()))
        del out, err
        res["ok"] = finite and res["vs_dequant"] <= tol and not bad
        if not res["ok"]:
            res["error"] = (f"check failed: vs-dequant {res['vs_dequant']:.1e} (tol {tol:.0e})"
                            + ("" if finite else ", non-finite output")
                            + ("" if not bad else f", torch quantizer {res['format_check']}"))
            return res

        res["qattn"] = dict(zip(("median_us", "min_us"),
                                qattn_time(args.qattn_run, folder, inputs, args.repeat)))
        del deq

        mask = None
        if c["causal"] and nq < nk:
            mask = torch.arange(nk, device=DEV)[None, :] <= (
                torch.arange(nq, device=DEV)[:, None] + nk - nq)
        res["peers"] = {}
        for backend in ("cudnn", "flash"):
            res["peers"][backend] = bf16_peer(c, backend, qf, kf, vf, ref_float, scale, mask,
                                              env["l2"], args.repeat)
        best = [p for p in ("cudnn", "flash") if res["peers"][p]["ok"]]
        best = min(best, key=lambda p: res["peers"][p]["median_us"]) if best else None
        mode = res["peers"][best]["gqa"] if best else ("enable_gqa" if hq != hkv else "mha")
        res["peers"]["deq_sdpa"] = deq_peer(c, ops, ref_deq, best, mode, scale, mask, env["l2"],
                                            args.repeat)
        if c["family"] == "prefill":  # timed after the last case, by bench/jax_peer.py
            res["peers"]["pallas"] = stage_pallas(c, qf, kf, vf, ref_float, scale, args, pallas)
        return res
    finally:
        if not args.keep:
            shutil.rmtree(data, ignore_errors=True)
        res["wall_s"] = time.time() - stamp


def metrics(r, env):
    """Adds the derived figures: decode TB/s and fraction of the copy bandwidth,
    prefill TOP/s, and per peer its time over qattn's (above 1: qattn faster)."""
    if not r.get("ok") or "qattn" not in r:
        return
    t = r["qattn"]["median_us"] * 1e-6
    r["qattn"]["tbps"] = r["bytes"] / t / 1e12
    r["qattn"]["copy_fraction"] = r["bytes"] / t / env["copy_bps"]
    r["qattn"]["tops"] = r["ops"] / t / 1e12
    for p in r["peers"].values():
        if p["ok"]:
            p["speedup_of_qattn"] = p["median_us"] / r["qattn"]["median_us"]
            p["tops"] = r["ops"] / (p["median_us"] * 1e-6) / 1e12
            if "bytes" in p:
                p["tbps"] = p["bytes"] / (p["median_us"] * 1e-6) / 1e12


# ------------------------------------------------------------------------------------------
# Reports
# ------------------------------------------------------------------------------------------


def peer_cell(p, prefill):
    if not p["ok"]:
        return "n/a"
    extra = f"{p['tops']:.0f} TOP/s, " if prefill else ""
    return f"{p['median_us']:.1f} ({extra}{p['speedup_of_qattn']:.2f}x)"


def table(rows, family):
    """Markdown table of one family's timed cases."""
    prefill = family == "prefill"
    peers = family_peers(family)
    head = ["case", "MB moved" if not prefill else "TOP", "qattn us (min)",
            "TOP/s" if prefill else "TB/s", "% copy" if not prefill else "% of best peer"]
    head += [f"{PEER_TITLE[p]} us ({'TOP/s, ' if prefill else ''}qattn speedup)" for p in peers]
    head += ["note"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        if not r.get("ok"):
            lines.append(f"| {r['name']} | FAIL: {r.get('error', '')} |" + " |" * (len(head) - 2))
            continue
        q = r["qattn"]
        notes = []
        if r["warm_l2"]:
            notes.append("warm L2")
        for p in PEERS[:2]:
            if r["peers"][p]["ok"] and r["peers"][p]["gqa"] not in ("mha", "enable_gqa"):
                notes.append(f"{p}: GQA by {r['peers'][p]['gqa']}")
        pallas = r["peers"].get("pallas")
        if prefill and pallas:
            if not pallas["ok"]:
                notes.append(f"pallas: {pallas.get('reason') or pallas['error'][:60]}")
            elif pallas.get("dtype") != "bfloat16":
                notes.append(f"pallas: {pallas.get('dtype')} inputs")
        cells = [r["name"]]
        if prefill:
            # The best of this process's CUDA-event-timed peers (PEERS), as before
            # the Pallas peer came, which is timed by the host clock.
            best = min((r["peers"][p]["median_us"] for p in PEERS if r["peers"][p]["ok"]),
                       default=None)
            cells += [f"{r['ops'] / 1e12:.3g}", f"{q['median_us']:.1f} ({q['min_us']:.1f})",
                      f"{q['tops']:.1f}",
                      f"{100 * best / q['median_us']:.0f}%" if best else "n/a"]
        else:
            cells += [f"{r['bytes'] / 1e6:.1f}", f"{q['median_us']:.1f} ({q['min_us']:.1f})",
                      f"{q['tbps']:.2f}", f"{100 * q['copy_fraction']:.0f}%"]
        cells += [peer_cell(r["peers"].get(p, {"ok": False}), prefill) for p in peers]
        cells.append(", ".join(notes))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def peer_notes(rows):
    """Peer failures and how each peer read GQA KV heads, one line each."""
    lines = []
    for r in rows:
        for p, v in r.get("peers", {}).items():
            if not v["ok"]:
                err = v["error"] if p != "pallas" or len(v["error"]) <= 400 else \
                    v["error"][:400] + " ... (results.json has the rest)"
                lines.append(f"- {r['name']}, {PEER_TITLE[p]}: {err}")
            elif p != "pallas" and v.get("launch") != "cuda-graph":
                lines.append(f"- {r['name']}, {PEER_TITLE[p]}: {v['launch']}")
    return lines


def plots(results, out, copy_tbps):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import matplotlib.ticker
    except ImportError:
        print("plots: matplotlib is not importable, no PNG written")
        return []
    written = []
    colors = {"qattn": "C3", "cudnn": "C0", "flash": "C1", "deq_sdpa": "C2", "pallas": "C4"}
    for sweep, xkey in (("decode_context", "nk"), ("prefill_causal", "nk")):
        rows = sorted((r for r in results if r.get("sweep") == sweep and r.get("ok")),
                      key=lambda r: r["shape"][xkey])
        if len(rows) < 2:
            continue
        xs = [r["shape"][xkey] for r in rows]
        series = {"qattn": [r["qattn"]["median_us"] for r in rows]}
        for p in family_peers(rows[0]["family"]):
            series[p] = [r["peers"][p]["median_us"] if r["peers"].get(p, {}).get("ok") else None
                         for r in rows]
        title = {"qattn": "qattn", **PEER_TITLE}
        fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
        decode = sweep.startswith("decode")
        for name, ys in series.items():
            pts = [(x, y) for x, y in zip(xs, ys) if y is not None]
            if not pts:
                continue
            px, py = zip(*pts)
            if decode:  # achieved bandwidth of the bytes each one must move
                nb = {r["shape"][xkey]: (r["bytes"] if name in ("qattn", "deq_sdpa")
                                         else r["peers"][name].get("bytes")) for r in rows}
                rate = [nb[x] / (y * 1e-6) / 1e12 for x, y in pts]
            else:
                ops = {r["shape"][xkey]: r["ops"] for r in rows}
                rate = [ops[x] / (y * 1e-6) / 1e12 for x, y in pts]
            for a, ys in ((axes[0], py), (axes[1], rate)):
                a.plot(px, ys, "-", color=colors[name], label=title[name])
                a.plot(px, ys, "o", color=colors[name])
                if name == "qattn":  # hollow markers: timed on a warm L2
                    warm = [(x, y) for x, y, r in zip(px, ys, rows) if r["warm_l2"]]
                    if warm:
                        a.plot(*zip(*warm), "o", color="w", markeredgecolor=colors[name],
                               label="qattn, warm L2" if a is axes[0] else None)
        shape = rows[0]["shape"]
        bits = "/".join(map(str, sorted(set(shape["bits"]))))
        what = (f"decode B{shape['batch']} Hq{shape['hq']} Hkv{shape['hkv']} d{shape['d']}, "
                f"{bits}-bit KV" if decode else
                f"prefill B{shape['batch']} H{shape['hq']} d{shape['d']} causal, 4-bit KV")
        axes[0].set(xscale="log", yscale="log", xlabel="context length Nk" if decode else "N",
                    ylabel="time (us, median)", title=what)
        axes[1].set(xscale="log", xlabel=axes[0].get_xlabel(),
                    ylabel="TB/s of the bytes each must move" if decode else "effective TOP/s",
                    title="achieved bandwidth" if decode else "4 B H N^2 d / 2 / time")
        if decode:
            axes[1].axhline(copy_tbps, color="k", ls="--", lw=0.8, label="d2d copy")
        for a in axes:
            a.set_xticks(xs)
            a.set_xticklabels([f"{x // 1024}K" for x in xs])
            a.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
            a.grid(True, which="major", alpha=0.3)
            a.legend()
        fig.tight_layout()
        path = os.path.join(out, sweep + ".png")
        fig.savefig(path, dpi=120)
        plt.close(fig)
        written.append(path)
    return written


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cases")
    ap.add_argument("qattn_run")
    ap.add_argument("--only", default="", help="timed cases whose name contains this")
    ap.add_argument("--out", default="bench-out")
    ap.add_argument("--seed", type=int, default=int(time.time()) % 100000)
    ap.add_argument("--repeat", type=int, default=50, help="timed runs (qattn and each peer)")
    ap.add_argument("--quantizer", choices=("torch", "cpu"), default="torch")
    ap.add_argument("--work", default=None, help="data folder (default CASES/<case>/data)")
    ap.add_argument("--keep", action="store_true", help="keep the operand .npy files")
    ap.add_argument("--pallas-budget", type=int, default=90,
                    help="seconds for the Pallas MGPU peer (bench/jax_peer.py), 0: not run")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    cases = json.load(open(os.path.join(args.cases, "cases.json")))

    props = torch.cuda.get_device_properties(0)
    env = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
           "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(),
           "l2": getattr(props, "L2_cache_size", 50 << 20), "seed": args.seed,
           "date": datetime.datetime.now().isoformat(timespec="seconds"),
           "command": " ".join(sys.argv), "repeat": args.repeat, "quantizer": args.quantizer}
    try:
        env["driver"] = run(["nvidia-smi", "--query-gpu=driver_version",
                             "--format=csv,noheader"]).strip().splitlines()[0]
    except Exception:
        env["driver"] = "?"
    env["copy_bps"] = copy_bandwidth()
    print(f"bench: {env['device']}, driver {env['driver']}, torch {env['torch']} (CUDA "
          f"{env['cuda']}, cuDNN {env['cudnn']}), L2 {env['l2'] / 2**20:.0f} MiB, "
          f"seed {args.seed}", flush=True)
    print(f"bench: device-to-device copy {env['copy_bps'] / 1e12:.2f} TB/s "
          f"(2 GiB read + 2 GiB written, median of 30)", flush=True)

    results, failures, pallas = [], 0, []
    for i, c in enumerate(cases):
        folder = os.path.join(args.cases, c["name"])
        seed = args.seed + i
        xcheck = c["family"] == "xcheck"
        if xcheck and args.quantizer != "torch":
            continue
        if not xcheck and args.only not in c["name"]:
            continue
        try:
            if xcheck:
                r = xcheck_case(c, folder, args, seed)
                print(f"{r['line']} | GPU quantizer vs CPU artifact: {r['quantizer']}", flush=True)
            else:
                if args.quantizer == "torch" and not supported_by_torch_quantizer(c):
                    raise RuntimeError("the torch quantizer does not cover this case; "
                                       "use --quantizer cpu")
                r = bench_case(c, folder, args, seed, env, pallas)
                metrics(r, env)
                print(progress_line(r), flush=True)
        except Exception as e:  # report and go on with the other cases
            try:
                torch.cuda.synchronize()
            except Exception:
                pass
            r = {"name": c["name"], "family": c["family"], "sweep": c.get("sweep", ""),
                 "ok": False, "seed": seed, "error": f"{type(e).__name__}: {e}"}
            print(f"FAIL {c['name']} (seed {seed}): {r['error']}", flush=True)
        failures += not r["ok"]
        results.append(r)
        torch.cuda.empty_cache()  # the case's tensors are gone: give their memory back

    if pallas:
        print(f"bench: Pallas MGPU peer (bench/jax_peer.py) on {len(pallas)} prefill cases",
              flush=True)
        try:
            env["pallas"], got = pallas_peer(pallas, args, env)
        except Exception as e:  # this peer never fails the run
            env["pallas"] = {"status": f"not run: {first_line(e)}", "wall_s": 0.0}
            got = {q["name"]: {"ok": False, "error": env["pallas"]["status"],
                               "reason": "not run"} for q in pallas}
        for r in results:
            if r.get("ok") and r["name"] in got:
                r["peers"]["pallas"] = got[r["name"]]
                metrics(r, env)
                print(pallas_line(r), flush=True)
        print(f"bench: Pallas MGPU peer: {env['pallas']['status']}, "
              f"{env['pallas']['wall_s']:.0f} s (console in {args.out}/jax_peer.log)", flush=True)

    report(results, env, args.out)
    print(f"bench: {failures} of {len(results)} cases failed")
    sys.exit(1 if failures else 0)


def progress_line(r):
    if not r["ok"]:
        return f"FAIL {r['name']} (seed {r['seed']}): {r.get('error', '')}"
    q = r["qattn"]
    fig = (f"{q['tops']:7.1f} TOP/s" if r["family"] == "prefill"
           else f"{q['tbps']:5.2f} TB/s ({100 * q['copy_fraction']:3.0f}% copy)")
    peers = "  ".join(f"{p} {v['median_us']:.1f}" if v["ok"] else f"{p} n/a"
                      for p, v in r["peers"].items() if not v.get("pending"))
    return (f"PASS {r['name']:40s} seed {r['seed']} vs-dequant {r['vs_dequant']:.1e} "
            f"(tol {r['tolerance']:.0e}) | qattn {q['median_us']:9.1f} us {fig}"
            f"{' [warm L2]' if r['warm_l2'] else ''} | {peers} us | {r['wall_s']:.0f} s")


def pallas_line(r):
    v = r["peers"]["pallas"]
    if not v["ok"]:
        return f"pallas {r['name']:40s} n/a: {v.get('reason') or v['error'][:80]}"
    return (f"pallas {r['name']:40s} {v['median_us']:9.1f} us {v['tops']:7.1f} TOP/s "
            f"(qattn speedup {v['speedup_of_qattn']:.2f}x), {v['dtype']}, {v['config']}, "
            f"rel_fro {v['rel_fro']:.1e}")


def report(results, env, out):
    os.makedirs(out, exist_ok=True)
    copy_tbps = env["copy_bps"] / 1e12
    md = [f"# qattn benchmark: {env['device']}", "",
          f"{env['date']}, driver {env['driver']}, torch {env['torch']} (CUDA {env['cuda']}, "
          f"cuDNN {env['cudnn']}), L2 {env['l2'] / 2**20:.0f} MiB, seed {env['seed']}, "
          f"{env['repeat']} timed runs each, quantizer {env['quantizer']}.",
          f"Command: `{env['command']}`.",
          *([f"Pallas MGPU: JAX {env['pallas'].get('jax', '?')}, "
             f"`{env['pallas'].get('api', 'attention_mgpu not loaded')}` "
             f"(bench/jax_peer.py: {env['pallas']['status']}, {env['pallas']['wall_s']:.0f} s)."]
            if "pallas" in env else []),
          f"Device-to-device copy: {copy_tbps:.2f} TB/s (read + written bytes).", ""]
    text = []
    for family in ("decode", "prefill"):
        rows = [r for r in results if r["family"] == family]
        if not rows:
            continue
        t = table(rows, family)
        md += [f"## {family.capitalize()}", "", t, ""]
        notes = peer_notes(rows)
        if notes:
            md += notes + [""]
        text += [f"== {family}", t] + notes
    xs = [r for r in results if r["family"] == "xcheck"]
    if xs:
        md += ["## Cross-checks", "", "```"] + [
            f"{r.get('line', 'FAIL ' + r['name'] + ': ' + r.get('error', ''))} | "
            f"GPU quantizer vs CPU artifact: {r.get('quantizer', '-')}" for r in xs] + ["```", ""]
    md += ["Speedup = peer time / qattn time (above 1: qattn faster). Times are medians in us;",
           "qattn's minimum in parentheses. qattn runs on a cold L2 (qattn-run --cold-l2), the",
           "peers rotate among input copies larger than 4x the L2."]
    if any(r["family"] == "prefill" for r in results):
        md += ["Prefill: % of best peer = the fastest of SDPA cuDNN, SDPA flash and deq+SDPA",
               "(CUDA-event times) / qattn's time; Pallas MGPU is not in it. Pallas MGPU (JAX's",
               "Mosaic GPU flash attention, bf16 unless the note says otherwise) runs in a",
               "process of its own and is timed by the host wall clock over batches of calls",
               "(no CUDA events in JAX): slightly pessimistic next to the other peers."]
    md += [""]
    for p in plots(results, out, copy_tbps):
        md.append(f"![{os.path.basename(p)}]({os.path.basename(p)})")
    with open(os.path.join(out, "results.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump({"env": env, "results": results}, f, indent=1)
    print("\n".join(text))
    print(f"bench: wrote {out}/results.json, results.md and the plots")


if __name__ == "__main__":
    main()
