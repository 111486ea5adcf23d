#!/usr/bin/env python3
"""stories260K decoded token by token through the serving API (``qattn.paged``): every layer's
new K/V go into a ``PagedKVCache`` with ``cache.append`` (the tail page in int8 with its fixed
scale, flushed to stage 2 when it fills), and its attention is ``paged.decode`` over the cache,
teacher-forced over the same sampled sequences as bench/accuracy/stories260k.py (seed, count,
length, temperature): a prompt of ``--prompt`` tokens in one append (prefill; the prompt's own
attention is float attention), then one token per step. ``--prompt 1`` starts from BOS alone,
whose magnitude alone then sets the first tail page's scale (see the note in docs/ACCURACY.md). Reports top-1 next-token agreement and mean KL(float || serving) against
the float model, over the positions from ``--skip`` on (stories260k.py's default block, 32, so
the positions match its table) and over all positions.

On CPU tensors (the default) the decode is the cpu artifact, the reference lowering: the
executable specification of the serving path. The GPU lowering takes head dims 64 and 128 only,
and stories260K's is 8: ``--pad-head-dim D`` (default on CUDA: 64) stores D channels, the
model's and D - 8 zero channels after them, in K, V and the queries, decodes with the model's
softmax scale (1 / sqrt(8)) and keeps the model's channels of the output. The zero channels
change nothing: a stage-1 scale is a block's absolute max, a zero channel's stage-2 group
decodes to exact zeros, and a zero query channel adds nothing to a score (the CPU run with
``--pad-head-dim 64`` prints the unpadded run's numbers, test/Accuracy/serving-path.test).

usage: bench/accuracy/serving_path.py [--tokens N] [--seqs B] [--seed S] [--page P] [--prompt N]
       [--schemes default,int8,...] [--device cpu|cuda] [--pad-head-dim D]
       [--expect NAME.top1>=X]... [--precompile]

``--precompile`` (on the machine with qattn-compile) compiles the CUDA decode functions that
``--device cuda`` with the same options runs into ``--cache-dir`` and exits; carry that folder
to the GPU machine and pass it there as ``--cache-dir``. ``--against-cpu`` also runs each scheme
on CPU tensors (the executable specification, unpadded) and reports the largest difference of
the logits and the agreement of their top-1 tokens over the scored positions (metrics
``cpu_diff`` and ``cpu_top1`` for ``--expect``), and repeats every decode call on the CPU over
a copy of the same cache (the queries, table and lengths too): the largest difference of the
attention outputs relative to their largest magnitude (``attn_diff``). The logits compound each
layer's difference through the later layers' K/V, where a quantized code at a rounding boundary
may round the other way; the lockstep comparison sees one kernel call at a time. With
``--precompile`` it compiles the CPU functions too.
"""

import argparse
import os
import sys
import time

import numpy as np
import torch

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "python"))
from qattn import compiler, ir, llama2c, paged  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stories260k import check_expectations  # noqa: E402

# name -> (K/V scheme, what it is). Stage-1 blocks of one page.
SCHEMES = {
    "default": (lambda p: paged.DEFAULT_SCHEME if p == 64 else
                ir.Scheme(bits=(4,), group=16, block=p, anchor="min", fit="mse"),
                "BPQ 4-bit g16, grid at the group minimum, mse fit (qattn.paged's default)"),
    "bpq4": (lambda p: ir.Scheme(bits=(4,), group=16, block=p), "BPQ 4-bit g16"),
    "bpq3-min-mse": (lambda p: ir.Scheme(bits=(3,), group=16, block=p, anchor="min",
                                         fit="mse"), "BPQ 3-bit g16, minimum grid, mse fit"),
    "int8": (lambda p: ir.Scheme(bits=(), block=p), "int8 only (stage 1)"),
}


def model_scale(d, store_dim):
    """The decode's ``scale``: the model's 1 / sqrt(d) where the cache stores more channels
    than it has, else None (``decode``'s default, the same value)."""
    return None if store_dim == d else 1.0 / np.sqrt(d)


class Lockstep:
    """Every decode of a run repeated by the CPU specification on the same operands: after each
    append the cache's pools and tails are copied into a CPU cache of the same layout, which
    ``paged.decode`` then reads with the same queries, table and lengths. Unlike the logits,
    which compound the layers' differences through every later layer's K/V (a 4-bit code at a
    rounding boundary can round the other way), this compares one kernel call at a time: the
    largest |o - o_spec| over every call, and that over the largest |o_spec|."""

    def __init__(self):
        self.cache, self.diff, self.peak = None, 0.0, 0.0

    def check(self, cache, layer, q, table, lens, out, scale):
        if self.cache is None:
            self.cache = paged.PagedKVCache(
                cache.scheme, cache.num_layers, cache.num_pages, cache.page_size,
                cache.num_kv_heads, cache.head_dim, max_batch=cache.max_batch,
                v_scheme=cache.v_scheme, headroom=cache.headroom, device="cpu")
        state = lambda c, which: c.pools(layer, which) + list(c.tails(layer, which))  # noqa: E731
        for which in "kv":
            for dst, src in zip(state(self.cache, which), state(cache, which)):
                dst.copy_(src)
        spec = paged.decode(q.cpu(), self.cache, layer, table.cpu(), lens.cpu(), scale=scale)
        self.diff = max(self.diff, float((out.cpu() - spec).abs().max()))
        self.peak = max(self.peak, float(spec.abs().max()))

    @property
    def relative(self):
        return self.diff / self.peak if self.peak else 0.0


def run(model, tokens, scheme, page, prompt, device, store_dim, lockstep=None):
    """Logits [B, N, vocab]: the first ``prompt`` tokens in one ``append`` (a prefill; their
    own attention is float attention, a prefill kernel's job, and not scored), then one token
    per step, attended with ``paged.decode`` at the new length. The cache holds ``store_dim``
    channels a head (the model's, then zeros). ``lockstep``: a Lockstep that repeats each
    decode on the CPU."""
    cfg = model.cfg
    b, n = tokens.shape
    d = cfg.head_dim
    pages = -(-n // page)
    cache = paged.PagedKVCache(scheme, cfg.n_layers, b * pages, page, cfg.n_kv_heads,
                               store_dim, max_batch=b, device=device)
    pad = lambda x: np.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, store_dim - d)])  # noqa: E731
    gen = torch.Generator().manual_seed(1)
    table = torch.randperm(b * pages, generator=gen).to(torch.int32).reshape(b, pages).to(device)
    dev = lambda x: torch.from_numpy(np.ascontiguousarray(x)).to(device)  # noqa: E731
    logits = np.empty((b, n, cfg.vocab_size), np.float32)
    t = 0
    while t < n:
        m = prompt if t == 0 else 1

        def attend(layer, q, k, v):
            lens = torch.full((b,), t, dtype=torch.int32, device=device)
            cache.append(layer, dev(pad(k)), dev(pad(v)), table, lens)
            if m > 1:
                return llama2c.float_attention(q, k, v)
            query, scale = dev(pad(q[:, :, 0])), model_scale(d, store_dim)
            out = paged.decode(query, cache, layer, table, lens + 1, scale=scale)
            if lockstep:
                lockstep.check(cache, layer, query, table, lens + 1, out, scale)
            return out.cpu().numpy()[:, :, None, :d]

        logits[:, t:t + m] = model.forward(tokens[:, t:t + m], attend=attend, start=t)
        t += m
    return logits


def metrics(logits, ref_logp, skip):
    logp = llama2c.log_softmax(logits[:, skip:])
    ref = ref_logp[:, skip:]
    top1 = float(np.mean(np.argmax(logp, -1) == np.argmax(ref, -1)))
    kl = float(np.mean(np.sum(np.exp(ref) * (ref - logp), axis=-1)))
    return top1, kl


def main():
    ap = argparse.ArgumentParser(usage=__doc__.split("usage: ")[1])
    ap.add_argument("--data", default=os.path.join(REPO, "..", "shared", "data", "stories260K"))
    ap.add_argument("--tokens", type=int, default=256)
    ap.add_argument("--seqs", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument("--page", type=int, default=64, help="page = stage-1 block, tokens")
    ap.add_argument("--prompt", type=int, default=32,
                    help="tokens appended at once before the token-by-token steps")
    ap.add_argument("--skip", type=int, default=32, help="first scored position")
    ap.add_argument("--schemes", default="default,int8")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--pad-head-dim", type=int,
                    help="channels a head in the cache, the model's then zeros (default: the "
                    "model's on CPU; on CUDA, whose kernels take 64 and 128, the least of those "
                    "that holds it)")
    ap.add_argument("--cache-dir", help="compiled functions' folder (default $QATTN_CACHE_DIR)")
    ap.add_argument("--against-cpu", action="store_true",
                    help="also run each scheme on CPU tensors (the specification) and compare "
                    "the logits")
    ap.add_argument("--precompile", action="store_true",
                    help="compile the CUDA decode functions of --device cuda into --cache-dir "
                    "and exit (no GPU needed)")
    ap.add_argument("--expect", action="append", default=[],
                    help="NAME.METRIC OP NUMBER|NAME.METRIC (top1, kl; >=, <=, >, <), as "
                    "stories260k.py takes it; exit 1 when one fails")
    a = ap.parse_args()
    if a.cache_dir:
        os.environ["QATTN_CACHE_DIR"] = a.cache_dir
    model = llama2c.load(os.path.join(a.data, "stories260K.bin"))
    d = model.cfg.head_dim
    store = a.pad_head_dim
    gpu = a.device != "cpu" or a.precompile
    if store is None:
        store = d if not gpu or d in (64, 128) else min(
            (x for x in (64, 128) if x >= d), default=d)
    if store < d or store % 8:
        sys.exit(f"serving_path: --pad-head-dim must be a multiple of 8 of at least the "
                 f"model's head dim {d}, got {store}")
    names = a.schemes.split(",")
    for name in names:
        if name not in SCHEMES:
            sys.exit(f"serving_path: unknown scheme {name!r} (known: {', '.join(SCHEMES)})")
    if a.precompile:
        cfg, failed = model.cfg, False
        for name in names:
            # --against-cpu: the unpadded specification, and the padded one that repeats
            # each decode on a copy of the cache (Lockstep).
            targets = [("cuda", store)]
            if a.against_cpu:
                targets += [("cpu", dim) for dim in dict.fromkeys((d, store))]
            for target, dim in targets:
                cache = paged.PagedKVCache(SCHEMES[name][0](a.page), 1, 1, a.page,
                                           cfg.n_kv_heads, dim, max_batch=1, device="cpu")
                try:
                    folder = paged.precompile(cache, cfg.n_heads, scale=model_scale(d, dim),
                                              target=target)
                except compiler.CompileError as e:
                    failed = True
                    why = next((ln for ln in str(e).splitlines() if "error:" in ln), str(e))
                    print(f"{name}: not compiled: {why.split('error: ', 1)[-1]}",
                          file=sys.stderr)
                    break
                print(f"{name}: {folder}" + (f" ({target})" if a.against_cpu else ""))
        return 1 if failed else 0
    rng = np.random.default_rng(a.seed)
    tokens = np.array([model.generate(a.tokens - 1, a.temperature, rng) for _ in range(a.seqs)])
    ref_logp = llama2c.log_softmax(model.forward(tokens))
    print(f"stories260K, {a.seqs} x {a.tokens} tokens (seed {a.seed}, temperature "
          f"{a.temperature}), a {a.prompt}-token prompt, pages of {a.page}, {a.device}"
          + (f", head dim {d} stored as {store}" if store != d else "")
          + "; top-1 / KL against the float model")
    print(f"| scheme | what | top-1 (from {a.skip}) | KL (from {a.skip}) | top-1 (all) | KL (all) |")
    print("| --- | --- | --- | --- | --- | --- |")
    results = {}
    for name in names:
        make, what = SCHEMES[name]
        start = time.time()
        lockstep = Lockstep() if a.against_cpu else None
        logits = run(model, tokens, make(a.page), a.page, a.prompt, torch.device(a.device),
                     store, lockstep)
        (t1, kl), (t1a, kla) = metrics(logits, ref_logp, a.skip), metrics(logits, ref_logp, 0)
        results[name] = dict(top1=t1, kl=kl)
        print(f"| {name} | {what} | {t1:.1%} | {kl:.4f} | {t1a:.1%} | {kla:.4f} |"
              f"  ({time.time() - start:.0f} s)", flush=True)
        if a.against_cpu:
            spec = run(model, tokens, make(a.page), a.page, a.prompt, torch.device("cpu"), d)
            diff = float(np.max(np.abs(logits[:, a.skip:] - spec[:, a.skip:])))
            agree = float(np.mean(np.argmax(logits[:, a.skip:], -1)
                                  == np.argmax(spec[:, a.skip:], -1)))
            results[name].update(cpu_diff=diff, cpu_top1=agree, attn_diff=lockstep.relative)
            print(f"  {name} against the CPU specification (from {a.skip}): largest logit "
                  f"difference {diff:.3g}, top-1 agreement {agree:.1%}; each decode on the "
                  f"same cache: largest |o - o_spec| {lockstep.diff:.3g} "
                  f"({lockstep.relative:.2g} of the largest |o_spec|, {lockstep.peak:.3g})",
                  flush=True)
    failed = check_expectations(a.expect, results, "serving_path")
    if failed:
        sys.stdout.flush()
        print(f"serving_path: FAILED: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
