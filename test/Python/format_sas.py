# RUN: %python %s
# REQUIRES: numpy
"""Softmax terms (FORMAT.md "Softmax"): exact and SAS (LUT * Chebyshev polynomial)."""

import math
from fractions import Fraction

import os
import sys

import numpy as np

from qattn import format as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
from testutil import expect_value_errors  # noqa: E402

rng = np.random.default_rng(5)
f32 = np.float32

# ---- Chebyshev nodes and coefficients ------------------------------------------------------------
for p in range(1, 7):
    t = F.sas_nodes(p)
    # the nodes are the roots of T_{p+1}(2t - 1), mapped to [0, 1]
    roots = np.sort((np.polynomial.chebyshev.Chebyshev.basis(p + 1).roots() + 1) / 2)
    assert np.allclose(np.sort(t), roots, rtol=0, atol=1e-14) and np.all((t > 0) & (t < 1))
    c_exact = F._sas_coefficients_exact(p)
    c = F.sas_coefficients(p)
    assert c.dtype == np.float32 and c.shape == (p + 1,)
    # the exact coefficients interpolate exp at the nodes (evaluated in rationals)
    for tk in t:
        val = sum(ck * Fraction(float(tk)) ** j for j, ck in enumerate(c_exact))
        assert abs(float(val) - math.exp(tk)) <= 4e-16, (p, tk)
    # each f32 coefficient is the correctly rounded exact one: no f32 value is closer
    for ck, ce in zip(c, c_exact):
        for nb in (np.nextafter(ck, f32(-np.inf)), np.nextafter(ck, f32(np.inf))):
            assert abs(Fraction(float(ck)) - ce) <= abs(Fraction(float(nb)) - ce)
    # other ways of computing them in float64 give the same f32 values
    c_vander = np.linalg.solve(np.vander(t, p + 1, increasing=True), np.exp(t)).astype(f32)
    c_fit = np.polynomial.polynomial.polyfit(t, np.exp(t), p).astype(f32)
    assert np.array_equal(c_vander, c) and np.array_equal(c_fit, c), (p, c, c_vander, c_fit)
    # with the f32 coefficients, P still interpolates exp at the nodes to f32 accuracy
    p_at_t = np.polynomial.polynomial.polyval(t, c.astype(np.float64))
    assert np.max(np.abs(p_at_t - np.exp(t)) / np.exp(t)) < 2e-7, p
print("sas: coefficients interpolate exp at the Chebyshev nodes (exact), f32 rounding correct, "
      "same from f64 solve / polyfit, degrees 1-6 OK")
for p in (1, 2, 3, 4):
    print(f"sas: degree {p} f32 coefficients c0..c{p}: "
          + " ".join(float(v).hex() for v in F.sas_coefficients(p)))

lut = F.sas_lut(30)
assert lut.dtype == np.float32 and lut[0] == 1.0
assert np.array_equal(lut, np.exp(-np.arange(31.0)).astype(f32))
assert all(abs(Fraction(float(v)) - Fraction(math.exp(-k))) <= Fraction(float(v)) * 2**-24 for k, v in enumerate(lut))
print("sas: LUT[k] = exp(-k) rounded to f32, k = 0..30 OK")

# ---- hand values -------------------------------------------------------------------------------------
c = F.sas_coefficients(2)
# x = -2.25: i = -3, f = 0.75 -> LUT[3] * ((c2 * f + c1) * f + c0), every step in f32
f = f32(0.75)
want = lut[3] * ((c[2] * f + c[1]) * f + c[0])
assert F.softmax_terms(np.array([-2.25], f32), "sas", -6.0, 2)[0] == want
x = np.array([0.0, -1.0, -6.0, np.nextafter(f32(-6), f32(-7)), -7.0, -100.0, -np.inf, -5.999999], f32)
tt = F.softmax_terms(x, "sas", -6.0, 2)
assert tt.dtype == np.float32
assert tt[0] == c[0] and tt[1] == lut[1] * c[0] and tt[2] == lut[6] * c[0]  # x = threshold kept
assert np.all(tt[3:7] == 0) and tt[7] > 0  # below the threshold: 0
# non-integer threshold -6.5: x in [-6.5, -6) uses LUT[7]
t65 = F.softmax_terms(np.array([-6.25, -6.5, np.nextafter(f32(-6.5), f32(-7))], f32), "sas", -6.5, 2)
assert t65[0] == lut[7] * ((c[2] * f + c[1]) * f + c[0]) and t65[1] > 0 and t65[2] == 0
# scalar f32 reimplementation on random x
xs = rng.uniform(-6, 0, 500).astype(f32)
for p in (1, 2, 3, 4):
    cp = F.sas_coefficients(p)
    got = F.softmax_terms(xs, "sas", -6.0, p)
    for xv, g in zip(xs, got):
        i = math.floor(float(xv))
        fv = f32(xv - f32(i))
        acc = cp[p]
        for j in range(p - 1, -1, -1):
            acc = f32(acc * fv) + cp[j]
        assert g == lut[-i] * acc, (p, xv)
print("sas: hand values (x=-2.25, x=threshold kept, below threshold 0, threshold -6.5), "
      "scalar f32 Horner reimplementation OK")

# ---- fused Horner steps (FORMAT.md does not say whether Horner's steps are fused) -----------------
one = f32(1)
a, b, cc = f32(1 + 2**-23), f32((1 - 2**-23) * 2**-24), f32(1 + 2**-23)
# exact a*b + c = 1 + 2^-23 + 2^-24 - 2^-70: just below the midpoint of 1+2^-23 and 1+2^-22
assert F.fma_f32(a, b, cc) == f32(1 + 2**-23)
assert f32(a * b) + cc == f32(1 + 2**-22)  # unfused: two roundings
assert f32(float(a) * float(b) + float(cc)) == f32(1 + 2**-22)  # naive f64 sum: double rounding
ra = rng.standard_normal(3000).astype(f32)
rb = rng.standard_normal(3000).astype(f32)
rc = np.where(rng.random(3000) < 0.5, -(ra * rb), rng.standard_normal(3000)).astype(f32)
rc = np.where(rng.random(3000) < 0.3, np.nextafter(rc, one), rc).astype(f32)
got = F.fma_f32(ra, rb, rc)
for av, bv, cv, g in zip(ra, rb, rc, got):
    exact = Fraction(float(av)) * Fraction(float(bv)) + Fraction(float(cv))
    assert g == F._round_to_f32(exact), (av, bv, cv)
print("sas: fma_f32 is a single rounding (hand midpoint case, 3000 random triples vs rationals) OK")

# ---- measured relative error of SAS terms vs exp on [threshold, 0] --------------------------------
# x: a uniform grid, uniform random f32 values, every integer and the f32 values next to them.
thr = -6.0
ints = -np.arange(0, 7, dtype=f32)
x = np.concatenate([np.linspace(thr, 0, 1_000_001), rng.uniform(thr, 0, 1_000_000), ints,
                    np.nextafter(ints, f32(1)), np.nextafter(ints, f32(-7))]).astype(f32)
x = x[(x >= thr) & (x <= 0)]
ref = np.exp(x.astype(np.float64))
BOUNDS = {1: 9.0e-2, 2: 8.0e-3, 3: 5.0e-4, 4: 2.6e-5, 5: 1.3e-6, 6: 3.0e-7}
measured = {}
for p, bound in BOUNDS.items():
    errs = []
    for fma in (False, True):
        terms = F.softmax_terms(x, "sas", thr, p, fma=fma)
        errs.append(float(np.max(np.abs(terms - ref) / ref)))
    e64 = float(np.max(np.abs(F.softmax_terms(x.astype(np.float64), "sas", thr, p, np.float64) - ref) / ref))
    assert max(errs) <= bound and e64 <= bound, (p, errs, e64)
    measured[p] = (errs[0], errs[1], e64)
    n_diff = int(np.sum(F.softmax_terms(x, "sas", thr, p, fma=True) != F.softmax_terms(x, "sas", thr, p)))
    print(f"sas: degree {p}: max rel err vs exp on [-6, 0] = {errs[0]:.3e} (f32), {errs[1]:.3e} "
          f"(f32 fused Horner), {e64:.3e} (f64 arithmetic); bound {bound:.1e}; fused and unfused "
          f"differ on {100 * n_diff / x.size:.1f}% of x")
assert all(F.softmax_terms(np.array([-6.0001, -50, -np.inf], f32), "sas", thr, p).tolist() == [0, 0, 0]
           for p in BOUNDS)

# ---- exact mode ----------------------------------------------------------------------------------------
xe = np.concatenate([rng.uniform(-80, 0, 200000), [0.0, -np.inf, -103.0, -200.0]]).astype(f32)
te = F.softmax_terms(xe, "exact")
assert te.dtype == np.float32 and te[-4] == 1 and te[-3] == 0 and te[-1] == 0
assert np.array_equal(te, np.exp(xe.astype(np.float64)).astype(f32))
assert np.all(np.abs(te - np.exp(xe.astype(np.float64))) <= np.spacing(te) / 2 + 1e-45)
# (information only: FORMAT.md's "exp(x) in f32" does not name an exp; numpy's own f32 exp is
# not correctly rounded on every platform)
fin = np.isfinite(xe) & (te > 0)
ulps = np.abs(np.exp(xe[fin]).view(np.int32).astype(np.int64) - te[fin].view(np.int32))
print(f"sas: exact mode = exp rounded to f32 OK (numpy's f32 exp differs on "
      f"{int(np.sum(ulps > 0))} of {int(fin.sum())} inputs, by up to {int(ulps.max())} ulp)")
assert np.array_equal(F.softmax_terms(xe.astype(np.float64), "exact", dtype=np.float64), np.exp(xe.astype(np.float64)))

expect_value_errors((
    lambda: F.softmax_terms(np.array([0.5], f32), "sas"),
    lambda: F.softmax_terms(np.array([-1.0], f32), "sas", 0.0),
    lambda: F.softmax_terms(np.array([-1.0], f32), "taylor"),
))
print("format_sas: PASS")
