#!/usr/bin/env python3
"""A decode loop of a small Llama-shaped transformer (random weights, no downloads) on the GPU,
with its attention run three ways:

  bf16    PyTorch SDPA over a contiguous bf16 KV cache (the baseline);
  4bit    qattn's serving path: every layer's K/V in a qattn.paged.PagedKVCache of the default
          scheme (paged.DEFAULT_SCHEME: 4-bit g16, the grid at the group minimum, the mse fit),
          pages of 64 tokens in a shuffled block table, the open tail page in int8; one token
          per layer and step written by cache.append, attention by paged.decode (the compiled
          paged decode function);
  mixed   the same with headwise mixed precision: KV head 0 at 4 bits, head 1 at 2 bits.

The prompt: its own attention is the baseline's bf16 SDPA over its unquantized K/V (a prefill
kernel's job; so the qattn runs' prefill logits are bf16's), and cache.prefill writes its K/V
into the paged cache in one call (its whole pages to stage 2 from the float values, the rest
into the tail, whose scale comes from these tokens). Then every decode step appends and attends
over the quantized cache. A step reads nothing on the host: lengths, RoPE positions and tokens
are device tensors advanced in place, so a step could be captured in a CUDA graph (the
appends' error flags are read once per run, after the last step).

The bf16 model decodes greedily; the qattn models are fed the same tokens (teacher forcing), so
every step compares like with like. Reported per scheme: attention time per decode step (GPU
time between CUDA events, all layers: cache append + attention, and paged.decode alone), KV
memory, logits drift against bf16 over the decode steps (relative L2, max |diff|), greedy-token
agreement over the decode steps (the qattn model's argmax against the bf16 token), a
free-running greedy decode's first divergence, and a check of layer 0's paged.decode output
against float64 attention of the cache content as qattn.format dequantizes it (paged_kv +
varlen_attention) at a few lengths: the first step, the middle, where a tail page fills and the
step after, the last. Uncaptured, a step's GPU time at batch 1 is bound by the host's launches
(paged.decode and cache.append are Python calls); bench/e2e_decode.py times captured steps.

paged.decode compiles one function per scheme and head configuration into its disk cache,
here ARTIFACTS/cache (QATTN_CACHE_DIR). The GPU machine has no qattn-compile: there it finds the
cuda artifacts that scripts/torch-check/prepare.py compiled (precompile() below) on the MLIR
machine, with ARTIFACTS/model.json, which fixes the sizes.

With --device cpu it runs the same loop on the CPU over cpu artifacts (the reference lowering;
prepare.py --target cpu --small makes a tiny model's), which is how the CPU test suite checks the
loop without a GPU; the times then are wall-clock times and mean little.

usage: decode_loop.py [--artifacts artifacts/torch-check] [--schemes 4bit,mixed]
                      [--device cuda|cpu] [--min-agree FRACTION]
"""
import argparse
import contextlib
import json
import os
import statistics
import sys
import time

import numpy as np
import torch
import torch.nn.functional as Fn

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
from qattn import format as F  # noqa: E402
from qattn import ir, paged  # noqa: E402

DEV = None  # set by main(): the CUDA device, or the CPU with --device cpu

# K and V schemes; stage-1 blocks of 64 tokens, so pages are multiples of 64.
SCHEMES = {
    "4bit": paged.DEFAULT_SCHEME,
    "mixed": ir.Scheme(bits=(4, 2), group=16, block=64, anchor="min", fit="mse"),
}
CHECK_TOL = 1e-2  # kernel vs float64: max |error| / max |reference| (bf16 output: ~4e-3)


# --------------------------------------------------------------------------------------------
# The model
# --------------------------------------------------------------------------------------------


class Llama:
    """Llama-style blocks: RMSNorm, RoPE, grouped-query attention, SwiGLU MLP; bf16 weights
    drawn from N(0, 1/fan_in) (embeddings N(0, 1))."""

    def __init__(self, cfg):
        self.cfg = cfg
        g = torch.Generator(device=DEV).manual_seed(cfg["seed"])
        dim, h, hkv, d, ffn = (cfg["dim"], cfg["heads"], cfg["kv_heads"], cfg["head_dim"],
                               cfg["ffn"])

        def w(*shape, std=None):
            std = std if std is not None else shape[0] ** -0.5
            return (torch.randn(*shape, generator=g, device=DEV) * std).to(torch.bfloat16)

        self.emb = w(cfg["vocab"], dim, std=1.0)
        self.layers = [dict(wq=w(dim, h * d), wk=w(dim, hkv * d), wv=w(dim, hkv * d),
                            wo=w(h * d, dim), w1=w(dim, ffn), w3=w(dim, ffn), w2=w(ffn, dim))
                       for _ in range(cfg["layers"])]
        self.head = w(dim, cfg["vocab"])
        inv = 1.0 / (cfg["rope_theta"] ** (torch.arange(0, d, 2, device=DEV).float() / d))
        t = torch.arange(cfg["prompt"] + cfg["gen"] + 1, device=DEV).float()
        freqs = torch.outer(t, inv)
        self.cos, self.sin = freqs.cos(), freqs.sin()

    @staticmethod
    def norm(x):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-5)).to(torch.bfloat16)

    def rope(self, x, pos):
        """x [B, H, T, d], row b at positions pos[b] .. pos[b]+T-1 (rotate-half convention);
        pos a device tensor [B], gathered from, not read."""
        at = pos.long()[:, None] + torch.arange(x.shape[2], device=x.device)
        cos, sin = self.cos[at][:, None], self.sin[at][:, None]
        xf = x.float()
        x1, x2 = xf[..., ::2], xf[..., 1::2]
        out = torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1).flatten(-2)
        return out.to(torch.bfloat16)

    def forward(self, tokens, attn):
        """Logits (f32) of the last position of tokens [B, T], which follow the ``attn.lens``
        tokens ``attn`` holds; ``attn(layer, q, k, v)`` does attention."""
        cfg = self.cfg
        b, t = tokens.shape
        h, hkv, d = cfg["heads"], cfg["kv_heads"], cfg["head_dim"]
        x = self.emb[tokens]
        for i, L in enumerate(self.layers):
            hn = self.norm(x)
            q = (hn @ L["wq"]).view(b, t, h, d).transpose(1, 2)
            k = (hn @ L["wk"]).view(b, t, hkv, d).transpose(1, 2)
            v = (hn @ L["wv"]).view(b, t, hkv, d).transpose(1, 2).contiguous()
            q, k = self.rope(q, attn.lens), self.rope(k, attn.lens)
            o = attn(i, q, k, v)
            x = x + o.transpose(1, 2).reshape(b, t, h * d) @ L["wo"]
            hn = self.norm(x)
            x = x + (Fn.silu(hn @ L["w1"]) * (hn @ L["w3"])) @ L["w2"]
        return (self.norm(x[:, -1]) @ self.head).float()


# --------------------------------------------------------------------------------------------
# Attention backends
# --------------------------------------------------------------------------------------------


class WallEvent:
    """A CPU stand-in for torch.cuda.Event (--device cpu)."""

    def record(self):
        self.t = time.perf_counter()

    def elapsed_time(self, end):
        return (end.t - self.t) * 1e3


class Timer:
    """CUDA-event intervals (CPU: wall-clock), summed per decode step."""

    def __init__(self):
        self.pending, self.steps = {}, {}

    def span(self, key):
        if DEV.type == "cuda":
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        else:
            s, e = WallEvent(), WallEvent()
        self.pending.setdefault(key, []).append((s, e))
        return s, e

    def end_step(self):
        if DEV.type == "cuda":
            torch.cuda.synchronize()
        for key, spans in self.pending.items():
            self.steps.setdefault(key, []).append(sum(s.elapsed_time(e) for s, e in spans) * 1e3)
        self.pending = {}

    def median_us(self, key):
        return statistics.median(self.steps[key]) if self.steps.get(key) else float("nan")


try:
    from torch.nn.attention import SDPBackend, sdpa_kernel

    def sdpa_backends():
        """Not cuDNN's attention, PyTorch's first choice on Hopper: it builds a plan for every
        new shape, which a decode loop's growing length pays each step (~8 ms a layer on the
        H200, torch 2.11)."""
        return sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION,
                            SDPBackend.MATH])
except ImportError:  # torch < 2.3
    sdpa_backends = contextlib.nullcontext


def sdpa(q, k, v, causal):
    """bf16 attention, grouped-query, causal aligned to the last key (here Nq = Nk or Nq = 1)."""
    try:
        with sdpa_backends():
            return Fn.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
    except (TypeError, AttributeError):  # torch < 2.5: no enable_gqa; < 2.0: no SDPA
        r = q.shape[1] // k.shape[1]
        k, v = k.repeat_interleave(r, 1), v.repeat_interleave(r, 1)
        if hasattr(Fn, "scaled_dot_product_attention"):
            return Fn.scaled_dot_product_attention(q, k, v, is_causal=causal)
        s = (q.float() @ k.float().transpose(-1, -2)) / q.shape[-1] ** 0.5
        if causal:
            nq, nk = s.shape[-2:]
            mask = torch.ones(nq, nk, dtype=torch.bool, device=s.device).triu(nk - nq + 1)
            s = s.masked_fill(mask, float("-inf"))
        return (torch.softmax(s, -1) @ v.float()).to(q.dtype)


class BF16Attention:
    """SDPA over a contiguous bf16 cache; slicing it to the length needs the length on the host
    (``n``), which the baseline may keep."""

    def __init__(self, cfg):
        self.cfg = cfg
        cap = cfg["prompt"] + cfg["gen"]
        shape = (cfg["batch"], cfg["kv_heads"], cap, cfg["head_dim"])
        self.k = [torch.zeros(shape, dtype=torch.bfloat16, device=DEV) for _ in range(cfg["layers"])]
        self.v = [torch.zeros(shape, dtype=torch.bfloat16, device=DEV) for _ in range(cfg["layers"])]
        self.lens = torch.zeros(cfg["batch"], dtype=torch.int32, device=DEV)
        self.n = 0
        self.timer = Timer()

    def bytes(self, tokens):
        """The cache of ``tokens`` tokens per sequence, all layers."""
        return self.cfg["batch"] * tokens * self.bytes_per_token()

    def bytes_per_token(self):
        c = self.cfg
        return c["layers"] * 2 * c["kv_heads"] * c["head_dim"] * 2

    def advance(self, t):
        self.lens += t
        self.n += t

    def __call__(self, layer, q, k, v):
        n, t = self.n, q.shape[2]
        s, e = self.timer.span("total")
        s.record()
        self.k[layer][:, :, n : n + t] = k
        self.v[layer][:, :, n : n + t] = v
        o = sdpa(q, self.k[layer][:, :, : n + t], self.v[layer][:, :, : n + t], t > 1)
        e.record()
        return o


class PagedKV:
    """The model's K/V in one ``paged.PagedKVCache`` (``cache``; per-head widths natively: the
    paged decode lowers its grid once per width pair of the KV heads), with the example's
    accounting."""

    def __init__(self, cfg, scheme, num_pages, device):
        self.cfg = cfg
        self.group = cfg["heads"] // cfg["kv_heads"]  # query heads per KV head
        self.cache = paged.PagedKVCache(scheme, cfg["layers"], num_pages, cfg["page"],
                                        cfg["kv_heads"], cfg["head_dim"],
                                        max_batch=cfg["batch"], device=device)

    def page_bytes(self):
        """One page of K and V of one layer (all KV heads)."""
        return self.cache.page_bytes()

    def bytes_per_token(self):
        """K and V of one token in a full page, all layers."""
        return self.page_bytes() * self.cfg["layers"] / self.cfg["page"]

    def tail_bytes(self):
        """One batch row's tails of K and V of one layer (int8 page + scales)."""
        return sum(t[0].numel() * t.element_size() for which in "kv"
                   for t in self.cache.tails(0, which))

    def allocated_bytes(self):
        return self.cache.allocated_bytes()

    def describe(self):
        bits = self.cache.scheme.head_bits(self.cfg["kv_heads"])
        return "PagedKVCache, KV head bits " + "/".join(map(str, bits))


class QAttnAttention:
    """The serving path: ``cache.append`` and ``paged.decode`` with the lengths on the device."""

    def __init__(self, cfg, scheme):
        self.cfg = cfg
        b, page = cfg["batch"], cfg["page"]
        width = -(-(cfg["prompt"] + cfg["gen"]) // page)
        self.kv = PagedKV(cfg, scheme, b * width, DEV)
        # Shuffled physical pages: only the table says where a sequence's pages are.
        perm = torch.randperm(b * width, generator=torch.Generator().manual_seed(2))
        self.table = perm.to(torch.int32).reshape(b, width).to(DEV)
        self.lens = torch.zeros(b, dtype=torch.int32, device=DEV)  # before this forward
        self.after = self.lens + 1  # after a decode step's append
        self.timer = Timer()
        self.layer0 = None  # layer 0's (q, out) of the last decode step, for check()
        self.checks = []

    def advance(self, t):
        self.lens += t
        torch.add(self.lens, 1, out=self.after)

    def __call__(self, layer, q, k, v):
        s, e = self.timer.span("total")
        s.record()
        if q.shape[2] > 1:  # the prompt: bf16 attention of its own K/V, which go to the cache
            self.kv.cache.prefill(layer, k, v, self.table)
            o = sdpa(q, k, v, True)
        else:
            self.kv.cache.append(layer, k, v, self.table, self.lens)
            so, eo = self.timer.span("op")
            so.record()
            o = paged.decode(q[:, :, 0], self.kv.cache, layer, self.table, self.after)
            o = o.unsqueeze(2)
            eo.record()
            if layer == 0:
                self.layer0 = (q, o)
        e.record()
        return o

    def check(self):
        """Layer 0's output of the last step against float64 attention of the dequantized cache
        (between steps: reads the lengths and the cache on the host)."""
        q, o = self.layer0
        cache, lens = self.kv.cache, self.lens
        ref = F.varlen_attention(q.float().cpu().numpy(),
                                 cache.dequantize(0, "k", self.table, lens),
                                 cache.dequantize(0, "v", self.table, lens),
                                 1 / np.sqrt(self.cfg["head_dim"]), False)
        err = float(np.abs(o.float().cpu().numpy() - ref).max() / np.abs(ref).max())
        self.checks.append((int(lens[0].item()), err))

    def used_bytes(self, tokens):
        """Full pages of every sequence of ``tokens`` tokens, and the tails, all layers."""
        c = self.cfg
        per_layer = c["batch"] * (tokens // c["page"] * self.kv.page_bytes() + self.kv.tail_bytes())
        return c["layers"] * per_layer


# --------------------------------------------------------------------------------------------
# The loop
# --------------------------------------------------------------------------------------------


def run(model, attn, prompt, feed=None, check_at=()):
    """Prefill, then cfg['gen'] decode steps feeding ``feed`` [gen, B] (teacher forcing) or,
    with feed None, the model's own greedy tokens; ``attn.check()`` after the steps that end at
    a length in ``check_at``. Returns (logits [1 + gen, B, vocab], tokens [1 + gen, B]), the
    prefill's first."""
    logits = [model.forward(prompt, attn)]
    attn.advance(prompt.shape[1])
    attn.timer.end_step()
    attn.timer.steps.clear()  # the prefill is reported apart
    tokens = [logits[-1].argmax(-1)]
    length = prompt.shape[1]
    for s in range(model.cfg["gen"]):
        tok = feed[s] if feed is not None else tokens[-1]
        logits.append(model.forward(tok[:, None], attn))
        tokens.append(logits[-1].argmax(-1))
        attn.advance(1)
        attn.timer.end_step()
        length += 1
        if length in check_at:
            attn.check()
    return torch.stack(logits), torch.stack(tokens)


def prefill_time_us(model, make_attn, prompt, reps=5):
    times = []
    for _ in range(reps):
        attn = make_attn()
        model.forward(prompt, attn)
        attn.timer.end_step()
        times.append(attn.timer.steps["total"][0])
    return statistics.median(times)


def check_lengths(cfg):
    """Cache lengths after the steps whose layer-0 output is checked: the first step, the
    middle, a tail page filling (the decode reads it from the pool) and the next token (a new
    tail opens), the last."""
    p, g, page = cfg["prompt"], cfg["gen"], cfg["page"]
    fill = (p // page + 1) * page
    return sorted(n for n in {p + 1, p + g // 2, fill, fill + 1, p + g} if p < n <= p + g)


def precompile(cfg, target):
    """Compiles every decode function the loop runs for model ``cfg`` into paged's disk cache
    (``QATTN_CACHE_DIR``), for a machine without qattn-compile (scripts/torch-check/prepare.py).
    Returns the artifact folders."""
    # CPU caches of one page: they only name the functions; ``target`` picks the code.
    return [paged.precompile(PagedKV(cfg, scheme, 1, "cpu").cache, cfg["heads"],
                             dtype=torch.bfloat16, target=target)
            for scheme in SCHEMES.values()]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--artifacts", default=os.path.join(ROOT, "artifacts", "torch-check"))
    ap.add_argument("--schemes", default="4bit,mixed")
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    ap.add_argument("--min-agree", type=float, default=0.0,
                    help="fail if a scheme's teacher-forced agreement is below this fraction")
    args = ap.parse_args()
    global DEV
    DEV = (torch.device("cuda", torch.cuda.current_device()) if args.device == "cuda"
           else torch.device("cpu"))
    cfg = json.load(open(os.path.join(args.artifacts, "model.json")))
    if cfg.get("target", "cuda") != args.device:
        sys.exit(f"{args.artifacts} holds {cfg.get('target', 'cuda')} artifacts; run with "
                 f"--device {cfg.get('target', 'cuda')} or prepare them for {args.device}")
    os.environ["QATTN_CACHE_DIR"] = os.path.join(args.artifacts, "cache")
    torch.manual_seed(cfg["seed"])
    model = Llama(cfg)
    P, G = cfg["prompt"], cfg["gen"]
    prompt = torch.randint(0, cfg["vocab"], (cfg["batch"], P), device=DEV,
                           generator=torch.Generator(device=DEV).manual_seed(1))
    where = torch.cuda.get_device_name(DEV) if DEV.type == "cuda" else "CPU"
    print(f"decode_loop: {where}, torch {torch.__version__}; model "
          f"{cfg['layers']} layers, dim {cfg['dim']}, heads {cfg['heads']}/{cfg['kv_heads']} "
          f"(GQA), d {cfg['head_dim']}, vocab {cfg['vocab']}, random weights; batch "
          f"{cfg['batch']}, prompt {P}, {G} decode steps; qattn.paged, pages of {cfg['page']}")

    check_at = check_lengths(cfg)
    with torch.inference_mode():
        base = BF16Attention(cfg)
        ref_logits, ref_tokens = run(model, base, prompt)
        feed = ref_tokens[:G]
        rows = [("bf16", base, ref_logits, ref_tokens, None)]
        pre = {"bf16": prefill_time_us(model, lambda: BF16Attention(cfg), prompt)}
        for name in args.schemes.split(","):
            scheme = SCHEMES[name]
            attn = QAttnAttention(cfg, scheme)
            logits, tokens = run(model, attn, prompt, feed=feed, check_at=check_at)
            attn.kv.cache.check_errors()
            free = QAttnAttention(cfg, scheme)
            _, free_tokens = run(model, free, prompt)
            free.kv.cache.check_errors()
            rows.append((name, attn, logits, tokens, free_tokens))
            pre[name] = prefill_time_us(model, lambda: QAttnAttention(cfg, scheme), prompt)

    print(f"\n{'scheme':8} {'attn/step':>10} {'op/step':>9} {'prefill':>9} {'KV MB':>7} "
          f"{'B/token':>8} {'logits rel':>10} {'max|d|':>8} {'agree':>6} {'free-run':>9}")
    tokens_total = P + G
    failed = False
    for name, attn, logits, tokens, free_tokens in rows:
        if name == "bf16":
            mem = attn.bytes(tokens_total)
            per = attn.bytes_per_token()
            drift, maxd, agree, freerun, op = "-", "-", "-", "-", "-"
        else:
            mem = attn.used_bytes(tokens_total)
            per = attn.kv.bytes_per_token()
            # Decode steps only: the prefill's logits are bf16's by construction.
            dq, db = logits[1:].flatten(1), ref_logits[1:].flatten(1)
            drift = f"{float(((dq - db).norm(dim=1) / db.norm(dim=1)).mean()):.2e}"
            maxd = f"{float((dq - db).abs().max()):.3f}"
            hits = float((tokens[1:] == ref_tokens[1:]).float().mean())
            agree = f"{hits:.0%}"
            if hits < args.min_agree:
                failed = True
                agree += "!"
            differ = (free_tokens != ref_tokens).any(dim=1).nonzero()
            freerun = "same" if len(differ) == 0 else f"diff@{int(differ[0])}"
            op = f"{attn.timer.median_us('op'):.1f}"
        print(f"{name:8} {attn.timer.median_us('total'):10.1f} {op:>9} {pre[name]:9.1f} "
              f"{mem / 2**20:7.3f} {per:8.0f} {drift:>10} {maxd:>8} {agree:>6} {freerun:>9}")
    print("\nattn/step, op/step: median over decode steps of the GPU time (us, CUDA events) "
          "summed over layers: cache.append + paged.decode / paged.decode alone. prefill: "
          "attention of the whole prompt incl. cache fill (us; qattn: bf16 SDPA + "
          f"cache.prefill). KV MB: bf16 cache of {tokens_total} tokens / qattn full pages + "
          "tails. B/token: per token of a full page, all layers, K+V. logits rel: mean "
          "relative L2 error of the decode steps' logits against bf16 (teacher forced); agree: "
          "decode steps' argmax == bf16 greedy token"
          f"{f' (! below --min-agree {args.min_agree:.0%})' if args.min_agree else ''}; "
          "free-run: the qattn model's own greedy decode, first token that differs from "
          "bf16's (0 = first generated, from the bf16 prefill).")
    for name, attn, *_ in rows[1:]:
        for length, err in attn.checks:
            ok = err <= CHECK_TOL
            failed |= not ok
            tail = length % cfg["page"]
            print(f"check {name}: layer 0 at length {length} ({length - tail} in pages, {tail} "
                  f"in the tail): paged.decode vs float64 attention of the dequantized cache: "
                  f"max err {err:.2e} {'OK' if ok else 'FAIL'}")
        per = attn.kv.bytes_per_token()
        print(f"{name}: {SCHEMES[name]} as {attn.kv.describe()}: {per:.1f} B/token vs "
              f"{base.bytes_per_token()} bf16 ({base.bytes_per_token() / per:.2f}x); allocated "
              f"{attn.kv.allocated_bytes() / 2**20:.3f} MB")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
