# RUN: %python %s | FileCheck %s
# REQUIRES: numpy
"""scripts/torch-check/prepare.py compiles one decode function per cache shape that
examples/decode_loop.py will meet; its shape list must follow qattn.kv_cache exactly (prompt
blocks to stage 2, ragged rest buffered, a full buffer flushed before the next token), or the
loop on the GPU machine would ask for a function that was never compiled."""

import os
import sys

import numpy as np

from qattn.kv_cache import QuantizedKVCache

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "scripts", "torch-check"))
import prepare  # noqa: E402

rng = np.random.default_rng(0)
for prompt, gen, block, n_b in ((64, 64, 32, 32), (40, 50, 16, 32), (7, 40, 8, 8)):
    shapes = prepare.decode_shapes(prompt, gen, block, n_b)
    cache = QuantizedKVCache(layers=1, batch=1, kv_heads=1, head_dim=8, capacity=
                             -(-(prompt + gen) // block) * block, block=block, group=block // 2,
                             buffer_tokens=n_b)
    cache[0].prefill(rng.normal(size=(1, 1, prompt, 8)), rng.normal(size=(1, 1, prompt, 8)))
    seen = []
    for _ in range(gen):
        cache[0].append(rng.normal(size=(1, 1, 1, 8)), rng.normal(size=(1, 1, 1, 8)))
        seen.append((cache[0].length, cache[0].buffered))
    assert seen == shapes, (prompt, gen, block, n_b)
    print(f"prompt {prompt} gen {gen}: {len(set(shapes))} shapes, last {shapes[-1]}")
# CHECK: prompt 64 gen 64: 64 shapes, last (96, 32)
# CHECK: prompt 40 gen 50: 50 shapes
# CHECK: prompt 7 gen 40: 40 shapes

text = prepare.model_module(dict(prepare.MODEL, gen=3), [4, 2])
print(text.count("func.func @"), "functions:",
      [line.split("@")[1].split("(")[0] for line in text.splitlines() if "func.func @" in line])
# CHECK: 4 functions: ['prefill_n64', 'decode_n64_b1', 'decode_n64_b2', 'decode_n64_b3']
