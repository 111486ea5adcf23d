#!/usr/bin/env python3
"""A sweep of decode formats through the GPU lowering: random serving-form
attentions (head counts, head dims 32-288, query counts, 2/3/4-bit codes with
per-head widths, both bit orders and anchors, stage-2 groups of 2-64, int8
caches with stage-1 blocks of 1-64 keys, scales per block or per channel in
f32 or f16, page sizes, the int8 tail, causal or not, float or int8 queries),
each written as scripts/gpu-check/serving/cases.py writes its functions and
compiled for the GPU (qattn-compile --target=cuda --no-cubin). Each must compile (PTX with a tile-layer kernel) or
be refused with a diagnostic (exit 1, "error:" with a location); anything else
(a crash, an abort, another exit status, a silent failure) is a finding.
docs/FUZZING.md has the text-mutating fuzzer beside it.

usage: formats.py [--build DIR] [--count N] [--seed S] [--keep DIR] [--ptxas]
Prints one line per outcome kind and a summary line; exit 1 on a finding.
"""
import argparse
import collections
import math
import os
import random
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts", "gpu-check", "serving"))
import cases  # noqa: E402  (the serving matrix's function writer)


def random_scheme(rng, hkv):
    """A K or V scheme in cases.py's spelling and its stage-1 block."""
    # Mostly what the lowering takes, some of what it refuses.
    if rng.random() < 0.35:  # int8 (stage 1 only)
        gran = rng.choice(["block", "block", "channel"])
        block = rng.choice([1, 2, 4, 8, 12, 16, 24, 32, 64] if gran == "block" or
                           rng.random() < 0.2 else [8, 16, 32, 64])
        return f"block={block},scale={rng.choice(['f32', 'f16'])},gran={gran}", block
    block = rng.choice([16, 32, 64, 128])
    group = rng.choice([g for g in ((2, 4) if rng.random() < 0.15 else (8, 16, 32, 64))
                        if block % g == 0] or [8])
    bits = (str(rng.choice([2, 3, 4])) if rng.random() < 0.6
            else "-".join(str(rng.choice([2, 3, 4])) for _ in range(hkv)))
    return (f"block={block},bits={bits},group={group},order={rng.choice(['lsb', 'msb'])},"
            f"anchor={rng.choice(['zero', 'min'])}"), block


def random_case(rng, i):
    hq, hkv = rng.choice([(8, 2), (16, 4), (32, 8), (8, 8), (4, 1), (16, 8)])
    d = rng.choice([48, 112, 288] if rng.random() < 0.15 else
                   [32, 64, 64, 80, 96, 128, 128, 160, 192, 224, 256])
    k, kb = random_scheme(rng, hkv)
    v, vb = random_scheme(rng, hkv)
    page = math.lcm(16, kb, vb) * rng.choice([1, 2])
    q = rng.choice(["f32", "f16", "i8:block=1", "i8:block=2,gran=channel"])
    return (f"sweep{i}", hq, hkv, rng.choice([1, 1, 2, 4, 8]), d, k, v, page,
            rng.random() < 0.5, rng.random() < 0.5, q, rng.choice(["f32", "f16", "bf16"]), [])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="the build folder")
    ap.add_argument("--count", type=int, default=40, help="formats to try (default 40)")
    ap.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    ap.add_argument("--keep", help="a folder for the inputs of findings (default none)")
    ap.add_argument("--ptxas", action="store_true",
                    help="also assemble each PTX (qattn-compile's cubin step: ptxas on PATH); "
                         "a rejected PTX is a finding")
    a = ap.parse_args()
    compile_ = os.path.join(a.build, "bin", "qattn-compile")
    rng = random.Random(a.seed)
    outcomes, findings = collections.Counter(), 0
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "f.mlir")
        for i in range(a.count):
            with open(src, "w") as f:
                f.write("module {\n" + cases.function(random_case(rng, i)) + "}\n")
            art = os.path.join(tmp, f"art{i}")
            r = subprocess.run([compile_, "--target=cuda"] + ([] if a.ptxas else ["--no-cubin"]) +
                               [src, "-o", art],
                               capture_output=True, text=True, timeout=300)
            ptx = os.path.join(art, "module.ptx")
            if r.returncode == 0 and os.path.exists(ptx) and "_decode_tiles" in open(ptx).read():
                outcomes["compiled"] += 1
                continue
            first = r.stderr.split("\n")[0]
            if r.returncode == 1 and "f.mlir:" in first and "error:" in first:
                # The diagnostic's kind: what follows "no GPU lowering yet for" or "op".
                what = first.split("error:", 1)[1].split(" (")[0].strip()
                outcomes["refused: " + what.split(" yet for ")[-1]] += 1
                continue
            findings += 1
            print(f"formats: finding {i}: exit {r.returncode}: {r.stderr[-400:]}", file=sys.stderr)
            if a.keep:
                os.makedirs(a.keep, exist_ok=True)
                with open(os.path.join(a.keep, f"finding{i}.mlir"), "w") as f:
                    f.write(open(src).read())
    for what, n in sorted(outcomes.items()):
        print(f"formats: {n:4d} {what}")
    print(f"formats: seed {a.seed}, {a.count} formats, {outcomes['compiled']} compiled, "
          f"{a.count - outcomes['compiled'] - findings} refused, {findings} findings")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
