"""Shared helpers of the integration checks: compiled qattn (via qattn-run's .npy files) against
the independent NumPy model of docs/FORMAT.md (python/qattn/format.py).

Every check prints one line, ``<case>: <what> OK (...)`` or ``<case>: <what> FAIL (...)``; the
script exits 1 after the last check when any failed, so a RUN line piped into FileCheck fails
both through the exit status (lit uses pipefail) and through the missing ``OK`` line.
"""

import argparse
import json
import math
import os
import sys

import numpy as np

from qattn import format as F

F32 = np.float32
DTYPES = {"f32": np.float32, "f16": np.float16, "bf16": np.uint16, "i8": np.int8}


class Checker:
    """Collects the results of a script's checks."""

    def __init__(self, case):
        self.case = case
        self.failed = 0

    def line(self, ok, what, detail=""):
        status = "OK" if ok else "FAIL"
        print(f"{self.case}: {what} {status}" + (f" ({detail})" if detail else ""), flush=True)
        if not ok:
            self.failed += 1
        return ok

    def exact(self, what, got, want, context=None):
        """Bit-exact comparison (shape, then every byte); on mismatch show the first few."""
        got = np.asarray(got)
        want = np.asarray(want)
        if got.shape != want.shape:
            return self.line(False, what, f"shape {got.shape} != expected {want.shape}")
        if got.dtype.itemsize != want.dtype.itemsize:
            return self.line(False, what, f"dtype {got.dtype} != expected {want.dtype}")
        g = got.view(f"u{got.dtype.itemsize}") if got.dtype.kind != "b" else got
        w = want.view(f"u{want.dtype.itemsize}") if want.dtype.kind != "b" else want
        bad = np.argwhere(g != w)
        if len(bad) == 0:
            return self.line(True, what, f"bit-exact, {got.size} values")
        shown = []
        for idx in bad[:5]:
            idx = tuple(int(i) for i in idx)
            extra = f" {context(idx)}" if context else ""
            shown.append(f"{list(idx)}: got {got[idx]!r} want {want[idx]!r}{extra}")
        self.line(False, what, f"{len(bad)} of {got.size} values differ; " + "; ".join(shown))
        return False

    def bound(self, what, err, limit, detail=""):
        """``err <= limit`` elementwise (arrays broadcast); NaN fails."""
        err = np.asarray(err, np.float64)
        limit = np.broadcast_to(np.asarray(limit, np.float64), err.shape)
        bad = ~(err <= limit)
        worst = float(np.max(err / np.where(limit > 0, limit, np.inf))) if err.size else 0.0
        if bad.any():
            idx = tuple(int(i) for i in np.argwhere(bad)[0])
            return self.line(False, what, f"{int(bad.sum())} of {err.size} values exceed the "
                             f"bound, first at {list(idx)}: {err[idx]:.3e} > {limit[idx]:.3e}"
                             + (f"; {detail}" if detail else ""))
        return self.line(True, what, f"max err/bound {worst:.3f}" + (f"; {detail}" if detail else ""))

    def finish(self):
        if self.failed:
            print(f"{self.case}: {self.failed} check(s) FAILED", flush=True)
            sys.exit(1)
        print(f"{self.case}: all checks passed", flush=True)


def load(directory, name, dtype=None):
    """``directory/name.npy``; bf16 files hold uint16 bit patterns (qattn-run's convention)."""
    path = os.path.join(directory, name + ".npy")
    if not os.path.exists(path):
        sys.exit(f"error: {path} is missing")
    a = np.load(path)
    if dtype is not None and a.dtype != np.dtype(DTYPES[dtype]):
        sys.exit(f"error: {path} holds {a.dtype}, expected {dtype}")
    return a


def as_f32(a, dtype):
    """A float argument as f32 values (bf16 bit patterns converted)."""
    if dtype == "bf16":
        return F.bf16_to_f32(a)
    return np.asarray(a).astype(F32)


def manifest_arg_dtype(art, function, name):
    """The dtype the artifact's manifest gives argument or result ``name`` of ``function``."""
    with open(os.path.join(art, "manifest.json")) as f:
        manifest = json.load(f)
    for fn in manifest["functions"]:
        if fn["name"] == function:
            for t in fn["args"] + fn["results"]:
                if t["name"] == name:
                    return t["dtype"]
            sys.exit(f"error: {function} has no argument or result {name}")
    sys.exit(f"error: the artifact has no function {function}")


def parse_spec(text):
    """``key=value,key=value`` (values: ints, '-'-separated int lists for bits, or words)."""
    spec = {}
    if not text:
        return spec
    for item in text.split(","):
        key, _, value = item.partition("=")
        if key == "bits":
            spec[key] = [int(b) for b in value.split("-")]
        elif value.lstrip("-").isdigit():
            spec[key] = int(value)
        else:
            spec[key] = value
    return spec


def stage1_spec(spec):
    return dict(block=spec["block"], scale_dtype=spec.get("scale", "f32"),
                granularity=spec.get("gran", "block"))


def order_name(spec):
    return {"lsb": "lsb_first", "msb": "msb_first"}[spec.get("order", "lsb")]


def metrics(got, ref):
    """max_abs, rel_fro = ||got - ref|| / ||ref|| and SQNR in dB, in float64."""
    got = np.asarray(got, np.float64)
    ref = np.asarray(ref, np.float64)
    diff = got - ref
    noise = float(np.sum(diff * diff))
    signal = float(np.sum(ref * ref))
    rel = math.sqrt(noise / signal) if signal > 0 else float("inf")
    sqnr = 10 * math.log10(signal / noise) if noise > 0 else float("inf")
    return float(np.max(np.abs(diff))) if diff.size else 0.0, rel, sqnr


def output_ulp_factor(dtype):
    """Relative half-ulp of the output type's rounding (nearest even)."""
    return {"f32": 2.0**-24, "f16": 2.0**-11, "bf16": 2.0**-8}[dtype]


def output_abs_floor(dtype):
    """Half the smallest subnormal spacing of the output type (absolute rounding error floor)."""
    return {"f32": 2.0**-150, "f16": 2.0**-25, "bf16": 2.0**-134}[dtype]


def parser(description):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--case", required=True, help="name printed on every line")
    return p


def add_attention_args(p):
    """The options of an attention check: the schemes, the softmax and the bounds."""
    p.add_argument("--q", default="", help="empty: float q; else block=B[,scale=..][,gran=..]")
    p.add_argument("--k", required=True, help="block=B[,scale=f32|f16][,gran=block|channel]"
                   "[,bits=4-2..,group=G,order=lsb|msb,anchor=zero|min]")
    p.add_argument("--v", required=True, help="as --k")
    p.add_argument("--scale", type=float, help="softmax scale (default 1/sqrt(d) in f32)")
    p.add_argument("--causal", action="store_true")
    p.add_argument("--softmax", default="exact", help="exact | sas:THRESHOLD:DEGREE")
    p.add_argument("--tol-score", type=float, default=8.0)
    p.add_argument("--tol-base", type=float, default=64.0)
    p.add_argument("--max-rel-fro", type=float, required=True)
    p.add_argument("--min-sqnr", type=float, required=True)


def softmax_scale(given, d):
    """The op's f32 softmax scale: --scale, or FORMAT.md's default 1 / sqrt(d) in f32."""
    if given is not None:
        return float(np.float32(given))
    return float(np.float32(1) / np.sqrt(np.float32(d)))


def softmax_kwargs(text):
    """--softmax (exact | sas:THRESHOLD:DEGREE) as the model's keyword arguments."""
    if text == "exact":
        return dict(softmax="exact")
    _, thr, deg = text.split(":")
    return dict(softmax="sas", threshold=float(thr), degree=int(deg))


def stage2_kwargs(spec):
    """A stage-2 scheme (parse_spec with bits=) as the model's keyword arguments."""
    return dict(bits=spec["bits"], group=spec["group"], order=order_name(spec),
                anchor=spec.get("anchor", "zero"))


def float_dtype_name(dtype):
    """f32 / f16 / bf16 (stored as uint16) of a NumPy float array's dtype, or None."""
    return {np.dtype(np.float32): "f32", np.dtype(np.float16): "f16",
            np.dtype(np.uint16): "bf16"}.get(np.dtype(dtype))
