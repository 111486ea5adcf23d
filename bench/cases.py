#!/usr/bin/env python3
"""The performance benchmark's cases: decode (issue 4) and prefill (issue 5)
shapes, plus a few small cross-check cases. For each, writes and compiles a CPU
module (`quantize`: float Q/K/V to the quantized operands, and `attention`) and
a GPU module (`attention`) with the generators and qattn-compile flags of the
GPU correctness matrix (scripts/gpu-check/casegen.py), then OUT_DIR/cases.json.
Run on the CPU machine; the folder travels to the GPU machine, where run.py
benchmarks it. Artifacts only (PTX, cubin, shared objects): the data is
generated on the GPU machine.

usage: cases.py OUT_DIR [--only SUBSTRING[,...]] [--qattn-compile PATH] [--tile-options OPTS]
"""
import argparse
import os
import sys
from dataclasses import dataclass

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts", "gpu-check"))
from casegen import Case, write_cases  # noqa: E402


@dataclass
class BenchCase(Case):
    # "decode" and "prefill" are timed; "xcheck" cases are small, run first, and
    # check the GPU quantizer of run.py bit for bit against the CPU artifact.
    family: str = "decode"
    # The plot series the case is a point of ("" for none): decode_context, prefill_causal.
    sweep: str = ""


# KV-cache quantization of every timed case: 4-bit BPQ (stage-1 blocks of 64
# tokens, stage-2 groups of 16), int8 BPQ queries, f32 output.
DECODE_SHAPES = [  # (B, Hq, Hkv, Nk)
    (1, 32, 8, 32768),
    (8, 32, 8, 32768),
    (1, 32, 8, 131072),
    (32, 32, 8, 8192),
    (4, 32, 32, 16384),
]
CONTEXT_SWEEP = (2048, 4096, 8192, 16384, 32768, 65536)  # B8 Hq32 Hkv8 d128
PREFILL_SWEEP = (1024, 2048, 4096, 8192)  # B4 H32 d128 causal


def decode(b, hq, hkv, nk, d, bits=(4,), nq=1, causal=False, tag="", sweep="", **scheme):
    """scheme: Case fields of the quantization other than the default's (group, block)."""
    name = f"decode_b{b}_h{hq}x{hkv}_n{nk}_d{d}" + (f"_{tag}" if tag else "")
    return BenchCase(name, b, hq, hkv, nq, nk, d, list(bits), causal=causal,
                     cpu_reference=False, family="decode", sweep=sweep, **scheme)


def prefill(b, h, n, d, causal, sweep="", kernel=""):
    """kernel: "" for qattn-tile's choice, else the prefill kernel to force
    (mma: mma.sync, wgmma: the warpgroup kernel with one warpgroup, e4m3:
    that with fp8 P.V, ws: with a producer warpgroup beside two that
    compute), tagged in the name."""
    name = f"prefill_b{b}_h{h}_n{n}_d{d}" + ("_causal" if causal else "")
    tiling = ""
    if kernel:
        name += "_" + kernel
        pv = ", pv = e4m3" if kernel == "e4m3" else ""
        kind = "mma" if kernel == "mma" else "wgmma"
        warps, stages, producer = 4, 2, ""
        if kernel == "ws":
            warps, stages, producer = 8, 4, ", producer = warpgroup"
        tiling = (f"#qattn.gpu_tiling<warps = {warps}, splits = 1, kernel = {kind}, "
                  f"stages = {stages}{pv}{producer}>")
    return BenchCase(name, b, h, h, n, n, d, [4], causal=causal, cpu_reference=False,
                     family="prefill", sweep=sweep, tiling=tiling)


def xcheck(name, b, hq, hkv, nq, nk, d, bits, causal, dist="normal"):
    # Ragged token counts (partial stage-1 blocks and stage-2 groups) on purpose.
    return BenchCase("xcheck_" + name, b, hq, hkv, nq, nk, d, list(bits), causal=causal,
                     dist=dist, cpu_reference=True, family="xcheck")


def matrix():
    cases = [
        # Every bit layout, head dimension and query shape the timed cases use.
        xcheck("decode_4bit_d128", 2, 8, 2, 1, 1000, 128, [4], False, dist="outlier"),
        xcheck("decode_4bit_d64_mha", 2, 4, 4, 1, 777, 64, [4], False),
        xcheck("decode_2bit_d128", 1, 8, 2, 1, 1100, 128, [2], False),
        xcheck("decode_mixed_d128", 1, 16, 8, 1, 900, 128, [2, 4] * 4, False),
        xcheck("decode_nq4_causal", 1, 8, 2, 4, 700, 128, [4], True),
        xcheck("prefill_causal_d128", 1, 4, 4, 300, 300, 128, [4], True),
        xcheck("prefill_d64", 2, 2, 2, 200, 200, 64, [4], False),
    ]
    for d in (128, 64):
        for b, hq, hkv, nk in DECODE_SHAPES:
            sweep = "decode_context" if (b, hq, hkv, d) == (8, 32, 8, 128) else ""
            cases.append(decode(b, hq, hkv, nk, d, sweep=sweep))
    cases += [
        decode(8, 32, 8, 32768, 128, bits=[2], tag="2bit"),
        decode(8, 32, 8, 32768, 128, bits=[2, 4] * 4, tag="mixed24"),
        decode(8, 32, 8, 32768, 128, nq=4, causal=True, tag="nq4_causal"),
        # Stage-2 groups and stage-1 blocks of 8 keys (two a 16-key mma block).
        decode(8, 32, 8, 32768, 128, tag="group8", group=8),
        decode(8, 32, 8, 8192, 128, tag="group8_block8", group=8, block=8),
        decode(8, 32, 8, 32768, 96),
        decode(8, 16, 8, 32768, 256),
    ]
    cases += [decode(8, 32, 8, n, 128, sweep="decode_context")
              for n in CONTEXT_SWEEP if n != 32768]  # N32K is a main shape
    cases += [
        prefill(4, 32, 4096, 128, False),
        prefill(4, 32, 4096, 128, True, sweep="prefill_causal"),
        prefill(1, 32, 16384, 128, True),
        prefill(16, 16, 1024, 64, False),
    ]
    cases += [prefill(4, 32, n, 128, True, sweep="prefill_causal")
              for n in PREFILL_SWEEP if n != 4096]
    # qattn-tile gives d = 128 the warpgroup kernel; the mma.sync one there
    # for comparison.
    cases += [
        prefill(4, 32, 4096, 128, False, kernel="mma"),
        prefill(4, 32, 4096, 128, True, kernel="mma"),
        prefill(1, 32, 16384, 128, True, kernel="mma"),
    ]
    # P.V on fp8 (pv = e4m3: qattn-tile's pv-e4m3 option), opt-in.
    cases += [
        prefill(4, 32, 4096, 128, False, kernel="e4m3"),
        prefill(4, 32, 4096, 128, True, kernel="e4m3"),
        prefill(1, 32, 16384, 128, True, kernel="e4m3"),
    ]
    # qattn-tile gives causal grids of 4096+ queries a producer warpgroup
    # (f16 P.V); the one-warpgroup kernel there, and the producer where it
    # is not chosen, for comparison.
    cases += [
        prefill(4, 32, 4096, 128, True, kernel="wgmma"),
        prefill(4, 32, 4096, 128, False, kernel="ws"),
    ]
    return cases


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--only", default="")
    ap.add_argument("--qattn-compile", default=os.path.join(ROOT, "build", "bin", "qattn-compile"))
    ap.add_argument("--tile-options", default="", help="more qattn-tile options for the GPU "
                    "modules (qattn-compile --tile-options), e.g. 'balance-splits=true'")
    args = ap.parse_args()
    write_cases(matrix(), args.out, args.qattn_compile, args.only, args.tile_options)


if __name__ == "__main__":
    main()
