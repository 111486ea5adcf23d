"""A llama2.c checkpoint loader and a NumPy float32 forward pass with pluggable attention.

The checkpoint format (Karpathy's llama2.c, "version 0"): a header of 7 little-endian int32
``dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len`` (a negative
``vocab_size`` means a separate classifier follows; a positive one that it shares the token
embedding), then float32 arrays, row-major, each stacked over layers::

    token_embedding [vocab, dim]
    rms_att [L, dim]
    wq [L, H*hd, dim]   wk [L, Hkv*hd, dim]   wv [L, Hkv*hd, dim]   wo [L, dim, H*hd]
    rms_ffn [L, dim]
    w1 [L, hidden, dim] w2 [L, dim, hidden]   w3 [L, hidden, dim]
    rms_final [dim]
    freq_cis_real [seq_len, hd/2]  freq_cis_imag [seq_len, hd/2]   (the RoPE cos and sin tables)
    wcls [vocab, dim]   (only with a negative vocab_size)

The model: pre-norm RMSNorm (eps 1e-5), RoPE on q and k rotating pairs of adjacent elements
``(x[2i], x[2i+1])`` by the tables' angle ``pos * theta^(-2i/hd)``, causal grouped-query
attention with scale ``1/sqrt(hd)`` (query head ``h`` reads KV head ``h // (H / Hkv)``),
SwiGLU FFN ``w2(silu(w1 x) * w3 x)``, final RMSNorm, logits ``wcls @ x``.

``Model.forward`` runs a whole (teacher-forced) sequence at once and calls
``attend(layer, q, k, v)`` for every layer's attention, so a caller can put any attention
implementation, for example a quantized KV cache, in place of the float one:

* ``q``: ``[B, H, N, hd]`` float32, RoPE applied; ``k``, ``v``: ``[B, Hkv, N, hd]`` float32
  (k with RoPE), token ``t`` of every tensor being position ``t`` of the sequence;
* it returns ``[B, H, N, hd]``: for every position the causal attention output over the keys
  ``0 .. t`` (what a decoder with a KV cache of those tokens computes at step ``t``).

Nothing here depends on qattn's compiled code.
"""

import struct
from dataclasses import dataclass

import numpy as np

__all__ = ["Config", "Model", "float_attention", "load", "log_softmax", "softmax"]

F32 = np.float32


@dataclass(frozen=True)
class Config:
    dim: int
    hidden_dim: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    vocab_size: int
    seq_len: int
    shared_classifier: bool

    @property
    def head_dim(self):
        return self.dim // self.n_heads


def load(path):
    """Reads a llama2.c checkpoint; returns a ``Model``. Checks the file size against the header."""
    with open(path, "rb") as f:
        raw = f.read()
    header = struct.unpack("<7i", raw[:28])
    dim, hidden, layers, heads, kv_heads, vocab, seq_len = header
    cfg = Config(dim, hidden, layers, heads, kv_heads, abs(vocab), seq_len, vocab > 0)
    hd = cfg.head_dim
    data = np.frombuffer(raw, dtype="<f4", offset=28)
    shapes = [
        ("tok_emb", (cfg.vocab_size, dim)),
        ("rms_att", (layers, dim)),
        ("wq", (layers, heads * hd, dim)),
        ("wk", (layers, kv_heads * hd, dim)),
        ("wv", (layers, kv_heads * hd, dim)),
        ("wo", (layers, dim, heads * hd)),
        ("rms_ffn", (layers, dim)),
        ("w1", (layers, hidden, dim)),
        ("w2", (layers, dim, hidden)),
        ("w3", (layers, hidden, dim)),
        ("rms_final", (dim,)),
        ("rope_cos", (seq_len, hd // 2)),
        ("rope_sin", (seq_len, hd // 2)),
    ]
    if not cfg.shared_classifier:
        shapes.append(("wcls", (cfg.vocab_size, dim)))
    weights, at = {}, 0
    for name, shape in shapes:
        n = int(np.prod(shape))
        if at + n > data.size:
            raise ValueError(f"{path}: truncated at {name} (needs {n} floats at {at}, "
                             f"the file has {data.size})")
        weights[name] = data[at:at + n].reshape(shape).astype(F32)
        at += n
    if at != data.size:
        raise ValueError(f"{path}: {data.size - at} floats left after the last array")
    if cfg.shared_classifier:
        weights["wcls"] = weights["tok_emb"]
    return Model(cfg, weights)


def softmax(x, axis=-1):
    x = x - x.max(axis=axis, keepdims=True)
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)


def log_softmax(x, axis=-1):
    x = np.asarray(x, np.float64)
    x = x - x.max(axis=axis, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=axis, keepdims=True))


def float_attention(q, k, v, dtype=F32):
    """Causal GQA attention ``[B, H, N, hd]`` (query ``i`` sees keys ``j <= i + Nk - Nq``)."""
    b, h, nq, hd = q.shape
    hkv, nk = k.shape[1], k.shape[2]
    r = h // hkv
    q = q.astype(dtype)
    kk = np.repeat(k.astype(dtype), r, axis=1)
    vv = np.repeat(v.astype(dtype), r, axis=1)
    s = np.matmul(q, np.swapaxes(kk, -1, -2)) * dtype(1.0 / np.sqrt(hd))
    mask = np.arange(nk)[None, :] > np.arange(nq)[:, None] + (nk - nq)
    s = np.where(mask, dtype(-np.inf), s)
    return np.matmul(softmax(s), vv).astype(dtype)


class Model:
    def __init__(self, cfg, weights):
        self.cfg = cfg
        self.w = weights

    def _rmsnorm(self, x, weight):
        ms = np.mean(x * x, axis=-1, keepdims=True, dtype=F32)
        return (x / np.sqrt(ms + F32(1e-5))) * weight

    def _rope(self, x, pos):
        """Rotates adjacent pairs of ``x [B, heads, N, hd]`` for positions ``pos [N]``."""
        c = self.w["rope_cos"][pos][None, None]  # [1, 1, N, hd/2]
        s = self.w["rope_sin"][pos][None, None]
        x0, x1 = x[..., 0::2], x[..., 1::2]
        out = np.empty_like(x)
        out[..., 0::2] = x0 * c - x1 * s
        out[..., 1::2] = x0 * s + x1 * c
        return out

    def forward(self, tokens, attend=None, start=0):
        """Logits ``[B, N, vocab]`` (float32) of every position of ``tokens [B, N]`` (or ``[N]``).

        ``attend(layer, q, k, v)`` replaces the float attention (module docstring); the default is
        ``float_attention``. Positions are ``start .. start + N - 1`` (RoPE), with no cache before
        ``start``: a whole teacher-forced sequence is ``start = 0``.
        """
        cfg, w = self.cfg, self.w
        tokens = np.asarray(tokens)
        squeeze = tokens.ndim == 1
        tokens = np.atleast_2d(tokens)
        b, n = tokens.shape
        hd, h, hkv = cfg.head_dim, cfg.n_heads, cfg.n_kv_heads
        pos = np.arange(start, start + n)
        x = w["tok_emb"][tokens]  # [B, N, dim]
        for layer in range(cfg.n_layers):
            xn = self._rmsnorm(x, w["rms_att"][layer])
            q = (xn @ w["wq"][layer].T).reshape(b, n, h, hd).transpose(0, 2, 1, 3)
            k = (xn @ w["wk"][layer].T).reshape(b, n, hkv, hd).transpose(0, 2, 1, 3)
            v = (xn @ w["wv"][layer].T).reshape(b, n, hkv, hd).transpose(0, 2, 1, 3)
            q = np.ascontiguousarray(self._rope(q, pos))
            k = np.ascontiguousarray(self._rope(k, pos))
            v = np.ascontiguousarray(v)
            o = attend(layer, q, k, v) if attend else float_attention(q, k, v)
            o = np.asarray(o, F32).transpose(0, 2, 1, 3).reshape(b, n, h * hd)
            x = x + o @ w["wo"][layer].T
            xn = self._rmsnorm(x, w["rms_ffn"][layer])
            h1 = xn @ w["w1"][layer].T
            h3 = xn @ w["w3"][layer].T
            g = h1 / (F32(1) + np.exp(-h1)) * h3
            x = x + g @ w["w2"][layer].T
        x = self._rmsnorm(x, w["rms_final"])
        logits = (x @ w["wcls"].T).astype(F32)
        return logits[0] if squeeze else logits

    def generate(self, n, temperature=0.0, rng=None, prompt=(1,)):
        """``len(prompt) + n`` token ids: the prompt (default BOS) then ``n`` tokens, each from
        the float model's distribution at ``temperature`` (0: greedy), using ``rng`` (a NumPy
        ``Generator``) for sampling. Each step re-runs the prefix (the model is tiny)."""
        ids = list(prompt)
        for _ in range(n):
            logits = self.forward(np.array(ids))[-1].astype(np.float64)
            if temperature == 0:
                nxt = int(np.argmax(logits))
            else:
                p = softmax(logits / temperature)
                nxt = int(rng.choice(len(p), p=p / p.sum()))
            ids.append(nxt)
        return ids
