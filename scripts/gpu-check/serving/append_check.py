"""The Triton append of qattn.paged (qattn/paged_append.py) against the torch-ops append (the form
that test/Python/paged-cache.test checks bit-exact against the NumPy model of docs/FORMAT.md) on
the GPU: two caches of one configuration take the same random appends (prompts, one-token decode
steps, multi-token chunks across page boundaries, rows that append nothing, lengths 1 .. ~1100),
one through each path, and every pool page, tail row in use, tail scale and amax must be equal
bit for bit. Schemes: the default (4-bit g16 min/mse), 3-bit mixed 3/2 per head msb_first with
the zero anchor and minmax, 2-bit g32, int8 K with 4-bit V, page 128; f32, f16 and bf16 inputs.
Then the time of one decode-step append (T = 1, K and V of one layer) on each path.

usage: append_check.py [--seed N] [--only NAME,..] [--no-timing] [--verbose]"""

import argparse
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "python"))
from qattn import ir, paged, paged_append  # noqa: E402

ap = argparse.ArgumentParser(usage=__doc__.splitlines()[-1][7:])
ap.add_argument("--seed", type=int, default=5)
ap.add_argument("--only", default="", help="comma-separated substrings of the configs to run")
ap.add_argument("--no-timing", action="store_true")
ap.add_argument("--verbose", action="store_true", help="a line per append")
ARGS = ap.parse_args()
DEV = torch.device("cuda")

CONFIGS = [  # name, K scheme, V scheme, page, Hkv, d, input dtype
    ("default_p64_d128", None, None, 64, 8, 128, torch.bfloat16),
    ("mixed3-2_msb_zero_minmax", ir.Scheme(bits=(3, 2), group=16, block=32, order="msb_first"),
     ir.Scheme(bits=(2, 3), group=16, block=32, order="msb_first"), 64, 2, 64, torch.float16),
    ("int2_g32_min_mse_p128", ir.Scheme(bits=(2,), group=32, block=64, anchor="min", fit="mse"),
     None, 128, 4, 128, torch.float32),
    ("int8k_int4v", ir.Scheme(bits=(), block=64),
     ir.Scheme(bits=(4,), group=16, block=64, anchor="min", fit="mse"), 64, 4, 64, torch.bfloat16),
]


def with_path(path, fn):
    old = os.environ.get(paged_append.ENV)
    os.environ[paged_append.ENV] = path
    try:
        return fn()
    finally:
        if old is None:
            del os.environ[paged_append.ENV]
        else:
            os.environ[paged_append.ENV] = old


def state(cache, lens):
    """Pools, tails' filled rows (the rest is never read, and the paths leave it differently),
    tail scales, amax and the error flags."""
    out = [cache.errors.clone()]
    batch, p = len(lens), cache.page_size
    filled = torch.arange(p, device=lens.device)[None] < (lens % p)[:, None]  # [B, P]
    for layer in range(cache.num_layers):
        for which in "kv":
            out += [t.clone() for t in cache.pools(layer, which)]
            tail, scale = cache.tails(layer, which, batch)
            side = cache._sides(layer)["kv".index(which)]
            out += [tail.transpose(1, 2)[filled].clone(), scale.clone(),
                    side.amax[:batch].clone()]
    return out


def compare(a, b):
    """(index, differing elements, shape) of each tensor of two states that differs."""
    return [(i, (x != y).sum().item(), list(x.shape)) for i, (x, y) in enumerate(zip(a, b))
            if not torch.equal(x, y)]


def run_config(name, ks, vs, page, hkv, d, dtype, gen):
    b, num_pages = 6, 160
    caches = [paged.PagedKVCache(ks, 1, num_pages, page, hkv, d, max_batch=b, v_scheme=vs,
                                 device=DEV) for _ in range(2)]
    perm = torch.randperm(num_pages, generator=gen).to(torch.int32)
    table = perm[: b * 25].reshape(b, 25).to(DEV)
    lens = torch.zeros(b, dtype=torch.int32, device=DEV)
    steps = [("prompt", 900), ("chunk", 70), ("decode", 1), ("decode", 1), ("chunk", 17),
             ("chunk", page), ("decode", 1), ("chunk", 2 * page + 3)]
    steps += [("decode", 1)] * 70
    failures = 0
    for step, (kind, t) in enumerate(steps):
        k = (torch.randn(b, hkv, t, d, generator=gen) * 3).to(dtype).to(DEV)
        v = (torch.randn(b, hkv, t, d, generator=gen) * 0.5).to(dtype).to(DEV)
        if kind == "prompt":
            n = torch.randint(1, t + 1, (b,), generator=gen, dtype=torch.int32).to(DEV)
        else:
            n = torch.randint(0, t + 1, (b,), generator=gen, dtype=torch.int32).to(DEV)
        if step % 3 == 1:  # some calls with every row appending all T tokens
            n_arg = None
        else:
            n_arg = n
        with_path("torch", lambda: caches[0].append(0, k, v, table, lens, n_arg))
        with_path("triton", lambda: caches[1].append(0, k, v, table, lens, n_arg))
        lens = lens + (torch.full_like(lens, t) if n_arg is None else n)
        if ARGS.verbose:
            print(f"  {name} step {step}: {kind} T={t}", flush=True)
        # The pools compare without the torch path's extra page (its masked-off writes).
        bad = compare(state(caches[0], lens), state(caches[1], lens))
        if bad:
            failures += 1
            print(f"FAIL {name} step {step} ({kind} T={t}, lens {lens.tolist()}): "
                  f"differing tensors (index, count, shape) {bad[:6]}")
            if failures > 2:
                break
    print(f"{'ok  ' if not failures else 'FAIL'} {name}: {len(steps)} appends, final lengths "
          f"{lens.tolist()}")
    return failures == 0


def time_append(batch, path):
    cache = paged.PagedKVCache(None, 1, batch * 600, 64, 8, 128, max_batch=batch, device=DEV)
    table = torch.arange(batch * 600, dtype=torch.int32, device=DEV).reshape(batch, 600)
    lens = torch.full((batch,), 32768 + 17, dtype=torch.int32, device=DEV)
    k = torch.randn(batch, 8, 1, 128, device=DEV, dtype=torch.bfloat16)
    v = torch.randn_like(k)

    def step():
        cache.append(0, k, v, table, lens)

    def timed():
        for _ in range(3):
            step()
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(10):
                step()
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        graph.replay()
        start.record()
        for _ in range(20):
            graph.replay()
        stop.record()
        torch.cuda.synchronize()
        return start.elapsed_time(stop) / 200 * 1e3

    return with_path(path, timed)


def main():
    if not paged_append.available(DEV):
        print("FAIL: the Triton append is not available (Triton missing?)")
        return 1
    gen = torch.Generator().manual_seed(ARGS.seed)
    print(f"append_check: seed {ARGS.seed}")
    chosen = [c for c in CONFIGS if not ARGS.only or any(o in c[0] for o in ARGS.only.split(","))]
    ok = all([run_config(*c, gen) for c in chosen])
    for batch in () if ARGS.no_timing else (8, 32):
        t_torch, t_triton = time_append(batch, "torch"), time_append(batch, "triton")
        print(f"decode-step append (K and V of one layer, B{batch}, Hkv 8, d 128, T 1, bf16, "
              f"CUDA graph): torch ops {t_torch:.1f} us, Triton {t_triton:.1f} us")
    print("append_check: all passed" if ok else "append_check: FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
