"""Recomputes a function of test/Target/cpu-artifact-dims.mlir with NumPy
from the .npy files qattn-run read or wrote.

usage: check_dims.py scores|add_bias INPUTS_DIR OUTPUT_DIR

scores: s[b, h, n] = sum_d q[b, h, d] k[b, h, n, d]; add_bias: x + bias.
Arguments come from OUTPUT_DIR, where qattn-run writes those it generated,
else from INPUTS_DIR; the result from OUTPUT_DIR. Prints the
shapes and the largest relative error in float64; exits 1 above 1e-6.
"""
import os
import sys

import numpy as np

function, inputs, outputs = sys.argv[1:]


def load(name):
    for directory in (outputs, inputs):
        path = os.path.join(directory, f"{name}.npy")
        if os.path.exists(path):
            return np.load(path).astype(np.float64)
    sys.exit(f"check_dims.py: no {name}.npy")


if function == "scores":
    q, k, out = load("q"), load("k"), load("s")
    expected = np.einsum("bhd,bhnd->bhn", q, k)
    shapes = f"q {list(q.shape)} k {list(k.shape)} -> s {list(out.shape)}"
else:
    x, bias, out = load("x"), load("bias"), load("result0")
    expected = x + bias
    shapes = f"x {list(x.shape)} bias {list(bias.shape)} -> {list(out.shape)}"
assert out.shape == expected.shape, (out.shape, expected.shape)
rel = np.abs(out - expected).max() / np.abs(expected).max()
print(f"numpy {function}: {shapes} rel_max={rel:.1e}")
sys.exit(0 if rel <= 1e-6 else 1)
