# RUN: %python %s | FileCheck %s
# REQUIRES: torch
"""qattn.torch_quant (FORMAT.md in PyTorch) bit-exact against qattn.format, on CPU tensors:
stage 1 (ragged blocks, all-zero blocks, outlier channels, bf16 input), stage 2 (2/3/4 bits,
mixed heads, ragged groups, both packing orders), decode-buffer quantization (clamping, zero
scales); and qattn.kv_cache's torch backend against its NumPy backend. The same checks run on
CUDA tensors in scripts/torch-check/test_ops.py."""

import numpy as np
import torch

from qattn import format as F
from qattn import torch_quant as TQ
from qattn.kv_cache import QuantizedKVCache

rng = np.random.default_rng(3)
x = rng.normal(size=(2, 3, 70, 16)).astype(np.float32)
x[:, :, :, 2] *= 30
x[0, 1, :32] = 0
cases = 0
for block in (16, 32, 64, 7):
    q8, s1 = F.stage1_quantize(x, block)
    tq8, ts1 = TQ.stage1_quantize(torch.from_numpy(x), block)
    assert np.array_equal(q8, tq8.numpy()) and np.array_equal(s1, ts1.numpy()), block
    for bits, group in (([4], 16), ([2], 8), ([3], 4), ([4, 2, 3], 16), ([2, 4, 4], 5)):
        for order in ("lsb_first", "msb_first"):
            p, g, z = F.stage2_quantize(q8, bits, group, order)
            tp, tg, tz = TQ.stage2_quantize(tq8, bits, group, order)
            assert tp.dtype == tg.dtype == tz.dtype == torch.int8
            assert np.array_equal(p.view(np.int8), tp.numpy()), (block, bits, group, order)
            assert np.array_equal(g.view(np.int8), tg.numpy()) and np.array_equal(z, tz.numpy())
            cases += 1
print(f"stage 1 + stage 2: {cases} cases bit-exact")
# CHECK: stage 1 + stage 2: 40 cases bit-exact

# bf16 input: FORMAT.md converts to f32 first (exact).
xb = torch.from_numpy(x).to(torch.bfloat16)
q8, s1 = F.stage1_quantize(F.bf16_to_f32(xb.view(torch.int16).numpy().view(np.uint16)), 32)
tq8, ts1 = TQ.stage1_quantize(xb, 32)
assert np.array_equal(q8, tq8.numpy()) and np.array_equal(s1, ts1.numpy())
print("bf16 input: bit-exact")
# CHECK: bf16 input: bit-exact

# Halfway cases: FORMAT.md rounds them away from zero (torch.round would go to even).
h = torch.tensor([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.49999997, -0.49999997])
print("round:", TQ.round_half_away(h).tolist())
# CHECK: round: [-3.0, -2.0, -1.0, 1.0, 2.0, 3.0, 0.0, 0.0]

s = (np.abs(rng.normal(size=(2, 3))) * 0.05).astype(np.float32)
s[0, 0] = 0
b = F.buffer_quantize(x[:, :, :5], s)
tb = TQ.buffer_quantize(torch.from_numpy(x[:, :, :5]), torch.from_numpy(s))
assert np.array_equal(b, tb.numpy()) and int(np.abs(b).max()) == 127
print("buffer: bit-exact")
# CHECK: buffer: bit-exact

# The cache's torch backend holds exactly what the NumPy backend holds.
k = rng.normal(size=(1, 2, 100, 16)).astype(np.float32)
v = rng.normal(size=(1, 2, 100, 16)).astype(np.float32)
caches = [QuantizedKVCache(layers=1, batch=1, kv_heads=2, head_dim=16, capacity=112,
                           bits=[4, 2], block=16, group=8, buffer_tokens=32, backend=be)
          for be in ("numpy", "torch")]
for c, conv in zip(caches, (lambda a: a, torch.from_numpy)):
    c[0].prefill(conv(k[:, :, :37]), conv(v[:, :, :37]))
    for pos in range(37, 100):
        c[0].append(conv(k[:, :, pos : pos + 1]), conv(v[:, :, pos : pos + 1]))
for which in "kv":
    (na, nb), (ta, tb) = caches[0][0].operands(which), caches[1][0].operands(which)
    for a, t in zip(na + nb, ta + tb):
        assert t.is_contiguous() and np.array_equal(a, t.numpy())
print(f"torch cache: {caches[1][0].length} + {caches[1][0].buffered} tokens, same as numpy")
# CHECK: torch cache: 96 + 4 tokens, same as numpy
