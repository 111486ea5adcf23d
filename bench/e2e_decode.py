#!/usr/bin/env python3
"""End-to-end serving decode (issue 23): the attention stack of a Llama-3-8B-shaped model (32
layers, Hq 32, Hkv 8, d 128), one decode step = for every layer, append the new token's K/V to
the cache and attend, captured once in a CUDA graph and replayed; per-step time of qattn.paged
(the default scheme, 4-bit g16 min/mse, pages of 64, the Triton append, the compiled paged
decode) against bf16 over a contiguous cache (the new K/V written at each sequence's length,
then torch SDPA over the context with the cuDNN and flash backends, and flash_attn when
installed). Random inputs (only time matters); no projections, norms or MLP.

  prepare OUT     MLIR machine: compiles the decode function (bf16 queries) into OUT/cache.
  run OUT         GPU machine: the table, OUT/e2e.json.

Shapes: B 8 and 32 at contexts 4K, 16K, 32K, 64K (every sequence that long) and a varlen batch
(B 32, lengths spread evenly over 1K .. 32K; bf16 pads every sequence to the longest). Each
layer has its own cache where memory allows; where it does not (bf16 at large B x context)
layers share the caches of fewer layers in turn (layer l uses cache l mod C; every cache is far
larger than the 50 MB L2), and the table says C.

usage: e2e_decode.py prepare OUT
       e2e_decode.py run OUT [--only B8,B32,varlen] [--contexts 4096,...] [--steps N] [--json PATH]
"""
import argparse
import json
import math
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
from qattn import paged  # noqa: E402

LAYERS, HQ, HKV, D, PAGE = 32, 32, 8, 128, 64
HBM_TBS = 4.8  # H200 HBM3e peak, TB/s
MEM_BUDGET = 100 * 2**30  # bytes of caches one phase may allocate


def cache_for(batch, pages, device):
    return paged.PagedKVCache(None, LAYERS, pages, PAGE, HKV, D, max_batch=batch, device=device)


def prepare(out):
    os.environ["QATTN_CACHE_DIR"] = os.path.join(out, "cache")
    cache = cache_for(1, 1, "cpu")
    print(paged.precompile(cache, HQ, dtype=torch.bfloat16))


def graph_time(step, replays):
    """Microseconds per step: ``step`` captured once in a CUDA graph, replayed."""
    for _ in range(2):
        step()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()
    graph.replay()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(3):
        start.record()
        for _ in range(replays):
            graph.replay()
        stop.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(stop) * 1e3 / replays)
    del graph
    return sorted(times)[1]


def run_qattn(lens, steps):
    """(append+attention, attention only, append only) us per step; KV bytes per token."""
    b, dev = len(lens), torch.device("cuda")
    cap = max(lens) + steps * 8 + PAGE
    mp = math.ceil(cap / PAGE)
    cache = cache_for(b, b * mp, dev)
    table = torch.randperm(b * mp, device=dev).to(torch.int32).reshape(b, mp)
    lengths = torch.tensor(lens, dtype=torch.int32, device=dev)
    prompt = max(lens)
    for layer in range(LAYERS):  # the prompts, through the same append
        k = torch.randn(b, HKV, prompt, D, device=dev, dtype=torch.bfloat16)
        cache.prefill(layer, k, torch.randn_like(k), table, lengths)
        del k
    q = torch.randn(b, HQ, D, device=dev, dtype=torch.bfloat16)
    kv = torch.randn(2, b, HKV, 1, D, device=dev, dtype=torch.bfloat16)

    def attend(lens_after):
        for layer in range(LAYERS):
            paged.decode(q, cache, layer, table, lens_after)

    def append():
        for layer in range(LAYERS):
            cache.append(layer, kv[0], kv[1], table, lengths)

    def step():
        append()
        lengths.add_(1)
        attend(lengths)

    t_attn = graph_time(lambda: attend(lengths), 20)
    t_append = graph_time(append, 20)
    t_step = graph_time(step, 20)
    per_token = cache.page_bytes() / PAGE
    del cache
    torch.cuda.empty_cache()
    return t_step, t_attn, t_append, per_token


def bf16_backends():
    """name -> f(q [B, Hkv, Hq/Hkv, d], k, v [B, Hkv, N, d]) for each bf16 attention here."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    out = {}
    # SDPA's memory-efficient backend is left out: 2.9-3.5x slower than flash at B8 (4K, 32K).
    for name, be in (("sdpa-cudnn", SDPBackend.CUDNN_ATTENTION),
                     ("sdpa-flash", SDPBackend.FLASH_ATTENTION)):
        def f(q, k, v, be=be):
            with sdpa_kernel([be]):
                return torch.nn.functional.scaled_dot_product_attention(q, k, v)
        out[name] = f
    try:
        from flash_attn import flash_attn_with_kvcache

        def fa(q, k, v):  # FlashAttention's layout: [B, N, H, d]
            return flash_attn_with_kvcache(q.reshape(q.shape[0], 1, HQ, D),
                                           k.transpose(1, 2), v.transpose(1, 2))
        out["flash_attn"] = fa
    except ImportError:
        pass
    return out


def run_bf16(lens, steps, backends):
    """{backend: (append+attention, attention) us per step}, caches C, bytes per token."""
    b, dev = len(lens), torch.device("cuda")
    n = max(lens)  # padded to the longest
    cap = n + steps * 8
    per_layer = 2 * b * HKV * cap * D * 2
    caches = max(1, min(LAYERS, MEM_BUDGET // per_layer))
    ks = [torch.randn(b, HKV, cap, D, device=dev, dtype=torch.bfloat16) for _ in range(caches)]
    vs = [torch.randn_like(k) for k in ks]
    q = torch.randn(b, HKV, HQ // HKV, D, device=dev, dtype=torch.bfloat16)
    new = torch.randn(2, b, HKV, D, device=dev, dtype=torch.bfloat16)
    rows = torch.arange(b, device=dev)
    pos = torch.tensor(lens, dtype=torch.long, device=dev)
    result = {}
    for name, f in backends.items():
        def attend():
            for layer in range(LAYERS):
                c = layer % caches
                f(q, ks[c][:, :, :n], vs[c][:, :, :n])

        def step():
            for layer in range(LAYERS):
                c = layer % caches
                ks[c][rows, :, pos] = new[0]
                vs[c][rows, :, pos] = new[1]
                f(q, ks[c][:, :, :n], vs[c][:, :, :n])
            pos.add_(1)
        try:
            result[name] = (graph_time(step, 10), graph_time(attend, 10))
        except RuntimeError as e:  # a backend that does not take this shape
            result[name] = str(e).splitlines()[0][:100]
        pos.copy_(torch.tensor(lens, dtype=torch.long, device=dev))
    del ks, vs
    torch.cuda.empty_cache()
    return result, caches, 2 * HKV * D * 2


def run(out, only, contexts, steps, json_path=None):
    dev = torch.device("cuda")
    os.environ["QATTN_CACHE_DIR"] = os.path.join(out, "cache")
    rows = []  # in --only's order
    for what in only:
        if what == "varlen":
            rows.append(("B32 varlen 1K..32K", [1024 * (i + 1) for i in range(32)]))
        elif what in ("B8", "B32"):
            b = int(what[1:])
            rows += [(f"B{b} N{n // 1024}K", [n] * b) for n in contexts]
        else:
            sys.exit(f"e2e_decode: --only takes B8, B32 and varlen, got {what!r}")
    backends = bf16_backends()
    results = []
    print(f"{torch.cuda.get_device_name(dev)}; {LAYERS} layers, Hq {HQ}, Hkv {HKV}, d {D}; "
          f"per-step us (append + attention of all layers, one CUDA graph replay)")
    for name, lens in rows:
        t_step, t_attn, t_append, q_tok = run_qattn(lens, steps)
        bf, caches, bf_tok = run_bf16(lens, steps, backends)
        timed = {k: v for k, v in bf.items() if isinstance(v, tuple)}
        best = min(timed, key=lambda k: timed[k][0])
        kv_bytes = sum(lens) * q_tok * LAYERS
        row = dict(shape=name, lens=lens, qattn_step_us=t_step, qattn_attention_us=t_attn,
                   qattn_append_us=t_append, qattn_bytes_per_token_layer=q_tok,
                   qattn_tbs=kv_bytes / t_step / 1e6, bf16=bf, bf16_best=best,
                   bf16_caches=caches, bf16_bytes_per_token_layer=bf_tok,
                   speedup=timed[best][0] / t_step,
                   attention_speedup=timed[best][1] / t_attn)
        results.append(row)
        others = ", ".join(f"{k} {v[0]:.0f}" if isinstance(v, tuple) else f"{k}: {v}"
                           for k, v in bf.items())
        print(f"{name:20s} qattn {t_step:8.0f} (attention {t_attn:.0f}, append {t_append:.0f}; "
              f"{row['qattn_tbs']:.2f} TB/s = {row['qattn_tbs'] / HBM_TBS:.0%} of HBM)  "
              f"bf16 best {best} {timed[best][0]:.0f} (attention {timed[best][1]:.0f}; "
              f"C={caches})  {row['speedup']:.2f}x, attention {row['attention_speedup']:.2f}x"
              f"  [{others}]", flush=True)
        with open(json_path or os.path.join(out, "e2e.json"), "w") as f:  # after every row
            json.dump(dict(device=torch.cuda.get_device_name(dev), layers=LAYERS, hq=HQ,
                           hkv=HKV, d=D, page=PAGE, rows=results), f, indent=1)


def main():
    ap = argparse.ArgumentParser(usage=__doc__.split("usage: ")[1])
    ap.add_argument("mode", choices=("prepare", "run"))
    ap.add_argument("out")
    ap.add_argument("--only", default="B8,B32,varlen")
    ap.add_argument("--contexts", default="4096,16384,32768,65536")
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--json", help="where to write the results (default OUT/e2e.json)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    if a.mode == "prepare":
        prepare(a.out)
    else:
        run(a.out, a.only.split(","), [int(c) for c in a.contexts.split(",")], a.steps, a.json)


if __name__ == "__main__":
    main()
