#!/usr/bin/env python3
"""Writes random operand files for one compiled artifact's first function and
prints the matching `--input NAME=FILE` arguments of qattn-run, for profiling
(Nsight Compute) where only the kernels' work matters, not the answer: int8
operands (codes, stage-2 scales and zero points) uniform in [-20, 20), float
operands (stage-1 scales) uniform in [0.01, 0.02), so every value is finite.
For checked runs use bench/run.py, which quantizes real data.

usage: profile_inputs.py ARTIFACT_DIR OUT_DIR
"""
import json
import os
import sys

import numpy as np


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    art, out = sys.argv[1:]
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(art, "manifest.json")) as f:
        fn = json.load(f)["functions"][0]
    rng = np.random.default_rng(0)
    args = []
    for a in fn["args"]:
        if a["dtype"] == "i8":
            x = rng.integers(-20, 20, size=a["shape"], dtype=np.int8)
        elif a["dtype"] == "f32":
            x = rng.uniform(0.01, 0.02, size=a["shape"]).astype(np.float32)
        else:
            sys.exit(f"profile_inputs.py: argument {a['name']}: dtype {a['dtype']} not handled")
        path = os.path.join(out, a["name"] + ".npy")
        np.save(path, x)
        args += ["--input", f"{a['name']}={path}"]
    print(" ".join(args))


if __name__ == "__main__":
    main()
