"""Seeded inputs for the integration tests that need int8 tensors or chosen scales (qattn-run
generates only float arguments). Every tensor is written as DIR/<name>.npy in the dtype the
compiled function expects (int8 as |i1, f32 as <f4, f16 as <f2).

  stage2  --shape B,H,N,d  q8: realistic stage-1 data (outlier-channel float data quantized by the
          model's stage 1 with --block / --gran) plus injected corner cases: a constant channel
          group (s2 = 1), groups spanning the full [-127, 127], one-sided groups, lone extremes.
  stage1-edges  --shape 1,2,N,d (N in 33..48, block 16)  x: normal data with corner blocks: all
          zeros (s = 0), exact halfway quotients x / s = k + 1/2 of both signs, -0.0, tiny blocks
          (max 1e-3 and 1e-6: f16 scale subnormal / 0) and a huge block (max 1e7: f16 scale inf).
  append  --shape B,H,Nb,d --tokens T1,T2  the decode-buffer scale s [B,H] (the stage-1 scale of
          a previous block of the same distribution), a prefilled buffer, and new tokens x1, x2
          with some values beyond 127 s (so that they clamp).
  flush   --shape B,H,N,d --nb Nb  a stage-2 cache of N tokens (codes, block scales, group scales,
          zeros from the model), a full decode buffer of Nb tokens and its scale.
  attn-buffer  --q B,Hq,Nq,d --kv B,Hkv,Nk,d --nb Nb [--append T]  float q (in --dtype), k, v
          (the cache, quantized inside the function), unquantized new tokens knew/vnew
          [B,Hkv,Nb,d], their decode buffers kb/vb and scales kbs/vbs (the stage-1 scale of the
          cache's last block, --block, as a caller would choose). With --append T the buffers'
          last T rows are stale random bytes, and knew_t / vnew_t (the last T new tokens) are
          written for the function to append.
"""

import argparse
import os

import numpy as np

from qattn import format as F


def shape(text):
    return tuple(int(s) for s in text.split(","))


def outlier_data(rng, shp, scale=1.0):
    """Normal data with heavy-tailed noise, and 1/8 of the channels scaled by 10 and shifted,
    like the outlier channels of real K caches."""
    x = rng.standard_normal(shp) + 0.1 * rng.standard_t(3, shp)
    d = shp[-1]
    chans = rng.choice(d, max(1, d // 8), replace=False)
    x[..., chans] = 10 * x[..., chans] + rng.uniform(-5, 5, len(chans))
    return (scale * x).astype(np.float32)


def save(out, **arrays):
    os.makedirs(out, exist_ok=True)
    for name, a in arrays.items():
        np.save(os.path.join(out, name + ".npy"), a)


def make_stage2(a, rng):
    b, h, n, d = shape(a.shape)
    x = outlier_data(rng, (b, h, n, d))
    q8, _ = F.stage1_quantize(x, a.block, "f32", a.gran)
    q8 = q8.astype(np.int16)
    g = a.group
    # Corner cases, each in its own (batch 0, head, group, channel) when it exists.
    ng = -(-n // g)
    corners = [
        lambda t: np.full(t, 7),                                  # constant: s2 = 1, z2 = -7
        lambda t: np.where(np.arange(t) % 2, 127, -127),          # full range, both extremes
        lambda t: np.linspace(-127, 127, t).round(),              # full range, every step
        lambda t: np.full(t, -127),                               # constant at the minimum
        lambda t: np.where(np.arange(t) == 0, 127, 0),            # one lone extreme
        lambda t: np.linspace(0, 127, t).round(),                 # one-sided positive
        lambda t: np.linspace(-127, -90, t).round(),              # one-sided negative
        lambda t: np.where(np.arange(t) == t - 1, -127, 3),       # lone minimum at the end
    ]
    for i, make in enumerate(corners):
        grp, ch = (i * 3) % ng, (5 * i + 1) % d
        head = i % h
        lo, hi = grp * g, min(n, (grp + 1) * g)
        q8[0, head, lo:hi, ch] = make(hi - lo)
    # The last (short) group of the last channel: one-sided, with the maximum step size.
    q8[-1, -1, (ng - 1) * g :, -1] = 127
    q8[-1, -1, (ng - 1) * g, -1] = -127
    assert q8.min() >= -127 and q8.max() <= 127
    save(a.out, q8=q8.astype(np.int8))


def make_stage1_edges(a, rng):
    b, h, n, d = shape(a.shape)
    assert b == 1 and h == 2 and 32 < n <= 48, "three blocks of 16 tokens, the last one short"
    x = rng.standard_normal((b, h, n, d)).astype(np.float32)
    x[0, 0, 0:16] = 0  # all zeros: s = 0, q8 = 0
    step = np.float32(2.0**-4)  # exact in f16 and f32; max = 127 step makes s1 = step exactly
    k = rng.integers(-126, 126, (16, d)).astype(np.float32)
    ties = (k + np.float32(0.5)) * step  # x / s = k + 1/2 exactly: rounds away from zero
    ties[0, 0], ties[0, 1] = 127 * step, -0.0
    x[0, 0, 16:32] = ties
    x[0, 0, 32:] = rng.standard_normal((n - 32, d)) * np.float32(1e-6 / 4)  # f16 scale: 0
    x[0, 0, 32, 0] = 1e-6
    x[0, 1, 0:16] = rng.standard_normal((16, d)) * np.float32(1e-3 / 4)  # f16 scale: subnormal
    x[0, 1, 0, 0] = -1e-3
    x[0, 1, 16:32] *= np.float32(1e6)  # f16 scale overflows to inf
    x[0, 1, 16, 3] = 1e7
    x[0, 1, 32:, 5] = -0.0
    save(a.out, x=x)


def make_append(a, rng):
    b, h, nb, d = shape(a.shape)
    t1, t2 = (int(t) for t in a.tokens.split(","))
    # The scale a caller would pick: the stage-1 scale of a block of earlier tokens.
    prev = outlier_data(rng, (b, h, 16, d))
    s = (np.abs(prev).reshape(b, h, -1).max(-1) / np.float32(127)).astype(np.float32)
    x1 = outlier_data(rng, (b, h, t1, d))
    x2 = outlier_data(rng, (b, h, t2, d), scale=1.5)
    x2[0, 0, 0, 0] = 200 * s[0, 0]  # certain outliers beyond 127 s, both signs
    x2[-1, -1, -1, -1] = -1000 * s[-1, -1]
    buf = rng.integers(-127, 128, (b, h, nb, d), dtype=np.int8)
    save(a.out, x1=x1, x2=x2.astype(a.dtype), s=s, buf=buf)


def make_flush(a, rng):
    b, h, n, d = shape(a.shape)
    nb = a.nb
    k = outlier_data(rng, (b, h, n, d))
    q8, s1 = F.stage1_quantize(k, a.block, a.scale, a.gran)
    codes, s2, z2 = F.stage2_quantize(q8, a.bits, a.group, a.order)
    knew = outlier_data(rng, (b, h, nb, d))
    s = (np.abs(knew[:, :, : a.block]).reshape(b, h, -1).max(-1) / np.float32(127)).astype(np.float32)
    buf = F.buffer_quantize(knew, s)
    save(a.out, codes=codes.view(np.int8), bs=s1, s2=s2.view(np.int8), z2=z2, buf=buf, s=s)


def make_attn_buffer(a, rng):
    bq, hq, nq, d = shape(a.q)
    b, hkv, nk, d2 = shape(a.kv)
    assert bq == b and d2 == d
    nb = a.nb
    q = rng.standard_normal((b, hq, nq, d)).astype(a.dtype)
    kk = outlier_data(rng, (b, hkv, nk + nb, d))
    vv = rng.standard_normal((b, hkv, nk + nb, d)).astype(np.float32)
    k, knew = kk[:, :, :nk], kk[:, :, nk:]
    v, vnew = vv[:, :, :nk], vv[:, :, nk:]
    last = (nk - 1) // a.block * a.block  # first token of the cache's last block

    def last_scale(x):
        return (np.abs(x[:, :, last:nk]).reshape(b, hkv, -1).max(-1) / np.float32(127)).astype(
            np.float32)

    kbs, vbs = last_scale(k), last_scale(v)
    kb, vb = F.buffer_quantize(knew, kbs), F.buffer_quantize(vnew, vbs)
    arrays = dict(q=q, k=k, v=v, knew=knew, vnew=vnew, kbs=kbs, vbs=vbs)
    if a.append:
        t = a.append
        arrays["knew_t"], arrays["vnew_t"] = knew[:, :, nb - t :], vnew[:, :, nb - t :]
        kb, vb = kb.copy(), vb.copy()
        kb[:, :, nb - t :] = rng.integers(-127, 128, (b, hkv, t, d))  # stale rows, overwritten
        vb[:, :, nb - t :] = rng.integers(-127, 128, (b, hkv, t, d))
    save(a.out, kb=kb, vb=vb, **arrays)


p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
p.add_argument("kind", choices=["stage2", "stage1-edges", "append", "flush", "attn-buffer"])
p.add_argument("--out", required=True)
p.add_argument("--seed", type=int, required=True)
p.add_argument("--shape")
p.add_argument("--block", type=int, default=64)
p.add_argument("--gran", default="block")
p.add_argument("--scale", default="f32")
p.add_argument("--group", type=int, default=16)
p.add_argument("--bits", default="4")
p.add_argument("--order", default="lsb")
p.add_argument("--tokens", default="3,5")
p.add_argument("--dtype", default="float32", help="dtype of append's x2 / attn-buffer's q")
p.add_argument("--nb", type=int, default=16)
p.add_argument("--q")
p.add_argument("--kv")
p.add_argument("--append", type=int, default=0)
a = p.parse_args()
a.bits = [int(x) for x in a.bits.split("-")]
a.order = {"lsb": "lsb_first", "msb": "msb_first"}[a.order]
rng = np.random.default_rng(a.seed)
{"stage2": make_stage2, "stage1-edges": make_stage1_edges, "append": make_append, "flush": make_flush,
 "attn-buffer": make_attn_buffer}[a.kind](a, rng)
