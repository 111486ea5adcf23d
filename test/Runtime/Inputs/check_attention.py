"""Recomputes attention with NumPy from the .npy files qattn-run wrote.

usage: check_attention.py DIR SCALE causal|full

Reads DIR/q.npy, k.npy, v.npy and out.npy, computes softmax(scale Q K^T +
mask) V in float64 independently of qattn-run's reference (grouped-query by
repeating KV heads, causal mask aligned to the last key), and prints the
relative Frobenius error of out; exits 1 if it exceeds 1e-5.
"""
import sys

import numpy as np

directory, scale, mode = sys.argv[1], float(sys.argv[2]), sys.argv[3]
q, k, v, out = (np.load(f"{directory}/{name}.npy").astype(np.float64)
                for name in ("q", "k", "v", "out"))
group = q.shape[1] // k.shape[1]
k = np.repeat(k, group, axis=1)
v = np.repeat(v, group, axis=1)
scores = scale * q @ k.transpose(0, 1, 3, 2)
if mode == "causal":
    nq, nk = q.shape[2], k.shape[2]
    masked = np.arange(nk)[None, :] > np.arange(nq)[:, None] + (nk - nq)
    scores = np.where(masked, -np.inf, scores)
weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
expected = (weights / weights.sum(axis=-1, keepdims=True)) @ v
rel = np.linalg.norm(out - expected) / np.linalg.norm(expected)
print(f"numpy attention ({mode}): rel_fro={rel:.1e}")
sys.exit(0 if rel <= 1e-5 else 1)
