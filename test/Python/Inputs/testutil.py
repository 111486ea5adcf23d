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
