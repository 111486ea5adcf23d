#!/usr/bin/env python3
"""A decode loop of a small Llama-shaped transformer (random weights, no downloads) on the GPU,
with its attention run three ways:

  bf16    PyTorch SDPA over a bf16 KV cache (the baseline);
  4bit    qattn: K/V in a qattn.kv_cache.QuantizedKVCache at 4 bits (stage 2) with an int8
          decode buffer, BPQ int8 queries for the prefill; the compiled CUDA kernels run as
          torch.ops.qattn.prefill_attention / decode_attention;
  mixed   the same with headwise mixed precision: KV head 0 at 4 bits, head 1 at 2 bits.

The bf16 model decodes greedily; the qattn models are fed the same tokens (teacher forcing), so
every step compares like with like. Reported per scheme: attention time per decode step (GPU
time between CUDA events, all layers: cache update + attention, and the attention op alone), KV
memory, logits drift against bf16 (relative L2, max |diff|), greedy-token agreement (the qattn
model's argmax against the bf16 token), a free-running greedy decode's first divergence, and a
check of the kernel's output against float64 attention of the cache content as qattn.format
dequantizes it.

The CUDA artifacts (one function per cache shape: the kernels have static shapes) are compiled
on the MLIR machine by scripts/torch-check/prepare.py; model.json there fixes the sizes.

With --device cpu it runs the same loop on the CPU over cpu artifacts (the reference lowering;
prepare.py --target cpu --small makes a tiny model's), which is how the CPU test suite checks the
loop without a GPU; the times then are wall-clock times and mean little.

usage: decode_loop.py [--artifacts artifacts/torch-check] [--schemes 4bit,mixed]
                      [--device cuda|cpu]
"""
import argparse
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
from qattn import torch_ops  # noqa: E402
from qattn import torch_quant as TQ  # noqa: E402
from qattn.kv_cache import QuantizedKVCache  # noqa: E402

DEV = None  # set by main(): the CUDA device, or the CPU with --device cpu


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
        """x [B, H, T, d] at positions pos .. pos+T-1 (rotate-half convention)."""
        t = x.shape[2]
        cos, sin = self.cos[pos : pos + t], self.sin[pos : pos + t]
        xf = x.float()
        x1, x2 = xf[..., ::2], xf[..., 1::2]
        out = torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1).flatten(-2)
        return out.to(torch.bfloat16)

    def forward(self, tokens, pos, attn):
        """Logits (f32) of the last position; ``attn(layer, q, k, v, pos)`` does attention."""
        cfg = self.cfg
        b, t = tokens.shape
        h, hkv, d = cfg["heads"], cfg["kv_heads"], cfg["head_dim"]
        x = self.emb[tokens]
        for i, L in enumerate(self.layers):
            hn = self.norm(x)
            q = (hn @ L["wq"]).view(b, t, h, d).transpose(1, 2)
            k = (hn @ L["wk"]).view(b, t, hkv, d).transpose(1, 2)
            v = (hn @ L["wv"]).view(b, t, hkv, d).transpose(1, 2).contiguous()
            q, k = self.rope(q, pos), self.rope(k, pos)
            o = attn(i, q, k, v, pos)
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


class BF16Attention:
    def __init__(self, cfg):
        self.cfg = cfg
        cap = cfg["prompt"] + cfg["gen"]
        shape = (cfg["batch"], cfg["kv_heads"], cap, cfg["head_dim"])
        self.k = [torch.zeros(shape, dtype=torch.bfloat16, device=DEV) for _ in range(cfg["layers"])]
        self.v = [torch.zeros(shape, dtype=torch.bfloat16, device=DEV) for _ in range(cfg["layers"])]
        self.timer = Timer()

    def bytes(self, tokens):
        c = self.cfg
        return c["layers"] * 2 * c["batch"] * c["kv_heads"] * tokens * c["head_dim"] * 2

    def __call__(self, layer, q, k, v, pos):
        t = q.shape[2]
        s, e = self.timer.span("total")
        s.record()
        self.k[layer][:, :, pos : pos + t] = k
        self.v[layer][:, :, pos : pos + t] = v
        kk, vv = self.k[layer][:, :, : pos + t], self.v[layer][:, :, : pos + t]
        o = sdpa(q, kk, vv, t > 1)
        e.record()
        return o


def sdpa(q, k, v, causal):
    """bf16 attention, grouped-query, causal aligned to the last key (here Nq = Nk or Nq = 1)."""
    try:
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


class QAttnAttention:
    def __init__(self, cfg, bits, artifact):
        self.cfg, self.artifact = cfg, artifact
        self.cache = QuantizedKVCache(
            layers=cfg["layers"], batch=cfg["batch"], kv_heads=cfg["kv_heads"],
            head_dim=cfg["head_dim"], bits=bits,
            capacity=-(-(cfg["prompt"] + cfg["gen"]) // cfg["block"]) * cfg["block"],
            block=cfg["block"], group=cfg["group"], buffer_tokens=cfg["buffer"],
            backend="torch", device=DEV)
        self.timer = Timer()
        self.check_at = set()  # decode positions at which to check layer 0 against float64
        self.checks = []

    def __call__(self, layer, q, k, v, pos):
        cfg, lc = self.cfg, self.cache[layer]
        t = q.shape[2]
        s, e = self.timer.span("total")
        s.record()
        if pos == 0:
            lc.prefill(k, v)
            q8, qs = TQ.stage1_quantize(q, cfg["block"])
            ops = torch_ops.cache_operands(lc)
            so, eo = self.timer.span("op")
            so.record()
            o = torch_ops.prefill_attention(self.artifact, f"prefill_n{t}", q8, qs, ops["k"],
                                            ops["v"])
            eo.record()
        else:
            lc.append(k, v)
            ops = torch_ops.cache_operands(lc)
            qf = q.float()
            so, eo = self.timer.span("op")
            so.record()
            o = torch_ops.decode_attention(self.artifact, f"decode_n{lc.length}_b{lc.buffered}",
                                           qf, **ops)
            eo.record()
        e.record()
        if layer == 0 and pos in self.check_at:
            ref = F.attention(q.float().cpu().numpy(), lc.dequantized("k"), lc.dequantized("v"),
                              1 / np.sqrt(cfg["head_dim"]), t > 1)
            err = float(np.abs(o.float().cpu().numpy() - ref).max() / np.abs(ref).max())
            self.checks.append((pos, lc.length, lc.buffered, err))
        return o


# --------------------------------------------------------------------------------------------
# The loop
# --------------------------------------------------------------------------------------------


def run(model, attn, prompt, feed=None):
    """Prefill, then len(feed) decode steps feeding `feed` (teacher forcing) or, with feed None,
    the model's own greedy tokens for cfg['gen'] steps. Returns (logits per step incl. the
    prefill's, tokens chosen)."""
    cfg = model.cfg
    logits = [model.forward(prompt, 0, attn)]
    attn.timer.end_step()
    attn.timer.steps.pop("total", None)  # the prefill is reported apart
    attn.timer.steps.pop("op", None)
    chosen = [int(logits[-1].argmax(-1)[0])]
    pos = prompt.shape[1]
    for s in range(cfg["gen"]):
        tok = feed[s] if feed is not None else chosen[-1]
        logits.append(model.forward(torch.tensor([[tok]] * cfg["batch"], device=DEV), pos, attn))
        attn.timer.end_step()
        chosen.append(int(logits[-1].argmax(-1)[0]))
        pos += 1
    return logits, chosen


def prefill_time_us(model, make_attn, prompt, reps=5):
    times = []
    for _ in range(reps):
        attn = make_attn()
        model.forward(prompt, 0, attn)
        attn.timer.end_step()
        times.append(attn.timer.steps["total"][0])
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--artifacts", default=os.path.join(ROOT, "artifacts", "torch-check"))
    ap.add_argument("--schemes", default="4bit,mixed")
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    args = ap.parse_args()
    global DEV
    DEV = (torch.device("cuda", torch.cuda.current_device()) if args.device == "cuda"
           else torch.device("cpu"))
    cfg = json.load(open(os.path.join(args.artifacts, "model.json")))
    if cfg.get("target", "cuda") != args.device:
        sys.exit(f"{args.artifacts} holds {cfg.get('target', 'cuda')} artifacts; run with "
                 f"--device {cfg.get('target', 'cuda')} or prepare them for {args.device}")
    torch.manual_seed(cfg["seed"])
    model = Llama(cfg)
    P, G = cfg["prompt"], cfg["gen"]
    prompt = torch.randint(0, cfg["vocab"], (cfg["batch"], P), device=DEV,
                           generator=torch.Generator(device=DEV).manual_seed(1))
    where = torch.cuda.get_device_name(DEV) if DEV.type == "cuda" else "CPU"
    print(f"decode_loop: {where}, torch {torch.__version__}; model "
          f"{cfg['layers']} layers, dim {cfg['dim']}, heads {cfg['heads']}/{cfg['kv_heads']} "
          f"(GQA), d {cfg['head_dim']}, vocab {cfg['vocab']}, random weights; batch "
          f"{cfg['batch']}, prompt {P}, {G} decode steps; qattn block {cfg['block']}, group "
          f"{cfg['group']}, decode buffer {cfg['buffer']}")

    with torch.inference_mode():
        base = BF16Attention(cfg)
        ref_logits, ref_tokens = run(model, base, prompt)
        feed = ref_tokens[:G]
        rows = [("bf16", base, ref_logits, ref_tokens, None, None)]
        pre = {"bf16": prefill_time_us(model, lambda: BF16Attention(cfg), prompt)}
        for name in args.schemes.split(","):
            bits = cfg["schemes"][name]
            art = os.path.join(args.artifacts, f"model-{name}")
            attn = QAttnAttention(cfg, bits, art)
            attn.check_at = {P, P + cfg["buffer"], P + G - 1}
            logits, tokens = run(model, attn, prompt, feed=feed)
            free = QAttnAttention(cfg, bits, art)
            _, free_tokens = run(model, free, prompt)
            rows.append((name, attn, logits, tokens, free_tokens, bits))
            pre[name] = prefill_time_us(model, lambda: QAttnAttention(cfg, bits, art), prompt)

    print(f"\n{'scheme':8} {'attn/step':>10} {'op/step':>9} {'prefill':>9} {'KV MB':>7} "
          f"{'B/token':>8} {'logits rel':>10} {'max|d|':>8} {'agree':>6} {'free-run':>9}")
    tokens_total = P + G
    for name, attn, logits, tokens, free_tokens, bits in rows:
        if name == "bf16":
            mem = attn.bytes(tokens_total)
            per = mem / tokens_total / cfg["batch"]
            drift, maxd, agree, freerun, op = "-", "-", "-", "-", "-"
        else:
            mem = attn.cache.used_bytes()
            per = attn.cache.bytes_per_token()
            rel = [float((lq - lb).norm() / lb.norm()) for lq, lb in zip(logits, ref_logits)]
            drift = f"{statistics.mean(rel):.2e}"
            maxd = f"{max(float((lq - lb).abs().max()) for lq, lb in zip(logits, ref_logits)):.3f}"
            hits = sum(a == b for a, b in zip(tokens, ref_tokens))
            agree = f"{hits / len(ref_tokens):.0%}"
            first = next((i for i, (a, b) in enumerate(zip(free_tokens, ref_tokens)) if a != b),
                         None)
            freerun = "same" if first is None else f"diff@{first}"
            op = f"{attn.timer.median_us('op'):.1f}"
        print(f"{name:8} {attn.timer.median_us('total'):10.1f} {op:>9} {pre[name]:9.1f} "
              f"{mem / 2**20:7.3f} {per:8.0f} {drift:>10} {maxd:>8} {agree:>6} {freerun:>9}")
    print("\nattn/step, op/step: median over decode steps of the GPU time (us, CUDA events) "
          "summed over layers: cache update + attention / the attention op alone. prefill: "
          "attention of the whole prompt incl. cache fill (us). KV MB: bf16 cache of "
          f"{tokens_total} tokens / qattn stage-2 part + decode buffers. B/token: per token, "
          "all layers, K+V. logits rel: mean relative L2 error of the logits against bf16 "
          "(teacher forced); agree: argmax == bf16 greedy token; free-run: the qattn model's "
          "own greedy decode, first token that differs from bf16's (0 = first generated).")
    failed = False
    for name, attn, *_ in rows[1:]:
        for pos, length, buffered, err in attn.checks:
            ok = err <= 1e-2
            failed |= not ok
            print(f"check {name}: layer 0 at position {pos} (cache {length} + buffer "
                  f"{buffered}): kernel vs float64 attention of the dequantized cache: "
                  f"max err {err:.2e} {'OK' if ok else 'FAIL'}")
        print(f"{name}: {attn.cache.describe()}; allocated {attn.cache.allocated_bytes() / 2**20:.3f} "
              f"MB for {attn.cache.capacity} tokens, {attn.cache[0].flushes} flushes per layer")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
