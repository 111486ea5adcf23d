# RUN: %python %s
# REQUIRES: numpy
"""Stage 1 (symmetric int8) and the decode buffer (FORMAT.md): rounding, scales, error bound."""

import math

import os
import sys

import numpy as np

from qattn import format as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
from testutil import expect_value_errors  # noqa: E402

rng = np.random.default_rng(7)
U = 2.0**-24  # f32 unit roundoff

# ---- round_half_away -----------------------------------------------------------------------------
below_half = np.nextafter(np.float32(0.5), np.float32(0))  # 0.49999997
below_2p5 = np.nextafter(np.float32(2.5), np.float32(0))
x = np.array([0.5, -0.5, 1.5, -1.5, 2.5, -2.5, below_half, -below_half, below_2p5, 3.0, -0.0,
              8388609.0, 1e30], np.float32)
want = [1, -1, 2, -2, 3, -3, 0, 0, 2, 3, 0, 8388609.0, 1e30]
assert F.round_half_away(x).tolist() == np.array(want, np.float32).tolist(), F.round_half_away(x)
assert F.round_half_away(x).dtype == np.float32
assert F.round_half_away(np.array([0.5, 2.5, -3.5])).tolist() == [1.0, 3.0, -4.0]
print("stage1: round_half_away (halfway away from zero, exact near 0.5) OK")


def s_per_elem(s1, block, n):
    s = np.asarray(s1, np.float32)
    s = np.repeat(s, block, axis=2)[:, :, :n]
    return s[..., None] if s.ndim == 3 else s


def check(x, block, scale_dtype, gran, label):
    q8, s1 = F.stage1_quantize(x, block, scale_dtype, gran)
    b, h, n, d = x.shape
    nb = math.ceil(n / block)
    assert q8.dtype == np.int8 and q8.shape == x.shape
    want_shape = (b, h, nb) if gran == "block" else (b, h, nb, d)
    assert s1.shape == want_shape, (s1.shape, want_shape)
    assert s1.dtype == (np.float32 if scale_dtype == "f32" else np.float16)
    assert q8.min() >= -127 and q8.max() <= 127  # -128 never occurs
    # scales: m / 127 in f32 (computed here in f64 and rounded: innocuous double rounding), then
    # rounded to the scale type
    x32 = np.asarray(x, np.float32)
    for k in range(nb):
        blk = np.abs(x32[:, :, k * block : (k + 1) * block].astype(np.float64))
        m = blk.max(axis=(2, 3)) if gran == "block" else blk.max(axis=2)
        want = (m / 127).astype(np.float32).astype(s1.dtype)
        assert np.array_equal(s1[:, :, k], want), (label, k)
    s = s_per_elem(s1, block, n)
    xd = F.stage1_dequantize(q8, s1, block, gran)
    assert xd.dtype == np.float32 and np.array_equal(xd, q8.astype(np.float32) * s)
    err = np.abs(x32.astype(np.float64) - xd.astype(np.float64))
    s64 = np.broadcast_to(s.astype(np.float64), err.shape)
    # FORMAT.md: |X - X'| <= s/2 (plus f32 rounding). Rigorous f32 rounding terms: the division
    # x/s and the product q*s each add at most one half-ulp: |x|*u + |x'|*u.
    rigorous = s64 / 2 + (np.abs(x32) + np.abs(xd)).astype(np.float64) * U
    assert np.all(err <= rigorous), (label, np.max(err - rigorous))
    # The tighter s/2 * (1 + 1e-6) is not guaranteed (see the hand case below, 1 + 2.2e-5) but
    # holds for this seeded data; count and require it so a change of rounding shows up.
    n_tight = int(np.sum(err > s64 / 2 * (1 + 1e-6)))
    assert n_tight == 0, (label, n_tight)
    # independent scalar computation of q8 for a sample of elements
    idx = rng.integers(0, x32.size, 300)
    for flat in idx:
        i = np.unravel_index(flat, x32.shape)
        sv = float(s[i[0], i[1], i[2], i[3] if s.shape[3] > 1 else 0])
        if sv == 0:
            assert q8[i] == 0
            continue
        r = float(np.float32(float(x32[i]) / sv))  # f32 true division (innocuous double rounding)
        q = math.copysign(math.floor(abs(r) + 0.5), r)  # exact in f64 for f32 r
        assert q8[i] == max(-127, min(127, q)), (label, i)
    print(f"stage1: {label}: shapes, scales, q8 and |x-x'| <= s/2 + f32 rounding OK "
          f"(max err/s = {np.max(np.where(s64 > 0, err / np.where(s64 > 0, s64, 1), 0)):.7f}, "
          f"{n_tight} of {err.size} above s/2*(1+1e-6))")
    return q8, s1


b, h, n, d = 2, 3, 37, 64  # ragged: 37 tokens in blocks of 16 -> NB = 3, last block 5 tokens
x = rng.standard_normal((b, h, n, d)).astype(np.float32) * rng.uniform(0.1, 10, (b, h, 1, 1)).astype(np.float32)
x[0, 1, 16:32] = 0.0  # an all-zero block inside random data -> s1 = 0, q8 = 0
x[1, 2, 32:, 5] = 0.0  # an all-zero channel of the short last block (channel granularity)
x[1, 0, 3, 7] = 40.0  # an outlier

q8, s1 = check(x, 16, "f32", "block", "f32 scales, block")
assert s1[0, 1, 1] == 0 and np.all(q8[0, 1, 16:32] == 0)
assert np.all(s1[np.arange(2) != 0] != 0) and np.count_nonzero(s1 == 0) == 1
assert np.all(F.stage1_dequantize(q8, s1, 16)[0, 1, 16:32] == 0)
q8c, s1c = check(x, 16, "f32", "channel", "f32 scales, channel")
assert np.all(s1c[0, 1, 1] == 0) and s1c[1, 2, 2, 5] == 0 and np.all(q8c[1, 2, 32:, 5] == 0)
assert np.count_nonzero(s1c == 0) == 64 + 1
check(x, 16, "f16", "block", "f16 scales, block")
check(x, 16, "f16", "channel", "f16 scales, channel")
check(x, 5, "f32", "block", "block=5 (NB=8, last block 2 tokens)")
check(x[:, :, :1], 16, "f32", "block", "N=1")
# f16 input is converted to f32 first
x16 = x.astype(np.float16)
q8h, s1h = F.stage1_quantize(x16, 16)
assert all(np.array_equal(a, b_) for a, b_ in zip((q8h, s1h), F.stage1_quantize(x16.astype(np.float32), 16)))
# bf16 input through bf16_to_f32 (bit patterns): 0x3F80 = 1.0, 0xC040 = -3.0, 0x3EAB ~ 0.333984375
assert F.bf16_to_f32(np.array([0x3F80, 0xC040, 0x3EAB], np.uint16)).tolist() == [1.0, -3.0, 0.333984375]

# ---- hand cases ----------------------------------------------------------------------------------
# block max 127 -> s = 1 exactly: q8 = round(x) with halfway cases away from zero
xh = np.zeros((1, 1, 8, 8), np.float32)
xh[0, 0, 0, :6] = [127.0, 2.5, -2.5, 0.5, -0.5, 1.4999999]
q, s = F.stage1_quantize(xh, 8)
assert s.tolist() == [[[1.0]]] and q[0, 0, 0, :6].tolist() == [127, 3, -3, 1, -1, 1]
# f16 scale rounding (nearest even): m/127 = 1 + 2^-11 (halfway 1 | 1+2^-10) -> 1.0;
# m/127 = 1 + 3*2^-11 (halfway 1+2^-10 | 1+2^-9) -> 1 + 2^-9
for ratio, want_s in ((1 + 2**-11, 1.0), (1 + 3 * 2**-11, 1 + 2**-9)):
    xh = np.full((1, 1, 4, 8), 0.25, np.float32)
    xh[0, 0, 2, 3] = -127 * ratio
    q, s = F.stage1_quantize(xh, 4, "f16")
    assert s.dtype == np.float16 and float(s[0, 0, 0]) == want_s, (ratio, s)
    # |x| / s slightly above 127 -> clamped to -127, still within s/2
    assert q[0, 0, 2, 3] == -127 and q.min() == -127
    assert abs(float(xh[0, 0, 2, 3]) - (-127 * want_s)) <= want_s / 2
# "(plus f32 rounding)" is real: here x / s = 126.49999... rounds in f32 to 126.5 (-> 127) and
# the f32 product 127 * s rounds up, so |x - x'| = 0.5000109 s > s/2 * (1 + 1e-6). The rigorous
# bound s/2 + (|x| + |x'|) * 2^-24 (one half-ulp for the division, one for the product) holds.
m, xv = float.fromhex("0x1.0c6d6ap+0"), float.fromhex("0x1.0b5edep+0")
xh = np.full((1, 1, 2, 8), 0.5, np.float32)
xh[0, 0, 0, 0], xh[0, 0, 1, 1] = m, xv
q, s = F.stage1_quantize(xh, 2)
sv = float(s[0, 0, 0])
assert sv == float.fromhex("0x1.0e8a7ep-7") and q[0, 0, 1, 1] == 127
err = abs(xv - float(F.stage1_dequantize(q, s, 2)[0, 0, 1, 1]))
assert sv / 2 * (1 + 1e-6) < err <= sv / 2 + (xv + 127 * sv) * U * (1 + 1e-9), err / sv
print(f"stage1: hand cases (s=1 rounding, f16 ties-to-even scales, clamp at 127, "
      f"f32 rounding case err = {err / sv:.7f} s) OK")

# f16 scales outside f16's normal range (FORMAT.md is silent; the text is followed literally):
# * max|X| = 1e-4: m/127 = 7.87e-7 is an f16 subnormal, stored as 7.75e-7; |X|/s reaches
#   129.0 and is clamped, so the error (1.6e-6) exceeds s/2 (3.9e-7): the stated bound fails;
# * max|X| = 1e-7: m/127 rounds to f16 0 -> s = 0 -> q8 = 0 for the whole block;
# * max|X| = 1e7: m/127 overflows f16 to inf -> X / inf = 0 -> q8 = 0 (and X' = 0 * inf = NaN).
for mval, want_q, label in ((1e-4, 127, "subnormal"), (1e-7, 0, "zero"), (1e7, 0, "inf")):
    xh = np.full((1, 1, 2, 8), mval / 2, np.float32)
    xh[0, 0, 1, 2] = mval
    with np.errstate(over="ignore"):
        q, s = F.stage1_quantize(xh, 2, "f16")
    sv = float(s[0, 0, 0])
    assert q[0, 0, 1, 2] == want_q, (label, q, s)
    if label == "subnormal":
        assert 0 < sv < 2.0**-14 and abs(float(np.float32(mval)) - 127 * sv) > sv / 2
    else:
        assert sv == (0.0 if label == "zero" else np.inf) and not q.any()
print("stage1: f16 scales out of f16's normal range (subnormal: bound fails; 0 and inf: q8 = 0) "
      "follow the text literally OK")

# ---- decode buffer ---------------------------------------------------------------------------------
# scale = the stage-1 scale of the prompt's last block; new tokens include outliers beyond 127*s
scale = s1[:, :, -1].astype(np.float32).copy()  # [B, H]
scale[1, 1] = 0.0  # a zero scale -> q8 = 0
xb = rng.standard_normal((b, h, 16, d)).astype(np.float32) * 3
xb[0, 0, 4, 4] = 1000.0
xb[0, 0, 5, 5] = -1000.0
qb = F.buffer_quantize(xb, scale)
assert qb.dtype == np.int8 and qb.shape == xb.shape and qb.min() >= -127
assert qb[0, 0, 4, 4] == 127 and qb[0, 0, 5, 5] == -127 and np.all(qb[1, 1] == 0)
with np.errstate(divide="ignore", invalid="ignore"):
    r = xb / scale[:, :, None, None]
want = np.where(scale[:, :, None, None] == 0, 0, np.clip(F.round_half_away(r), -127, 127))
assert np.array_equal(qb, want.astype(np.int8))
sc = scale[:, :, None, None].astype(np.float64)
inside = np.abs(xb) <= 127 * sc
err = np.abs(xb - qb.astype(np.float32) * scale[:, :, None, None])
assert np.all((err <= sc / 2 + np.abs(xb) * 2 * U)[inside])
print(f"stage1: decode buffer (fixed [B,H] scale, {int(np.sum(~inside & (sc > 0)))} clamped outliers, zero scale) OK")

expect_value_errors((
    lambda: F.stage1_quantize(x, 16, "bf16"),
    lambda: F.stage1_quantize(x, 16, "f32", "row"),
    lambda: F.stage1_dequantize(q8, s1, 16, "channel"),
    lambda: F.buffer_quantize(xb, scale[:, :1]),
))
# ---- f32_to_bf16 (output rounding, nearest even) -------------------------------------------------
x = np.array([1.0, 1 + 2.0**-8, 1 + 3 * 2.0**-8, 1 + 2.0**-8 + 2.0**-20, -3.14159, 0.0, -0.0,
              np.inf, -np.inf, 3.4e38, 2.0**-133 + 2.0**-140, np.nan], np.float32)
back = F.bf16_to_f32(F.f32_to_bf16(x))
want_vals = [1.0, 1.0, 1 + 2.0**-6, 1 + 2.0**-7, -3.140625, 0.0, -0.0, np.inf, -np.inf, np.inf,
             2.0**-133]
assert back[:11].tolist() == want_vals, back
assert np.signbit(back[6]) and np.isnan(back[11])
# exhaustive over bf16 values: a bf16 value converts to itself
allv = F.bf16_to_f32(np.arange(65536, dtype=np.uint16))
fin = ~np.isnan(allv)
assert np.array_equal(F.f32_to_bf16(allv)[fin], np.arange(65536, dtype=np.uint16)[fin])
# random f32 values: the result is one of the two neighbours and the nearer (ties to even)
r = rng.standard_normal(100000).astype(np.float32) * np.float32(1e3)
b = F.bf16_to_f32(F.f32_to_bf16(r)).astype(np.float64)
u = r.view(np.uint32)
lo = ((u >> 16) << 16).view(np.float32).astype(np.float64)
hi = (((u >> 16) + 1) << 16).astype(np.uint32).view(np.float32).astype(np.float64)
assert np.all((b == lo) | (b == hi))
assert np.all(np.abs(b - r) <= np.minimum(np.abs(lo - r), np.abs(hi - r)))
print("stage1: f32_to_bf16 (nearest even, exhaustive identity on bf16 values) OK")
print("format_stage1: PASS")
