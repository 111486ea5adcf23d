# RUN: %python %s
# REQUIRES: numpy
"""Key smoothing and the stage-2 mse fit (FORMAT.md): the NumPy model against scalar Python
references written from the text, the softmax invariance of smoothing, and the mse fit's
promises (never worse than min/max, dequantization inside int8, valid parameters)."""

import math
import os
import sys
from fractions import Fraction

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
from testutil import expect_value_errors, round_away  # noqa: E402

from qattn import format as F  # noqa: E402

rng = np.random.default_rng(31)
F32 = np.float32

# ---- smooth_keys: bit-exact against a scalar f32 loop ------------------------------------------
k = (rng.standard_normal((2, 3, 37, 8)) * 3 + rng.uniform(-5, 5, (2, 3, 1, 8))).astype(np.float16)
ks, mean = F.smooth_keys(k, calibration=(5, 29))
assert ks.dtype == F32 and mean.dtype == F32 and mean.shape == (2, 3, 8)
for b in range(2):
    for h in range(3):
        for c in range(8):
            acc = F32(0)
            for t in range(5, 29):
                acc = F32(acc + F32(k[b, h, t, c]))
            m = F32(acc / F32(24))
            assert mean[b, h, c].tobytes() == m.tobytes(), (b, h, c)
            for t in range(37):
                assert ks[b, h, t, c].tobytes() == F32(F32(k[b, h, t, c]) - m).tobytes()
# a given mean is used unchanged and shifts new tokens by the same vector
knew = rng.standard_normal((2, 3, 1, 8)).astype(F32)
ks1, mean1 = F.smooth_keys(knew, mean=mean)
assert mean1 is mean and np.array_equal(ks1, (knew - mean[:, :, None]).astype(F32))
print("smooth_keys: mean (ordered f32 sum / count) and K - mean bit-exact vs a scalar loop OK")

# ---- smoothing leaves attention unchanged (the softmax cancels q . mean) ------------------------
q = rng.standard_normal((2, 6, 5, 8)).astype(F32)
kf = k.astype(F32)
v = rng.standard_normal((2, 3, 37, 8)).astype(F32)
o = F.attention(q, kf, v, 1 / math.sqrt(8), causal=True)
o_s = F.attention(q, ks, v, 1 / math.sqrt(8), causal=True)
rel = np.abs(o - o_s).max() / np.abs(o).max()
assert rel < 1e-6, rel  # only the f32 rounding of K - mean differs
print(f"smooth_keys: causal GQA attention over K - mean equals attention over K (rel {rel:.1e}) OK")

expect_value_errors([
    lambda: F.smooth_keys(k),  # neither
    lambda: F.smooth_keys(k, calibration=(0, 4), mean=mean),  # both
    lambda: F.smooth_keys(k, calibration=(4, 4)),  # empty
    lambda: F.smooth_keys(k, calibration=(0, 38)),  # past the end
    lambda: F.smooth_keys(k, mean=mean[:, :2]),  # wrong shape
])


# ---- stage-2 mse fit: scalar reference -----------------------------------------------------------

def scalar_fit(vals, bits):
    """FORMAT.md's mse fit of one group/channel, from the text, in Python integers."""
    levels = 2**bits - 1
    mn, mx = min(vals), max(vals)

    def clamp_params(s, z):
        return max(0, z + math.ceil(Fraction(-128, s))), min(levels, z + math.floor(Fraction(127, s)))

    def err(s, z):
        lo, hi = clamp_params(s, z)
        return sum(((min(max(round_away(Fraction(x, s)) + z, lo), hi) - z) * s - x) ** 2 for x in vals)

    s0 = max(1, math.ceil(Fraction(mx - mn, levels)))
    z0 = round_away(Fraction(-mn, s0))
    best, best_e = (s0, z0), err(s0, z0)
    for ds in (0, 1, 2):
        s = s0 + ds
        for dz in (0, -1, 1):
            if ds == 0 and dz == 0:
                continue
            z = round_away(Fraction(-mn, s)) + dz
            lo, hi = clamp_params(s, z)
            if -127 <= z <= 127 and lo <= hi and err(s, z) < best_e:
                best, best_e = (s, z), err(s, z)
    return best


def random_q8(b, h, n, d):
    x = rng.standard_normal((b, h, n, d)).astype(F32)
    x *= rng.uniform(0.05, 20.0, (b, h, 1, d)).astype(F32)
    x += rng.uniform(-3, 3, (b, h, 1, d)).astype(F32)
    return F.stage1_quantize(x, 16)[0]


for bits, group, shape in (([4], 8, (1, 2, 37, 16)), ([3, 2], 16, (2, 2, 37, 8)), ([2], 5, (1, 1, 23, 8))):
    q8 = random_q8(*shape)
    q8[0, 0, :group, 0] = 127  # constant group at the top (candidates with lo > hi)
    q8[0, 0, :group, 1] = -127
    q8[0, 0, :group, 2] = np.linspace(-127, 127, group).round().astype(np.int8)
    codes, s2, z2 = F.stage2_codes(q8, bits, group, fit="mse")
    c_mm, s_mm, z_mm = F.stage2_codes(q8, bits, group)
    hb = F.head_bits(bits, shape[1])
    n = shape[2]
    changed = 0
    for b in range(shape[0]):
        for h in range(shape[1]):
            for g in range(s2.shape[2]):
                for c in range(shape[3]):
                    vals = [int(x) for x in q8[b, h, g * group:(g + 1) * group, c]]
                    want = scalar_fit(vals, hb[h])
                    assert (int(s2[b, h, g, c]), int(z2[b, h, g, c])) == want, (b, h, g, c, vals)
                    changed += want != (int(s_mm[b, h, g, c]), int(z_mm[b, h, g, c]))
    st = lambda a: np.repeat(a.astype(np.int64), group, axis=2)[:, :, :n]  # noqa: E731
    dq = (codes.astype(np.int64) - st(z2)) * st(s2)
    dq_mm = (c_mm.astype(np.int64) - st(z_mm)) * st(s_mm)
    assert dq.min() >= -128 and dq.max() <= 127
    e = np.add.reduceat((dq - q8) ** 2, np.arange(0, n, group), axis=2)
    e_mm = np.add.reduceat((dq_mm - q8) ** 2, np.arange(0, n, group), axis=2)
    assert np.all(e <= e_mm) and np.any(e < e_mm)
    assert changed > 0
    # packing and dequantization are the format's: the mse codes round-trip like any others
    p, s2p, z2p = F.stage2_quantize(q8, bits, group, fit="mse")
    assert np.array_equal(F.stage2_dequantize(p, s2p, z2p, shape[1], shape[3], bits, group), dq)
    print(f"stage2 fit=mse: bits {bits} g{group}: s2/z2 match the scalar reference, "
          f"{changed} of {s2.size} groups moved, squared error {e.sum()} <= minmax {e_mm.sum()}, "
          "dequantized in int8 OK")

expect_value_errors([lambda: F.stage2_codes(random_q8(1, 1, 8, 8), 4, 8, fit="best")])
print("format_smooth_fit: PASS")
