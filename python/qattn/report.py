#!/usr/bin/env python3
"""Compile-time accuracy report: which qattn KV-cache scheme to use for given calibration K/V.

For calibration keys and values (``.npy``, ``[B, Hkv, N, d]`` float) and optionally queries
(``[B, Hq, N, d]``), every candidate scheme is written as a ``.mlir`` function that quantizes K
and V with qattn's ops (``qattn.smooth_keys``, ``qattn.quantize``, ``qattn.progressive_quantize``),
runs ``qattn.attention`` over them and returns the dequantized K and V as well. All candidates are
compiled with ``qattn-compile --target=cpu`` and run with ``qattn-run``: the numbers measure
qattn's compiled code (its executable specification), not a model of it. For each candidate the
report gives

* the attention output's SQNR (dB) and relative error ``||O - O_ref|| / ||O_ref||`` against
  float64 attention on the unquantized Q/K/V (``qattn.format.attention``);
* K's and V's reconstruction SQNR (dB) (a smoothed K is compared with its mean added back);
* bits per cached element of K and V and cache bytes per token (per layer: all KV heads, K and
  V, every scale and zero point; a smoothed K's f32 mean is spread over the N calibration
  tokens);

and picks the cheapest candidate (fewest bytes per token, then highest SQNR) that meets the
target: ``--min-sqnr`` and/or ``--max-rel-error`` on the attention output. Exit status 0 when a
candidate meets it, 2 when none does, 1 on errors.

Queries: with ``--q`` the given ones; without, Gaussian queries (``--seed``) with K's
per-channel standard deviation, one query head per KV head. Attention is causal (the last
query sees every key) unless ``--no-causal``.

usage: python/qattn/report.py --k k.npy --v v.npy [--q q.npy] [--min-sqnr 20]
       [--schemes int8,bpq4-g16,...] [--block 32] [--json out.json]
"""

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from qattn import _locate  # noqa: E402
from qattn import format as F  # noqa: E402


@dataclass(frozen=True)
class Side:
    """How one of K, V is cached: stage 2 at ``bits`` (None: int8 only) in groups of ``group``
    tokens with the encoder ``fit``; K only: ``smooth`` (calibration = all given tokens) and the
    stage-1 ``gran``ularity."""

    bits: object = None
    group: int = 16
    fit: str = "minmax"
    smooth: bool = False
    gran: str = "block"
    anchor: str = "zero"


@dataclass(frozen=True)
class Candidate:
    name: str
    k: Side
    v: Side


def candidates():
    """The default candidate list, cheapest last within each family."""
    out = [Candidate("int8", Side(), Side())]
    for bits in (4, 3, 2):
        for g in (8, 16, 32):
            out.append(Candidate(f"bpq{bits}-g{g}", Side(bits, g), Side(bits, g)))
            out.append(Candidate(f"bpq{bits}-g{g}-mse", Side(bits, g, "mse"), Side(bits, g, "mse")))
        out.append(Candidate(f"bpq{bits}-g16-mse-sm", Side(bits, 16, "mse", True),
                             Side(bits, 16, "mse")))
        out.append(Candidate(f"bpq{bits}-k16v32-mse", Side(bits, 16, "mse"), Side(bits, 32, "mse")))
        for g in (8, 16, 32):
            out.append(Candidate(f"bpq{bits}-g{g}-min-mse", Side(bits, g, "mse", anchor="min"),
                                 Side(bits, g, "mse", anchor="min")))
    out.append(Candidate("bpq4-kch-g16", Side(4, 16, gran="channel"), Side(4, 16)))
    return out


def side_bits(side, block, d, n):
    """Bits per element, scales included (FORMAT.md): f32 stage-1 scale per block (x channel),
    int8 s2 and z2 per channel per group, the smoothing mean spread over ``n`` tokens."""
    bits = 32 / (block * d) if side.gran == "block" else 32 / block
    bits += 8 if side.bits is None else side.bits + 16 / side.group
    return bits + (32 / n if side.smooth else 0)


# ------------------------------------------------------------------------------------------------
# Module text
# ------------------------------------------------------------------------------------------------


def tensor(shape, elt):
    return "tensor<" + "x".join(map(str, shape)) + "x" + elt + ">"


def side_lines(x, side, shape, block):
    """Quantize ``%x`` [B, H, N, d] (f32): (lines, attention operands, attrs, dequantized name)."""
    b, h, n, d = shape
    xf, x8 = tensor(shape, "f32"), tensor(shape, "i8")
    lines, src = [], f"%{x}"
    if side.smooth:
        mt = tensor([b, h, d], "f32")
        lines.append(f"  %{x}sm, %{x}mu = qattn.smooth_keys %{x} {{calibration = array<i64: 0, {n}>}}"
                     f" : {xf} -> {xf}, {mt}")
        src = f"%{x}sm"
    gran = ", granularity = channel" if side.gran == "channel" else ""
    s1 = f"#qattn.stage1<block = {block}{gran}>"
    nb = -(-n // block)
    st = tensor([b, h, nb] + ([d] if side.gran == "channel" else []), "f32")
    lines.append(f"  %{x}8, %{x}s = qattn.quantize {src} {{scheme = {s1}}} : {xf} -> {x8}, {st}")
    attrs = [f"{x}_stage1 = {s1}"]
    q8 = f"%{x}8"
    ops = [(f"%{x}8", x8), (f"%{x}s", st)]
    if side.bits is not None:
        anchor = ", anchor = min" if side.anchor == "min" else ""
        s2 = f"#qattn.stage2<bits = [{side.bits}], group = {side.group}{anchor}>"
        fit = f", fit = #qattn.fit<{side.fit}>" if side.fit != "minmax" else ""
        pt = tensor([b, n, h * d * side.bits // 8], "i8")
        gt = tensor([b, h, -(-n // side.group), d], "i8")
        lines += [
            f"  %{x}p, %{x}g, %{x}z = qattn.progressive_quantize %{x}8 {{scheme = {s2}{fit}}}"
            f" : {x8} -> {pt}, {gt}, {gt}",
            f"  %{x}8d = qattn.progressive_dequantize %{x}p, %{x}g, %{x}z {{scheme = {s2}}}"
            f" : {pt}, {gt}, {gt} -> {x8}",
        ]
        attrs.append(f"{x}_stage2 = {s2}")
        ops = [(f"%{x}p", pt), (f"%{x}s", st), (f"%{x}g", gt), (f"%{x}z", gt)]
        q8 = f"%{x}8d"
    lines.append(f"  %{x}d = qattn.dequantize {q8}, %{x}s {{scheme = {s1}}} : {x8}, {st} -> {xf}")
    return lines, ops, attrs


def function_text(name, cand, q_shape, kv_shape, block, causal):
    qf, kf = tensor(q_shape, "f32"), tensor(kv_shape, "f32")
    b, h, _, d = kv_shape
    mt = tensor([b, h, d], "f32")
    results = [("o", qf), ("kd", kf), ("vd", kf)] + ([("kmu", mt)] if cand.k.smooth else [])
    lines = [f'func.func @{name}(%q: {qf} {{qattn.name = "q"}}, %k: {kf} {{qattn.name = "k"}}, '
             f'%v: {kf} {{qattn.name = "v"}}) -> ('
             + ", ".join(f'{t} {{qattn.name = "{n}"}}' for n, t in results) + ") {"]
    kl, kops, kattrs = side_lines("k", cand.k, kv_shape, block)
    vl, vops, vattrs = side_lines("v", cand.v, kv_shape, block)
    lines += kl + vl
    ops = [("keys", kops), ("values", vops)]
    attrs = kattrs + vattrs + (["causal"] if causal else [])
    groups = " ".join(f"{kw}({', '.join(n for n, _ in o)})" for kw, o in ops)
    types = [qf] + [t for _, o in ops for _, t in o]
    lines += [f"  %o = qattn.attention %q {groups}",
              f"      {{{', '.join(attrs)}}}",
              f"      : ({', '.join(types)}) -> {qf}"]
    names = ["%o", "%kd", "%vd"] + (["%kmu"] if cand.k.smooth else [])
    lines += [f"  return {', '.join(names)} : {', '.join(t for _, t in results)}", "}"]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------------
# Running
# ------------------------------------------------------------------------------------------------


def find_tool(tools, name):
    """``tools/name``, or where qattn.compiler would look (qattn._locate.find_tool)."""
    path = os.path.join(tools, name) if tools else _locate.find_tool(name)[0]
    if not path or not os.access(path, os.X_OK):
        sys.exit(f"report: {name} not found (build qattn or pass --tools)")
    return path


def sqnr_db(ref, got):
    ref = np.asarray(ref, np.float64)
    err = np.sum((np.asarray(got, np.float64) - ref) ** 2)
    sig = np.sum(ref ** 2)
    return float("inf") if err == 0 else float(10 * np.log10(sig / err))


def rel_error(ref, got):
    ref = np.asarray(ref, np.float64)
    return float(np.linalg.norm(np.asarray(got, np.float64) - ref) / np.linalg.norm(ref))


def load_f32(path, what):
    a = np.load(path)
    if a.ndim != 4 or not np.issubdtype(a.dtype, np.floating):
        sys.exit(f"report: {what} ({path}) must be a float [B, H, N, d] array, got {a.dtype} {a.shape}")
    return np.ascontiguousarray(a, dtype=np.float32)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--k", required=True, help="calibration keys .npy [B, Hkv, N, d]")
    ap.add_argument("--v", required=True, help="calibration values .npy [B, Hkv, N, d]")
    ap.add_argument("--q", help="queries .npy [B, Hq, N, d] (default: Gaussian, see above)")
    ap.add_argument("--block", type=int, default=32, help="stage-1 block (default 32)")
    ap.add_argument("--schemes", default="all", help="comma-separated candidate names, or all")
    ap.add_argument("--min-sqnr", type=float, help="target: attention-output SQNR >= this (dB)")
    ap.add_argument("--max-rel-error", type=float, help="target: attention-output rel error <= this")
    ap.add_argument("--no-causal", action="store_true", help="attention without the causal mask")
    ap.add_argument("--seed", type=int, default=0, help="seed of the generated queries")
    ap.add_argument("--tools", help="folder with qattn-compile and qattn-run (default: where "
                    "qattn.compiler looks, docs/PYTHON.md)")
    ap.add_argument("--work", help="scratch folder (default: a temporary one, removed afterwards)")
    ap.add_argument("--json", help="also write the report as JSON")
    a = ap.parse_args(argv)
    if a.min_sqnr is None and a.max_rel_error is None:
        sys.exit("report: give a target: --min-sqnr and/or --max-rel-error")

    k, v = load_f32(a.k, "--k"), load_f32(a.v, "--v")
    if k.shape != v.shape:
        sys.exit(f"report: K {k.shape} and V {v.shape} differ")
    b, hkv, n, d = k.shape
    if d % 8:
        sys.exit(f"report: the head dimension {d} must be a multiple of 8")
    if a.q:
        q = load_f32(a.q, "--q")
        if q.shape[0] != b or q.shape[3] != d or q.shape[1] % hkv or q.shape[2] > n:
            sys.exit(f"report: queries {q.shape} do not fit keys {k.shape}")
    else:
        std = k.std(axis=(0, 2), keepdims=True).mean(axis=1, keepdims=True)
        q = (np.random.default_rng(a.seed).standard_normal(k.shape) * std).astype(np.float32)
    causal = not a.no_causal

    pool = {c.name: c for c in candidates()}
    names = list(pool) if a.schemes == "all" else a.schemes.split(",")
    unknown = [x for x in names if x not in pool]
    if unknown:
        sys.exit(f"report: unknown schemes {unknown}; known: {', '.join(pool)}")
    chosen = [pool[x] for x in names]
    for c in chosen:
        for side in (c.k, c.v):
            if side.bits is not None and a.block % side.group:
                sys.exit(f"report: {c.name}: group {side.group} must divide the block {a.block}")

    compile_tool, run_tool = find_tool(a.tools, "qattn-compile"), find_tool(a.tools, "qattn-run")
    work = a.work or tempfile.mkdtemp(prefix="qattn-report-")
    os.makedirs(work, exist_ok=True)
    try:
        text = "".join(function_text(f"c{i}", c, list(q.shape), list(k.shape), a.block, causal)
                       for i, c in enumerate(chosen))
        src = os.path.join(work, "candidates.mlir")
        with open(src, "w") as f:
            f.write(text)
        art = os.path.join(work, "art")
        r = subprocess.run([compile_tool, src, "-o", art, "--target=cpu"], capture_output=True,
                           text=True)
        if r.returncode:
            sys.exit(f"report: qattn-compile failed on {src}:\n{r.stderr}")
        inputs = {}
        for name, arr in (("q", q), ("k", k), ("v", v)):
            inputs[name] = os.path.join(work, name + ".npy")
            np.save(inputs[name], arr)
        ref = F.attention(q, k, v, 1 / np.sqrt(d), causal=causal)
        rows = []
        for i, c in enumerate(chosen):
            out = os.path.join(work, f"out{i}")
            cmd = [run_tool, art, "--function", f"c{i}", "--quiet", "--output-dir", out]
            for name, path in inputs.items():
                cmd += ["--input", f"{name}={path}"]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode:
                sys.exit(f"report: {' '.join(cmd)} failed:\n{r.stdout}{r.stderr}")
            o = np.load(os.path.join(out, "o.npy"))
            kd = np.load(os.path.join(out, "kd.npy"))
            if c.k.smooth:
                kd = kd + np.load(os.path.join(out, "kmu.npy"))[:, :, None, :]
            vd = np.load(os.path.join(out, "vd.npy"))
            kb, vb = side_bits(c.k, a.block, d, n), side_bits(c.v, a.block, d, n)
            rows.append(dict(name=c.name, k_bits=kb, v_bits=vb,
                             bytes_per_token=(kb + vb) * hkv * d / 8,
                             sqnr=sqnr_db(ref, o), rel_error=rel_error(ref, o),
                             k_sqnr=sqnr_db(k, kd), v_sqnr=sqnr_db(v, vd)))
    finally:
        if not a.work:
            shutil.rmtree(work, ignore_errors=True)

    def meets(r):
        return ((a.min_sqnr is None or r["sqnr"] >= a.min_sqnr)
                and (a.max_rel_error is None or r["rel_error"] <= a.max_rel_error))

    target = " and ".join(t for t in (
        f"attention SQNR >= {a.min_sqnr:g} dB" if a.min_sqnr is not None else "",
        f"rel error <= {a.max_rel_error:g}" if a.max_rel_error is not None else "") if t)
    ok = [r for r in rows if meets(r)]
    pick = min(ok, key=lambda r: (r["bytes_per_token"], -r["sqnr"])) if ok else None
    digest = hashlib.sha256(k.tobytes() + v.tobytes()).hexdigest()[:12]
    print(f"qattn accuracy report: K/V {list(k.shape)} (sha256 {digest}), Q {list(q.shape)}"
          f"{' given' if a.q else ' generated'}, block {a.block}, "
          f"{'causal' if causal else 'not causal'}; compiled CPU code via qattn-compile/qattn-run")
    print(f"{'scheme':22s} {'K bits':>7s} {'V bits':>7s} {'B/token':>8s} {'attn dB':>8s} "
          f"{'rel err':>9s} {'K dB':>6s} {'V dB':>6s}  target")
    for r in sorted(rows, key=lambda r: (r["bytes_per_token"], -r["sqnr"])):
        print(f"{r['name']:22s} {r['k_bits']:7.3f} {r['v_bits']:7.3f} {r['bytes_per_token']:8.2f} "
              f"{r['sqnr']:8.2f} {r['rel_error']:9.3e} {r['k_sqnr']:6.1f} {r['v_sqnr']:6.1f}  "
              f"{'meets' if meets(r) else '-'}{'  <= picked' if r is pick else ''}")
    if pick:
        print(f"picked: {pick['name']} ({pick['bytes_per_token']:.2f} bytes/token per layer, "
              f"attention SQNR {pick['sqnr']:.2f} dB, rel error {pick['rel_error']:.3e}; "
              f"target {target})")
    else:
        print(f"picked: none: no candidate meets the target ({target})")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(target=target, picked=pick and pick["name"], rows=rows), f, indent=1)
    return 0 if pick else 2


if __name__ == "__main__":
    sys.exit(main())
