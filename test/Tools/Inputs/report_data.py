"""Fresh random calibration K/V for the qattn-report test: K with per-channel offsets and two
outlier channels (what key caches look like), V Gaussian; [1, 2, 80, 16] float32."""

import sys

import numpy as np

out, seed = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(seed)
k = rng.standard_normal((1, 2, 80, 16)) + rng.uniform(-3, 3, (1, 2, 1, 16))
k[..., [3, 11]] *= 8
v = rng.standard_normal((1, 2, 80, 16))
np.save(f"{out}/k.npy", k.astype(np.float32))
np.save(f"{out}/v.npy", v.astype(np.float32))
