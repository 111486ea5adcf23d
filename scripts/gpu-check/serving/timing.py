#!/usr/bin/env python3
"""Times the serving-form decode (cases.py's llama_int4_d128: Hq 32, Hkv 8,
d 128, 4-bit K/V, group 32, pages of 64) at batch 8 and 32K keys per
sequence, next to the static shape (the tile layer, contiguous cache)
(static_llama.mlir), in one run on the GPU machine; prints median times and
the KV bytes read per microsecond.

The pages hold random codes and constants (no quantization: only the bytes
matter for time) at shuffled physical ids.

usage: timing.py SERVING_ART STATIC_ART QATTN_RUN WORK [VARIANT_ART...]

Each VARIANT_ART (another build of the serving function, e.g. the previous
tree's or another tiling's) is timed on the same inputs, after the others.
"""
import os
import re
import subprocess
import sys

import numpy as np

B, HQ, HKV, D, L, P, BLOCK, GROUP = 8, 32, 8, 128, 32768, 64, 64, 32


def median(log):
    m = re.search(r"median ([0-9.]+) us", log)
    return float(m.group(1)) if m else float("nan")


def main():
    serving, static_art, run, work = sys.argv[1:5]
    variants = sys.argv[5:]
    rng = np.random.default_rng(1)
    os.makedirs(work, exist_ok=True)
    pages = B * L // P
    arrays = {
        "q": rng.standard_normal((B, HQ, 1, D)).astype(np.float16),
        "kv_lens": np.full(B, L, np.int32),
        "page_table": rng.permutation(pages).astype(np.int32).reshape(B, L // P),
        "k_buffer": np.zeros((B, HKV, P, D), np.int8),
        "k_buffer_scale": np.full((B, HKV), 0.01, np.float32),
    }
    arrays["v_buffer"], arrays["v_buffer_scale"] = arrays["k_buffer"], arrays["k_buffer_scale"]
    for p in "kv":
        arrays[f"{p}_codes"] = rng.integers(0, 256, (pages, P, HKV * D // 2), np.uint8).view(np.int8)
        arrays[f"{p}_scales"] = rng.uniform(0.001, 0.02, (pages, HKV, P // BLOCK)).astype(np.float32)
        arrays[f"{p}_group_scales"] = rng.integers(1, 18, (pages, HKV, P // GROUP, D), np.int8)
        arrays[f"{p}_zeros"] = rng.integers(0, 16, (pages, HKV, P // GROUP, D), np.int8)
    inputs = []
    for name, a in arrays.items():
        np.save(f"{work}/{name}.npy", a)
        inputs += ["--input", f"{name}={work}/{name}.npy"]
    static = []
    for p in "kv":
        for name, a in ((f"{p}_codes", rng.integers(0, 256, (B, L, HKV * D // 2), np.uint8).view(np.int8)),
                        (f"{p}_scales", rng.uniform(0.001, 0.02, (B, HKV, L // BLOCK)).astype(np.float32)),
                        (f"{p}_group_scales", rng.integers(1, 18, (B, HKV, L // GROUP, D), np.int8)),
                        (f"{p}_zeros", rng.integers(0, 16, (B, HKV, L // GROUP, D), np.int8))):
            np.save(f"{work}/static_{name}.npy", a)
            static += ["--input", f"{name}={work}/static_{name}.npy"]
    static += ["--input", f"q={work}/q.npy"]
    kv_bytes = sum(arrays[f"{p}_{n}"].nbytes for p in "kv"
                   for n in ("codes", "scales", "group_scales", "zeros"))
    rows = []
    for label, cmd in (
            ("serving (tile layer, paged, lengths)",
             [run, serving, "--function", "llama_int4_d128", "--repeat", "50"] + inputs),
            ("static shape (contiguous, N fixed)",
             [run, static_art, "--function", "static_llama", "--repeat", "50"] + static),
            *((f"variant {v}", [run, v, "--function", "llama_int4_d128", "--repeat", "50"] + inputs)
              for v in variants)):
        r = subprocess.run(cmd + ["--output-dir", f"{work}/out"], capture_output=True, text=True)
        if r.returncode:
            print(f"{label}: failed\n{r.stdout}\n{r.stderr}")
            return 1
        us = median(r.stdout + r.stderr)
        rows.append((label, us))
        print(f"{label}: median {us:.1f} us, {kv_bytes / us / 1e6:.2f} TB/s of KV bytes "
              f"({kv_bytes / 1e6:.0f} MB)", flush=True)
    print(f"B{B} Hq{HQ} Hkv{HKV} d{D} L{L} 4-bit: serving / static = {rows[0][1] / rows[1][1]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
