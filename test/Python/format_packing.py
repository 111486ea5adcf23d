# RUN: %python %s
# REQUIRES: numpy
"""Stage-2 code packing (FORMAT.md, "Codes P"): hand-computed bytes and round trips."""

import os
import sys

import numpy as np

from qattn import format as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
from testutil import expect_value_errors  # noqa: E402


def pack1(codes, bits, order):
    """Pack one head's codes for one token; returns the row as a list of ints."""
    c = np.array(codes, np.uint8).reshape(1, 1, 1, -1)
    return F.pack_codes(c, bits, order)[0, 0].tolist()


# ---- hand-computed bytes ---------------------------------------------------------------------
# 4 bits, lsb_first: byte j = code[2j] | code[2j+1] << 4; msb_first: code[2j] << 4 | code[2j+1].
c4 = [0x1, 0x2, 0xA, 0xF, 0x0, 0x7, 0x8, 0x3]
assert pack1(c4, 4, "lsb_first") == [0x21, 0xFA, 0x70, 0x38], pack1(c4, 4, "lsb_first")
assert pack1(c4, 4, "msb_first") == [0x12, 0xAF, 0x07, 0x83], pack1(c4, 4, "msb_first")
# 2 bits, lsb_first: byte j = c[4j] | c[4j+1] << 2 | c[4j+2] << 4 | c[4j+3] << 6.
#   [1,2,3,0] -> 1 + 8 + 48 = 0x39;  [3,3,0,1] -> 3 + 12 + 64 = 0x4F
# msb_first: the first code takes the top two bits.
#   [1,2,3,0] -> 64 + 32 + 12 = 0x6C;  [3,3,0,1] -> 192 + 48 + 1 = 0xF1
c2 = [1, 2, 3, 0, 3, 3, 0, 1]
assert pack1(c2, 2, "lsb_first") == [0x39, 0x4F], pack1(c2, 2, "lsb_first")
assert pack1(c2, 2, "msb_first") == [0x6C, 0xF1], pack1(c2, 2, "msb_first")
# 3 bits, 8 codes fill 3 bytes.
# lsb_first: the 24-bit little-endian number sum(c_i << 3i) = 0x1F58D1 -> bytes D1 58 1F.
# msb_first: bit string 001 010 011 100 101 110 111 000 = 00101001 11001011 10111000.
c3 = [1, 2, 3, 4, 5, 6, 7, 0]
assert pack1(c3, 3, "lsb_first") == [0xD1, 0x58, 0x1F], pack1(c3, 3, "lsb_first")
assert pack1(c3, 3, "msb_first") == [0x29, 0xCB, 0xB8], pack1(c3, 3, "msb_first")
# A 3-bit code straddling bytes 0 and 1 (code 2 = 0b111, the rest 0):
#   lsb_first: bits 6,7 of byte 0 and bit 0 of byte 1;  msb_first: bits 1,0 of byte 0, bit 7 of byte 1.
assert pack1([0, 0, 7, 0, 0, 0, 0, 0], 3, "lsb_first") == [0xC0, 0x01, 0x00]
assert pack1([0, 0, 7, 0, 0, 0, 0, 0], 3, "msb_first") == [0x03, 0x80, 0x00]
assert pack1([0, 0, 4, 0, 0, 0, 0, 0], 3, "lsb_first") == [0x00, 0x01, 0x00]  # code bit 2 -> k=8
assert pack1([0, 0, 4, 0, 0, 0, 0, 0], 3, "msb_first") == [0x02, 0x00, 0x00]  # code bit 2 -> k=6
print("packing: hand-computed bytes for 2/3/4 bits, lsb_first and msb_first OK")

# ---- mixed heads, token-major rows -------------------------------------------------------------
# H=3, bits [4,2,3], d=8: R = 8*(4+2+3)/8 = 9 bytes, offsets 0, 4, 6.
r, offs = F.row_bytes(8, [4, 2, 3])
assert (r, offs) == (9, [0, 4, 6]), (r, offs)
codes = np.zeros((1, 3, 2, 8), np.uint8)
codes[0, 0, 0], codes[0, 1, 0], codes[0, 2, 0] = c4, c2, c3  # token 0
codes[0, 0, 1], codes[0, 1, 1], codes[0, 2, 1] = c4[::-1], c2[::-1], c3[::-1]  # token 1
for order in ("lsb_first", "msb_first"):
    p = F.pack_codes(codes, [4, 2, 3], order)
    assert p.shape == (1, 2, 9) and p.dtype == np.uint8
    assert p[0, 0].tolist() == pack1(c4, 4, order) + pack1(c2, 2, order) + pack1(c3, 3, order)
    assert p[0, 1].tolist() == (
        pack1(c4[::-1], 4, order) + pack1(c2[::-1], 2, order) + pack1(c3[::-1], 3, order)
    )
print("packing: mixed-precision token-major row layout (R=9, offsets 0,4,6) OK")

# ---- generic formulas and round trips on random codes -----------------------------------------
rng = np.random.default_rng(20240601)


def big_int_check(packed, codes, bits, order):
    """Independent check through Python integers: lsb_first rows are little-endian numbers
    sum(c << b*c_index); msb_first rows are big-endian numbers sum(c << b*(d-1-c_index))."""
    b_, h_, n_, d_ = codes.shape
    r_, offs_ = F.row_bytes(d_, bits)
    for bi in range(b_):
        for t in range(n_):
            for h, (b, off) in enumerate(zip(bits, offs_)):
                seg = bytes(packed[bi, t, off : off + d_ * b // 8].tolist())
                cs = [int(v) for v in codes[bi, h, t]]
                if order == "lsb_first":
                    want = sum(c << (b * i) for i, c in enumerate(cs))
                    got = int.from_bytes(seg, "little")
                else:
                    want = sum(c << (b * (d_ - 1 - i)) for i, c in enumerate(cs))
                    got = int.from_bytes(seg, "big")
                assert got == want, (bi, t, h, order)


cases = 0
# (bits attribute, the per-head widths it means for H=3, d)
for bits, hb, d in (
    ([4, 2, 3], [4, 2, 3], 64),
    ([4, 2, 3], [4, 2, 3], 24),
    ([3, 3, 3], [3, 3, 3], 24),
    ([2], [2, 2, 2], 16),  # a single entry is used for every head
    (4, [4, 4, 4], 64),
):
    codes = np.stack([rng.integers(0, 2**b, size=(2, 37, d)) for b in hb], axis=1).astype(np.uint8)
    for order in ("lsb_first", "msb_first"):
        p = F.pack_codes(codes, bits, order)
        assert p.shape == (2, 37, d * sum(hb) // 8), p.shape
        assert np.array_equal(F.unpack_codes(p, 3, d, bits, order), codes)
        assert np.array_equal(F.unpack_codes(p.view(np.int8), 3, d, bits, order), codes)
        big_int_check(p, codes, hb, order)
        cases += 1
        # the byte formulas FORMAT.md gives for 4 and 2 bits, on every head that has them
        r_, offs_ = F.row_bytes(d, hb)
        for h, (b, off) in enumerate(zip(hb, offs_)):
            seg = p[:, :, off : off + d * b // 8].astype(np.int64)
            c = codes[:, h].astype(np.int64)
            if b == 4 and order == "lsb_first":
                assert np.array_equal(seg, c[..., 0::2] | c[..., 1::2] << 4)
            if b == 4 and order == "msb_first":
                assert np.array_equal(seg, c[..., 0::2] << 4 | c[..., 1::2])
            if b == 2 and order == "lsb_first":
                want = c[..., 0::4] | c[..., 1::4] << 2 | c[..., 2::4] << 4 | c[..., 3::4] << 6
                assert np.array_equal(seg, want)
    # the two orders differ on random data (they are different layouts)
    assert not np.array_equal(F.pack_codes(codes, bits, "lsb_first"), F.pack_codes(codes, bits, "msb_first"))
print(f"packing: {cases} random round trips (N=37, d=64/24/16, bits [4,2,3]/[3]*3/[2]/4) OK")

# ---- errors -------------------------------------------------------------------------------------
expect_value_errors((
    lambda: F.pack_codes(np.full((1, 1, 1, 8), 4, np.uint8), 2, "lsb_first"),  # code >= 2^b
    lambda: F.pack_codes(np.zeros((1, 1, 1, 12), np.uint8), 4, "lsb_first"),  # d % 8 != 0
    lambda: F.pack_codes(np.zeros((1, 2, 1, 8), np.uint8), [4, 2, 3], "lsb_first"),  # H mismatch
    lambda: F.pack_codes(np.zeros((1, 1, 1, 8), np.uint8), 5, "lsb_first"),  # bits not 2/3/4
    lambda: F.pack_codes(np.zeros((1, 1, 1, 8), np.uint8), 4, "big"),  # unknown order
    lambda: F.unpack_codes(np.zeros((1, 1, 5), np.uint8), 1, 8, 4, "lsb_first"),  # R mismatch
))
print("packing: invalid inputs rejected OK")
print("format_packing: PASS")
