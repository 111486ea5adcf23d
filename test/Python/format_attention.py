# RUN: %python %s
# REQUIRES: numpy
"""Attention semantics (FORMAT.md "Attention operands"): float64 reference vs a naive loop,
GQA, causal alignment, softmax rows, and dequantized K/V from stage-2 + decode buffer."""

import math

import os
import sys

import numpy as np

from qattn import format as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
from testutil import expect_value_errors, sas_term64  # noqa: E402

rng = np.random.default_rng(13)



def naive(q, k, v, scale, causal, term=math.exp):
    """Plain-Python loops: per batch, query head, query row."""
    B, Hq, Nq, d = q.shape
    Hkv, Nk = k.shape[1], k.shape[2]
    q, k, v = q.tolist(), k.tolist(), v.tolist()
    out = np.zeros((B, Hq, Nq, d))
    probs = np.zeros((B, Hq, Nq, Nk))
    for b in range(B):
        for h in range(Hq):
            kh = h // (Hq // Hkv)
            for i in range(Nq):
                scores = []
                for j in range(Nk):
                    if causal and j > i + (Nk - Nq):
                        scores.append(None)
                    else:
                        scores.append(scale * math.fsum(q[b][h][i][c] * k[b][kh][j][c] for c in range(d)))
                m = max(s for s in scores if s is not None)
                w = [0.0 if s is None else term(s - m) for s in scores]
                tot = math.fsum(w)
                for j in range(Nk):
                    probs[b, h, i, j] = w[j] / tot
                for c in range(d):
                    out[b, h, i, c] = math.fsum(probs[b, h, i, j] * v[b][kh][j][c] for j in range(Nk))
    return out, probs


# ---- float64 reference vs naive loops ----------------------------------------------------------------
count = 0
for hq, hkv in ((2, 2), (4, 1), (8, 2)):  # GQA ratios 1, 4, 4
    for nq, nk in ((5, 37), (37, 37), (1, 37), (16, 21)):
        for causal in (False, True):
            d = 16
            q = rng.standard_normal((2, hq, nq, d))
            k = rng.standard_normal((2, hkv, nk, d))
            v = rng.standard_normal((2, hkv, nk, d))
            scale = 1 / math.sqrt(d)
            o = F.attention(q, k, v, scale, causal)
            p = F.attention_weights(q, k, scale, causal)
            o_ref, p_ref = naive(q, k, v, scale, causal)
            assert o.dtype == np.float64 and o.shape == (2, hq, nq, d)
            assert np.max(np.abs(o - o_ref)) <= 1e-12 and np.max(np.abs(p - p_ref)) <= 1e-12, (hq, hkv, nq, nk, causal)
            assert np.max(np.abs(p.sum(axis=-1) - 1)) <= 1e-12
            if causal:
                i = np.arange(nq)[:, None]
                j = np.arange(nk)[None, :]
                masked = np.broadcast_to(j > i + (nk - nq), p.shape)
                assert np.all(p[masked] == 0) and np.all(p[~masked] > 0)
                assert np.all(p[:, :, -1] > 0)  # the last query sees every key
            else:
                assert np.all(p > 0)
            count += 1
# GQA mapping spelled out: query head h uses KV head h // (Hq / Hkv)
q = rng.standard_normal((1, 4, 3, 8))
k = rng.standard_normal((1, 2, 9, 8))
v = rng.standard_normal((1, 2, 9, 8))
o = F.attention(q, k, v, 0.3, True)
for h in range(4):
    assert np.array_equal(o[:, h : h + 1], F.attention(q[:, h : h + 1], k[:, h // 2 : h // 2 + 1], v[:, h // 2 : h // 2 + 1], 0.3, True))
print(f"attention: float64 reference == naive loops (1e-12) on {count} cases "
      "(GQA 1/4, causal/non-causal, Nq<Nk ragged), rows sum to 1, causal mask j > i + Nk - Nq OK")

# SAS softmax (float64 arithmetic) vs the naive loop with a scalar SAS term
for p_deg, thr in ((2, -6.0), (4, -8.0), (1, -3.5)):
    q = rng.standard_normal((1, 4, 6, 16)) * 4
    k = rng.standard_normal((1, 1, 29, 16))
    v = rng.standard_normal((1, 1, 29, 16))
    o = F.attention(q, k, v, 0.25, True, "sas", thr, p_deg)
    pw = F.attention_weights(q, k, 0.25, True, "sas", thr, p_deg)
    o_ref, p_ref = naive(q, k, v, 0.25, True, lambda x: sas_term64(x, thr, p_deg))
    assert np.max(np.abs(o - o_ref)) <= 1e-12 and np.max(np.abs(pw - p_ref)) <= 1e-12
    assert np.max(np.abs(pw.sum(-1) - 1)) <= 1e-12
    assert np.any(pw[:, :, -1] == 0)  # some keys fall below the threshold
    o32 = F.attention(q.astype(np.float32), k.astype(np.float32), v.astype(np.float32), 0.25, True,
                      "sas", thr, p_deg, dtype=np.float32)
    assert o32.dtype == np.float32 and np.max(np.abs(o32 - o)) <= 2e-5
print("attention: SAS softmax (degrees 2/4/1, thresholds -6/-8/-3.5) == naive loop (1e-12); "
      "f32 variant within 2e-5 OK")

# ---- quantized operands: stage-2 K (+ decode buffer), stage-1 V, stage-1 Q ------------------------
B, HQ, HKV, NK, NB, NQ, D = 2, 8, 2, 37, 16, 7, 64
BLOCK, GROUP, BITS = 16, 8, [4, 2]
kf = rng.standard_normal((B, HKV, NK, D)).astype(np.float32)
vf = rng.standard_normal((B, HKV, NK, D)).astype(np.float32)
kbf = rng.standard_normal((B, HKV, NB, D)).astype(np.float32)  # new tokens for the decode buffer
vbf = rng.standard_normal((B, HKV, NB, D)).astype(np.float32)
qf = rng.standard_normal((B, HQ, NQ, D)).astype(np.float32)

k8, s1k = F.stage1_quantize(kf, BLOCK)
pk, s2k, z2k = F.stage2_quantize(k8, BITS, GROUP, "msb_first")
kscale = s1k[:, :, -1].copy()  # buffer scale: the stage-1 scale of the prompt's last block
kb = F.buffer_quantize(kbf, kscale)
v8, s1v = F.stage1_quantize(vf, BLOCK, "f16", "channel")
vscale = s1v[:, :, -1].astype(np.float32).max(axis=-1)
vb = F.buffer_quantize(vbf, vscale)
q8, s1q = F.stage1_quantize(qf, 16)

kd = F.dequantized_kv(s1k, BLOCK, "block", packed=pk, s2=s2k, z2=z2k, bits=BITS, group=GROUP,
                      order="msb_first", buffer=kb, buffer_scale=kscale)
vd = F.dequantized_kv(s1v, BLOCK, "channel", q8=v8, buffer=vb, buffer_scale=vscale)
assert kd.dtype == np.float32 and kd.shape == (B, HKV, NK + NB, D)
assert vd.dtype == np.float32 and vd.shape == (B, HKV, NK + NB, D)
# element by element, in f32 scalars: (q - z2) * s2 (integers), then f32(q8') * s1; buffer tokens
# f32(q8) * scale, after the cache's tokens
codes, _, _ = F.stage2_codes(k8, BITS, GROUP)
for b in range(B):
    for h in range(HKV):
        for t in range(NK + NB):
            for c in range(0, D, 7):
                if t < NK:
                    g = t // GROUP
                    qd = (int(codes[b, h, t, c]) - int(z2k[b, h, g, c])) * int(s2k[b, h, g, c])
                    want_k = np.float32(qd) * np.float32(s1k[b, h, t // BLOCK])
                    want_v = np.float32(v8[b, h, t, c]) * np.float32(s1v[b, h, t // BLOCK, c])
                else:
                    want_k = np.float32(kb[b, h, t - NK, c]) * kscale[b, h]
                    want_v = np.float32(vb[b, h, t - NK, c]) * vscale[b, h]
                assert kd[b, h, t, c] == want_k and vd[b, h, t, c] == want_v, (b, h, t, c)
qd = F.stage1_dequantize(q8, s1q, 16)
scale = 1 / math.sqrt(D)
for causal in (True, False):
    o = F.attention(qd, kd, vd, scale, causal)
    o_ref, p_ref = naive(qd.astype(np.float64), kd.astype(np.float64), vd.astype(np.float64), scale, causal)
    assert np.max(np.abs(o - o_ref)) <= 1e-12
    if causal:  # keys are tokens 0 .. NK + NB - 1; mask j > i + (NK + NB - NQ)
        pw = F.attention_weights(qd, kd, scale, True)
        assert np.all(pw[:, :, 0, NK + NB - NQ + 1 :] == 0) and np.all(pw[:, :, 0, : NK + NB - NQ + 1] > 0)
# end to end against unquantized float attention (information; 2-bit heads dominate the error)
kfull = np.concatenate([kf, kbf], axis=2)
vfull = np.concatenate([vf, vbf], axis=2)
o_float = F.attention(qf, kfull, vfull, scale, True)
o_q = F.attention(qd, kd, vd, scale, True)
err = np.abs(o_q - o_float)
assert err.max() < 0.5
print(f"attention: dequantized K (stage 2 msb_first bits [4,2] + decode buffer) and V (stage 1 "
      f"f16 channel + buffer) match scalar f32 dequantization; Hq=8 Hkv=2 Nq=7 Nk=37+16 == naive "
      f"(1e-12); vs unquantized: max |err| {err.max():.3f}, mean {err.mean():.4f} OK")

expect_value_errors((
    lambda: F.attention(rng.standard_normal((1, 2, 9, 8)), rng.standard_normal((1, 2, 5, 8)),
                        rng.standard_normal((1, 2, 5, 8)), 1.0, True),  # Nq > Nk, causal
    lambda: F.attention(rng.standard_normal((1, 3, 2, 8)), rng.standard_normal((1, 2, 5, 8)),
                        rng.standard_normal((1, 2, 5, 8)), 1.0, False),  # Hq % Hkv != 0
    lambda: F.dequantized_kv(s1k, BLOCK, packed=pk, s2=s2k),  # missing z2 / bits / group
))
print("format_attention: PASS")
