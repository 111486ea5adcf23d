# RUN: %python %s
# REQUIRES: numpy
"""Stage 2 with ``anchor = min`` (FORMAT.md): the NumPy model against a scalar reference written
from the text (min/max and mse fits), the exhaustive (mn, mx, v) bounds (dequantized values in
int8, the group minimum exact, |q8 - q8'| <= s2 / 2 unless the 127 clamp moved the value), and
packing/dequantization round trips."""

import math
import os
import sys
from fractions import Fraction

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
from testutil import expect_value_errors, round_away  # noqa: E402

from qattn import format as F  # noqa: E402

rng = np.random.default_rng(41)



def scalar_min_anchor(vals, bits, fit):
    """FORMAT.md, anchor = min, one group and channel: (s2, z2, codes) in Python integers."""
    levels = 2**bits - 1
    mn, mx = min(vals), max(vals)

    def codes(s, z):
        hi = min(levels, (127 - z) // s)
        return [min(max(round_away(Fraction(x - z, s)), 0), hi) for x in vals]

    def err(s, z):
        return sum((z + c * s - x) ** 2 for c, x in zip(codes(s, z), vals))

    s0 = max(1, math.ceil(Fraction(mx - mn, levels)))
    best = (s0, mn)
    if fit == "mse":
        best_e = err(*best)
        for ds in (0, 1, 2):
            for dz in (0, -1, 1):
                s, z = s0 + ds, mn + dz
                if (ds or dz) and -127 <= z <= 127 and err(s, z) < best_e:
                    best, best_e = (s, z), err(s, z)
    return best[0], best[1], codes(*best)


def random_q8(b, h, n, d):
    x = rng.standard_normal((b, h, n, d)).astype(np.float32)
    x *= rng.uniform(0.05, 20.0, (b, h, 1, d)).astype(np.float32)
    x += rng.uniform(-3, 3, (b, h, 1, d)).astype(np.float32)
    return F.stage1_quantize(x, 16)[0]


for fit in ("minmax", "mse"):
    for bits, group, shape in (([4], 8, (1, 2, 37, 16)), ([3, 2], 16, (2, 2, 37, 8))):
        q8 = random_q8(*shape)
        q8[0, 0, :group, 0] = 127
        q8[0, 0, :group, 1] = np.linspace(-127, 127, group).round().astype(np.int8)
        codes, s2, z2 = F.stage2_codes(q8, bits, group, fit=fit, anchor="min")
        hb = F.head_bits(bits, shape[1])
        for b in range(shape[0]):
            for h in range(shape[1]):
                for g in range(s2.shape[2]):
                    toks = slice(g * group, (g + 1) * group)
                    for c in range(shape[3]):
                        vals = [int(x) for x in q8[b, h, toks, c]]
                        s, z, cs = scalar_min_anchor(vals, hb[h], fit)
                        assert (int(s2[b, h, g, c]), int(z2[b, h, g, c])) == (s, z), (fit, vals)
                        assert codes[b, h, toks, c].tolist() == cs, (fit, vals)
        for order in ("lsb_first", "msb_first"):
            p, s2p, z2p = F.stage2_quantize(q8, bits, group, order, fit=fit, anchor="min")
            dq = F.stage2_dequantize(p, s2p, z2p, shape[1], shape[3], bits, group, order,
                                     anchor="min")
            n = shape[2]
            st = lambda a: np.repeat(a.astype(np.int64), group, axis=2)[:, :, :n]  # noqa: E731
            assert np.array_equal(dq.astype(np.int64), st(z2p) + codes.astype(np.int64) * st(s2p))
        print(f"stage2 anchor=min fit={fit}: bits {bits} g{group}: s2, z2, codes match the "
              "scalar reference; both bit orders round-trip OK")

# ---- exhaustive: every (mn, mx, v), 2/3/4 bits, min/max fit ------------------------------------
for bw in (2, 3, 4):
    worst_unclamped = 0.0
    for mn in range(-127, 128):
        mx, v = np.meshgrid(np.arange(mn, 128), np.arange(-127, 128), indexing="ij")
        ok = (v >= mn) & (v <= mx)
        mx, v = mx[ok], v[ok]
        grp = np.stack([np.full(v.size, mn), mx, v]).reshape(1, 1, 3, v.size).astype(np.int8)
        s2e, z2e, lo, hi = (a[0, 0, 0] for a in F.stage2_params(grp, bw, 3, "min"))
        assert np.all(z2e == mn) and np.all(lo == 0) and np.all(hi >= 0)
        c, _, _ = F.stage2_codes(grp, bw, 3, anchor="min")
        dq = z2e + c[0, 0].astype(np.int64) * s2e
        assert dq.min() >= -127 and dq.max() <= 127
        assert np.all(dq[0] == mn)  # the group minimum is exact
        err = np.abs(grp[0, 0].astype(np.int64) - dq)
        assert np.all(err < s2e)
        unclamped = (z2e + F._round_div(grp[0, 0].astype(np.int64) - z2e, s2e) * s2e) <= 127
        assert np.all(2 * err[unclamped] <= np.broadcast_to(s2e, err.shape)[unclamped])
    print(f"stage2 anchor=min exhaustive {bw} bits: dequantized in [-127, 127], minimum exact, "
          "|q8 - q8'| < s2 and <= s2/2 unless clamped at 127 OK")

expect_value_errors([lambda: F.stage2_codes(random_q8(1, 1, 8, 8), 4, 8, anchor="max")])
print("format_stage2_anchor: PASS")
