"""Checks qattn-run's rounding of float64 input to f16 and bf16.

usage: check_rounding.py make DIR
       check_rounding.py check DIR f16|bf16

`make` writes DIR/values.npy: float64 values [4, 8] at the hard spots of both
formats (ties, values just above a tie that rounding through float32 would
turn into ties, subnormals, overflow, signed zero, infinities). `check` reads
DIR/y.npy, the copy that qattn-run's copy_f16 or copy_bf16 function wrote
after converting values.npy to the argument's dtype, and compares its bit
patterns with round-to-nearest-even computed here in exact rational
arithmetic.
"""
import sys
from fractions import Fraction

import numpy as np

FORMATS = {"f16": (5, 10), "bf16": (8, 7)}


def values():
    t = 2.0**-40
    return np.array([
        1 + 2**-11, 1 + 3 * 2**-11, 1 + 2**-11 + t, 65504, 65519, 65520,
        2**-24, 2**-25, 2**-25 + t, 3 * 2**-25, 2**-14 - 2**-25, 1e-10,
        1 + 2**-8, 1 + 3 * 2**-8, 1 + 2**-8 + t, -(1 + 2**-8 + t),
        3.38e38, 3.3961e38, 1e-39, 2**-133, 2**-134, 3 * 2**-134,
        -0.0, 0.0, -1.5, 1 / 3, -2 / 3, 3.14159, np.inf, -np.inf, 1e300,
        -1e-300,
    ], dtype=np.float64).reshape(4, 8)


def decode(bits, exp_bits, man_bits):
    """The exact value of a finite bit pattern (sign bit clear)."""
    field, mantissa = bits >> man_bits, bits & ((1 << man_bits) - 1)
    bias = (1 << (exp_bits - 1)) - 1
    if field == 0:
        return Fraction(mantissa) * Fraction(2)**(1 - bias - man_bits)
    return Fraction(mantissa + (1 << man_bits)) * Fraction(2)**(
        field - bias - man_bits)


def round_bits(x, exp_bits, man_bits):
    """Round-to-nearest-even of float x, by comparing exact distances."""
    sign = (1 << (exp_bits + man_bits)) if np.signbit(x) else 0
    inf = ((1 << exp_bits) - 1) << man_bits
    if np.isinf(x):
        return sign | inf
    target = abs(Fraction(x))
    # The finite patterns are ordered like their values; the one past the
    # largest stands for the first value that would need a larger exponent.
    lo, hi = 0, inf
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if decode(mid, exp_bits, man_bits) <= target:
            lo = mid
        else:
            hi = mid
    lo_value = decode(lo, exp_bits, man_bits)
    hi_value = (decode(hi, exp_bits, man_bits) if hi < inf else
                Fraction(2)**((1 << (exp_bits - 1))))
    below, above = target - lo_value, hi_value - target
    if below < above or (below == above and lo % 2 == 0):
        return sign | lo
    return sign | hi


def main():
    mode, directory = sys.argv[1], sys.argv[2]
    if mode == "make":
        np.save(f"{directory}/values.npy", values())
        return 0
    exp_bits, man_bits = FORMATS[sys.argv[3]]
    got = np.load(f"{directory}/y.npy").view(np.uint16).ravel()
    bad = 0
    for x, bits in zip(values().ravel(), got):
        want = round_bits(x, exp_bits, man_bits)
        if int(bits) != want:
            print(f"{x!r}: got 0x{int(bits):04x}, expected 0x{want:04x}")
            bad += 1
    print(f"{sys.argv[3]} rounding: {bad} mismatches")
    return 1 if bad else 0


sys.exit(main())
