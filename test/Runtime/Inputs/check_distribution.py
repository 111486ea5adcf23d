"""Checks that a tensor qattn-run generated looks like its distribution.

usage: check_distribution.py FILE.npy normal|uniform|outlier

Prints the statistics it checks and exits 1 if one is off. The bounds are
loose enough for a few hundred samples and tight enough to catch a wrong
scale, range or outlier count.
"""
import sys

import numpy as np

path, dist = sys.argv[1], sys.argv[2]
x = np.load(path).astype(np.float64)
problems = []
if dist == "normal":
    print(f"mean={x.mean():.3f} std={x.std():.3f}")
    if abs(x.mean()) > 0.25 or not 0.85 < x.std() < 1.15:
        problems.append("not standard normal")
elif dist == "uniform":
    print(f"min>=-1: {x.min() >= -1} max<1: {x.max() < 1} std={x.std():.3f}")
    if x.min() < -1 or x.max() >= 1 or abs(x.std() - 3**-0.5) > 0.08:
        problems.append("not uniform in [-1, 1)")
elif dist == "outlier":
    channels = x.shape[-1]
    stds = x.reshape(-1, channels).std(axis=0)
    outliers = int((stds > 4).sum())
    print(f"{outliers} outlier channels of {channels}")
    if outliers != max(1, channels // 8) or (stds[stds <= 4] > 2).any():
        problems.append("wrong outlier channels")
for problem in problems:
    print(f"{path}: {problem}")
sys.exit(1 if problems else 0)
