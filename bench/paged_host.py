#!/usr/bin/env python3
"""The host (Python) time of one ``qattn.paged.decode`` call: what an eager serving loop pays per
layer and step on top of the kernels (a CUDA graph replays without it). Runs on CPU tensors with
the cpu artifact, the runtime's C entry points that compute or launch stubbed (their argument
marshaling kept), so it measures the Python side alone, on any machine with qattn-compile.

  python3 bench/paged_host.py [--batch 8] [--hq 32] [--hkv 8] [--head-dim 128] [--rounds 5]

Prints the median over rounds of 2000 calls each (us per call)."""
import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from qattn import paged, runtime  # noqa: E402

ap = argparse.ArgumentParser(usage=__doc__.splitlines()[-3].strip())
ap.add_argument("--batch", type=int, default=8)
ap.add_argument("--hq", type=int, default=32)
ap.add_argument("--hkv", type=int, default=8)
ap.add_argument("--head-dim", type=int, default=128)
ap.add_argument("--rounds", type=int, default=5)
a = ap.parse_args()
os.environ.setdefault("QATTN_CACHE_DIR", tempfile.mkdtemp(prefix="qattn-paged-host-"))

P, L = 64, 300
rng = np.random.default_rng(0)
pages = a.batch * (L // P + 1)
cache = paged.PagedKVCache(None, 1, pages, P, a.hkv, a.head_dim, max_batch=a.batch)
table = torch.arange(pages, dtype=torch.int32).reshape(a.batch, -1)
lens = torch.full((a.batch,), L, dtype=torch.int32)
k = torch.from_numpy(rng.standard_normal((a.batch, a.hkv, L, a.head_dim)).astype(np.float32))
cache.append(0, k, k, table, torch.zeros_like(lens))
q = torch.from_numpy(rng.standard_normal((a.batch, a.hq, a.head_dim)).astype(np.float32))
cache._host_checks = False  # as on CUDA without debug: no host reads of the lengths
paged.decode(q, cache, 0, table, lens)  # compiles and loads the function

lib = runtime._library()
lib.qattnRtRun = lib.qattnRtRunWorkspace = lambda *args: 0
times = []
for _ in range(a.rounds):
    t0 = time.perf_counter()
    for _ in range(2000):
        paged.decode(q, cache, 0, table, lens)
    times.append((time.perf_counter() - t0) / 2000 * 1e6)
print(f"paged.decode host side, B{a.batch} Hq{a.hq} Hkv{a.hkv} d{a.head_dim}: "
      f"{statistics.median(times):.1f} us per call (rounds: "
      f"{', '.join(f'{t:.1f}' for t in times)})")
