#!/usr/bin/env python3
"""Compiles, on the machine with MLIR, every CUDA artifact that the PyTorch check needs, into one
folder that travels to the GPU machine (which has no MLIR) with the repository:

  OUT/ops/           attention functions for scripts/torch-check/test_ops.py (cases.json says
                     what each one is)
  OUT/cache/paged/   qattn.paged's disk cache (QATTN_CACHE_DIR=OUT/cache) holding the paged
                     decode functions of examples/decode_loop.py (its precompile(): one per
                     scheme and head configuration)
  OUT/model.json     the model and cache configuration of examples/decode_loop.py

usage: prepare.py OUT [--gen N] [--prompt N] [--target cuda|cpu] [--small] [--no-ops]
  OUT: e.g. artifacts/torch-check (git-ignored). --target cpu --small: a tiny model compiled
  for the CPU, which examples/decode_loop.py --device cpu runs without a GPU (the lit test
  test/Python/torch_check_cpu.py does). Needs torch (qattn.paged) besides qattn-compile.
"""
import argparse
import json
import os
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
from qattn import ir  # noqa: E402
from qattn.compiler import compile_module  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "examples"))
import decode_loop  # noqa: E402

BLOCK, GROUP = 32, 16

# Operator tests: (name, kind, shapes and options). Decode: float queries, optional decode
# buffer; prefill: BPQ int8 queries, causal.
OPS = [
    dict(name="decode_4bit_buf_f32", kind="decode", batch=2, hq=8, hkv=2, nq=1, nk=128, d=64,
         bits=[4], buffer=5, q="f32", out="f32"),
    dict(name="decode_4bit_buf_bf16", kind="decode", batch=2, hq=8, hkv=2, nq=1, nk=128, d=64,
         bits=[4], buffer=5, q="f32", out="bf16"),
    dict(name="decode_mixed_nobuf", kind="decode", batch=2, hq=8, hkv=2, nq=1, nk=160, d=64,
         bits=[4, 2], buffer=0, q="f32", out="f32"),
    dict(name="decode_int8_buf", kind="decode", batch=1, hq=8, hkv=2, nq=1, nk=96, d=64,
         bits=[], buffer=3, q="f32", out="f32"),
    dict(name="decode_bf16q_gqa4_d128", kind="decode", batch=1, hq=16, hkv=4, nq=1, nk=320,
         d=128, bits=[4], buffer=17, q="bf16", out="bf16"),
    dict(name="decode_nq4_causal_3bit", kind="decode", batch=1, hq=8, hkv=2, nq=4, nk=64, d=64,
         bits=[3], buffer=8, q="f32", out="f32", causal=True),
    dict(name="prefill_4bit_causal", kind="prefill", batch=2, hq=8, hkv=2, nq=128, nk=128, d=64,
         bits=[4], buffer=0, q="int8", out="f32", causal=True),
    dict(name="prefill_mixed_bf16", kind="prefill", batch=1, hq=8, hkv=2, nq=96, nk=96, d=64,
         bits=[4, 2], buffer=0, q="int8", out="bf16", causal=True),
]

# A small Llama-shaped model with random weights (examples/decode_loop.py); pages of 64 tokens
# (the schemes' stage-1 block). The GPU run's prompt fills one page (stage 2 from the floats) and
# its decode fills the next from the tail; the tiny one's prompt leaves 16 tokens in the tail,
# and its decode fills that page and opens the next tail.
MODEL = dict(vocab=2048, dim=512, layers=4, heads=8, kv_heads=2, head_dim=64, ffn=1408,
             rope_theta=10000.0, batch=1, prompt=64, gen=64, page=64, seed=0)
SMALL = dict(MODEL, vocab=256, dim=128, layers=2, heads=4, kv_heads=2, head_dim=32, ffn=256,
             prompt=80, gen=56)


def op_function(c):
    kv = ir.Scheme(bits=tuple(c["bits"]), group=GROUP, block=BLOCK)
    return ir.attention_function(
        c["name"], batch=c["batch"], hq=c["hq"], hkv=c["hkv"], nq=c["nq"], nk=c["nk"], d=c["d"],
        kv=kv, q=c["q"], causal=c.get("causal", False), buffer=c["buffer"], out=c["out"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--gen", type=int, help="decode steps (default: the model's)")
    ap.add_argument("--prompt", type=int, help="prompt tokens (default: the model's)")
    ap.add_argument("--target", choices=("cuda", "cpu"), default="cuda")
    ap.add_argument("--small", action="store_true", help="the tiny model (for CPU tests)")
    ap.add_argument("--no-ops", action="store_true", help="skip the operator tests' artifact")
    args = ap.parse_args()
    base = SMALL if args.small else MODEL
    m = dict(base)
    m.update({k: getattr(args, k) for k in ("gen", "prompt") if getattr(args, k)})
    os.makedirs(args.out, exist_ok=True)
    if not args.no_ops:
        t0 = time.time()
        compile_module(ir.module(*map(op_function, OPS)), os.path.join(args.out, "ops"),
                       args.target)
        with open(os.path.join(args.out, "ops", "cases.json"), "w") as f:
            json.dump({"block": BLOCK, "group": GROUP, "cases": OPS}, f, indent=1)
        print(f"ops: {len(OPS)} functions ({time.time() - t0:.0f} s)")
    t0 = time.time()
    os.environ["QATTN_CACHE_DIR"] = os.path.join(args.out, "cache")
    folders = decode_loop.precompile(m, args.target)
    print(f"cache: {len(folders)} paged decode functions ({time.time() - t0:.0f} s)")
    with open(os.path.join(args.out, "model.json"), "w") as f:
        json.dump(dict(m, target=args.target), f, indent=1)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
