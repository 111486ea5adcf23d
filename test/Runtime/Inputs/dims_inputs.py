"""Writes fresh random inputs for the dynamically shaped functions of
test/Target/cpu-artifact-dims.mlir.

usage: dims_inputs.py DIR SEED B N

Writes DIR/q.npy f32 [B, 2, 16], DIR/k.npy f32 [B, 2, N, 16] (for @scores)
and DIR/x.npy f32 [B, 8], DIR/bias.npy f32 [8] (for @add_bias), drawn from
NumPy's generator, which qattn-run's own does not share.
"""
import os
import sys

import numpy as np

directory, seed, b, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rng = np.random.default_rng(seed)
os.makedirs(directory, exist_ok=True)
for name, shape in [("q", (b, 2, 16)), ("k", (b, 2, n, 16)), ("x", (b, 8)), ("bias", (8,))]:
    np.save(os.path.join(directory, f"{name}.npy"),
            rng.standard_normal(shape).astype(np.float32))
