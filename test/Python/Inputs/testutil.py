"""Helpers shared by the Python tests (not a test itself: lit skips Inputs/)."""

import math
from fractions import Fraction


def round_away(fr):
    """Scalar reference rounding (FORMAT.md): a Fraction to the nearest
    integer, halfway cases away from zero."""
    fr = Fraction(fr)
    r = math.floor(abs(fr) + Fraction(1, 2))
    return r if fr >= 0 else -r


def expect_value_errors(calls):
    """Asserts that each callable raises ValueError."""
    for call in calls:
        try:
            call()
        except ValueError:
            continue
        raise AssertionError("expected ValueError")


def expect(exc, call):
    """Asserts that `call` raises `exc`; prints "<exc>: <message>" for FileCheck."""
    try:
        call()
    except exc as e:
        print(f"{exc.__name__}: {e}")
        return
    raise AssertionError(f"expected {exc.__name__}")


def sas_term64(x, thr, p):
    """Scalar SAS term in float64 arithmetic with FORMAT.md's f32 LUT and coefficients."""
    from qattn import format as F

    if x < thr:
        return 0.0
    c = [float(v) for v in F.sas_coefficients(p)]
    i = math.floor(x)
    f = x - i
    acc = c[p]
    for j in range(p - 1, -1, -1):
        acc = acc * f + c[j]
    return float(F.sas_lut(-i)[-i]) * acc
