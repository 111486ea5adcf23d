"""Independent NumPy implementation of docs/FORMAT.md.

Written from FORMAT.md alone, as the independent check of qattn's CPU reference lowering
(``qattn-lower-reference``). Every function works on numpy arrays with the shapes FORMAT.md gives:

* ``[B, H, N, d]``  data (row-major, outermost first),
* ``[B, H, NB]`` / ``[B, H, NB, d]`` stage-1 scales (``NB = ceil(N / block)``),
* ``[B, H, G, d]`` stage-2 scales and zero points (``G = ceil(N / group)``),
* ``[B, N, R]`` packed stage-2 codes, token-major, ``R = d * sum(bits) / 8``.

With per-sequence lengths and a paged cache (``paged_kv``, ``varlen_attention``) the batch axis
of the K / V operands becomes the page axis and ``N`` the page size ``P``.

Bit-exact parts (quantization, packing, dequantization, SAS terms for a given ``x``) follow the
spec's f32 / integer arithmetic exactly. The attention functions compute the semantics of
``qattn.attention``; FORMAT.md does not fix the order of the f32 dot products and sums, so only the
float64 version is an exact statement (see ``attention``).

Assumptions made where FORMAT.md is silent are marked ``ASSUMPTION`` below.
"""

import functools
import math
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np

__all__ = [
    "round_half_away",
    "bf16_to_f32",
    "f32_to_bf16",
    "stage1_quantize",
    "stage1_dequantize",
    "smooth_keys",
    "stage2_params",
    "stage2_fit_mse",
    "stage2_codes",
    "stage2_quantize",
    "head_bits",
    "stage2_dequantize",
    "pack_codes",
    "unpack_codes",
    "row_bytes",
    "buffer_quantize",
    "dequantized_kv",
    "sas_nodes",
    "sas_coefficients",
    "sas_lut",
    "fma_f32",
    "softmax_terms",
    "attention_weights",
    "attention",
    "cached_tokens",
    "pages_read",
    "keys_seen",
    "paged_kv",
    "varlen_attention",
]

F32 = np.float32


# --------------------------------------------------------------------------------------------
# Rounding and small helpers
# --------------------------------------------------------------------------------------------


def round_half_away(x):
    """Round to the nearest integer, halfway cases away from zero (C ``roundf``/``round``).

    Exact for every float (no ``floor(x + 0.5)`` double rounding); keeps the float dtype.
    Integer input is returned unchanged (as a copy).
    """
    x = np.asarray(x)
    if not np.issubdtype(x.dtype, np.floating):
        return x.copy()
    with np.errstate(invalid="ignore"):  # inf - inf for infinite x: frac NaN, x kept
        t = np.trunc(x)
        frac = x - t  # exact: |frac| < 1 and shares x's ulp
        step = np.where(np.abs(frac) >= 0.5, np.sign(x), 0).astype(x.dtype)
    return t + step


def _round_div(a, b):
    """``round(a / b)`` (halfway away from zero) for integer ``a`` and integer ``b > 0``, exactly."""
    a = np.asarray(a, np.int64)
    b = np.asarray(b, np.int64)
    return np.sign(a) * ((2 * np.abs(a) + b) // (2 * b))


def _ceil_div(a, b):
    """``ceil(a / b)`` for integers, ``b > 0``, exactly."""
    return -((-np.asarray(a, np.int64)) // np.asarray(b, np.int64))


def bf16_to_f32(u16):
    """bf16 bit patterns (uint16 array) to float32 (exact). numpy has no bf16 dtype."""
    u16 = np.asarray(u16, np.uint16)
    return (u16.astype(np.uint32) << 16).view(F32)


def f32_to_bf16(x):
    """float32 values to bf16 bit patterns (uint16), rounded to nearest even; NaN stays NaN."""
    u = np.asarray(x, F32).view(np.uint32).astype(np.uint64)
    rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16  # round to nearest, ties to even
    nan = np.isnan(np.asarray(x, F32))
    return np.where(nan, (u >> 16) | 0x40, rounded).astype(np.uint16)


def _as_f32(x):
    """Input conversion of FORMAT.md: f32 stays, f16 is widened exactly.

    ASSUMPTION: float64 input (not listed in FORMAT.md) is rounded to f32 (nearest even).
    bf16 input must be converted with ``bf16_to_f32`` first.
    """
    x = np.asarray(x)
    if not np.issubdtype(x.dtype, np.floating):
        raise TypeError(f"expected a float array, got {x.dtype}")
    return x.astype(F32)


def _check_4d(name, a):
    if a.ndim != 4:
        raise ValueError(f"{name}: expected [B, H, N, d], got shape {a.shape}")


def _starts(n, size):
    """First token of every block/group of ``size`` tokens (last one may be short)."""
    if size <= 0:
        raise ValueError("block/group size must be positive")
    return np.arange(0, n, size)


def _per_token(per_block, size, n):
    """Broadcast ``[B, H, NB, ...]`` per-block values back to ``[B, H, n, ...]`` tokens."""
    return np.repeat(per_block, size, axis=2)[:, :, :n]


# --------------------------------------------------------------------------------------------
# Stage 1: symmetric int8
# --------------------------------------------------------------------------------------------

_SCALE_DTYPES = {"f32": np.float32, "f16": np.float16}


def stage1_quantize(x, block, scale_dtype="f32", granularity="block"):
    """Stage-1 quantization (``#qattn.stage1<block, scale, granularity>``).

    x: ``[B, H, N, d]`` float (converted to f32 first).
    Returns ``(q8, s1)``: ``q8`` int8 ``[B, H, N, d]`` in ``[-127, 127]``; ``s1`` of
    ``scale_dtype`` ('f32' -> float32, 'f16' -> float16), ``[B, H, NB]`` for
    ``granularity='block'`` or ``[B, H, NB, d]`` for ``'channel'``.

    Per scale's element set E: ``m = max|X|`` (f32), ``s1 = m / 127`` (f32 true division), stored
    as the scale type (f16: nearest even); ``s`` = stored value read back as f32;
    ``q8 = 0`` if ``s == 0`` else ``clamp(round(X / s), -127, 127)`` with ``X / s`` an f32 division.

    Follows the text literally where it is silent: an f16 scale that overflows to inf gives
    ``q8 = 0`` for finite X; an f16 scale that underflows to 0 gives ``q8 = 0``.
    """
    if scale_dtype not in _SCALE_DTYPES:
        raise ValueError(f"scale_dtype must be 'f32' or 'f16', got {scale_dtype!r}")
    if granularity not in ("block", "channel"):
        raise ValueError(f"granularity must be 'block' or 'channel', got {granularity!r}")
    x = _as_f32(x)
    _check_4d("x", x)
    n = x.shape[2]
    m = np.maximum.reduceat(np.abs(x), _starts(n, block), axis=2)  # [B, H, NB, d]
    if granularity == "block":
        m = m.max(axis=3)  # [B, H, NB]
    with np.errstate(over="ignore"):  # an f16 scale above 65504 becomes inf (FORMAT.md)
        s1 = (m / F32(127)).astype(_SCALE_DTYPES[scale_dtype])
    q8 = _quantize_symmetric(x, _scale_per_element(s1, block, n))
    return q8, s1


def _scale_per_element(s1, block, n):
    """Stage-1 scales read back as f32 and broadcast to ``[B, H, n, d]`` (or ``[B, H, n, 1]``)."""
    s = np.asarray(s1).astype(F32)
    if s.ndim == 3:
        return _per_token(s, block, n)[..., None]
    if s.ndim == 4:
        return _per_token(s, block, n)
    raise ValueError(f"stage-1 scales must be [B, H, NB] or [B, H, NB, d], got {s.shape}")


def _quantize_symmetric(x, s):
    """``q8 = 0`` if ``s == 0`` else ``clamp(round(x / s), -127, 127)``, all in f32."""
    with np.errstate(divide="ignore", invalid="ignore"):
        r = x / s  # f32 / f32: IEEE true division
    q = np.clip(round_half_away(r), -127, 127)
    q = np.where(s == 0, F32(0), q)
    return q.astype(np.int8)


def stage1_dequantize(q8, s1, block, granularity=None):
    """``X' = f32(q8) * s`` (one f32 multiplication). Returns float32 ``[B, H, N, d]``.

    ``granularity`` ('block' or 'channel') is checked against ``s1``'s rank when given.
    """
    q8 = np.asarray(q8)
    _check_4d("q8", q8)
    s1 = np.asarray(s1)
    expected = {"block": 3, "channel": 4}
    if granularity is not None and expected.get(granularity) != s1.ndim:
        raise ValueError(f"granularity {granularity!r} does not match scales of shape {s1.shape}")
    with np.errstate(invalid="ignore"):  # 0 * inf = NaN for an overflowed f16 scale
        return q8.astype(F32) * _scale_per_element(s1, block, q8.shape[2])


# --------------------------------------------------------------------------------------------
# Key smoothing
# --------------------------------------------------------------------------------------------


def smooth_keys(k, calibration=None, mean=None):
    """``qattn.smooth_keys``: ``(f32(K) - mean, mean)``, both float32.

    k: ``[B, H, N, d]`` float (to f32). Give exactly one of
    * ``calibration = (start, end)``: ``mean[b, h, c]`` is the f32 sum of ``K[b, h, t, c]`` over
      ``t = start .. end - 1`` in token order (each addition rounded to f32), divided by
      ``f32(end - start)`` (one f32 true division);
    * ``mean``: ``[B, H, d]`` float32, used as given.
    The subtraction is one f32 operation per element.
    """
    k = _as_f32(k)
    _check_4d("k", k)
    if (calibration is None) == (mean is None):
        raise ValueError("give exactly one of calibration and mean")
    if mean is None:
        start, end = (int(v) for v in calibration)
        if not 0 <= start < end <= k.shape[2]:
            raise ValueError(f"calibration range [{start}, {end}) outside the {k.shape[2]} tokens")
        acc = np.zeros(k.shape[:2] + k.shape[3:], F32)
        for t in range(start, end):  # sequential f32 sum: the order is part of the format
            acc = (acc + k[:, :, t]).astype(F32)
        mean = (acc / F32(end - start)).astype(F32)
    else:
        mean = np.asarray(mean)
        if mean.dtype != F32 or mean.shape != k.shape[:2] + k.shape[3:]:
            raise ValueError(f"mean must be float32 [B, H, d], got {mean.dtype} {mean.shape}")
    return (k - mean[:, :, None, :]).astype(F32), mean


# --------------------------------------------------------------------------------------------
# Stage 2: asymmetric b-bit on top of int8
# --------------------------------------------------------------------------------------------


def head_bits(bits, h):
    """Normalize ``bits`` (int, ``[b]`` or per-head list) to a list of ``h`` ints in {2, 3, 4}."""
    if np.ndim(bits) == 0:
        hb = [int(bits)] * h
    else:
        hb = [int(b) for b in bits]
        if len(hb) == 1:
            hb = hb * h
    if len(hb) != h:
        raise ValueError(f"bits lists {len(hb)} heads, data has {h}")
    for b in hb:
        if b not in (2, 3, 4):
            raise ValueError(f"bit width must be 2, 3 or 4, got {b}")
    return hb


def row_bytes(d, bits, h=None):
    """``R = d * (b_0 + ... + b_{H-1}) / 8`` and the per-head byte offsets ``off_h``."""
    hb = head_bits(bits, h if h is not None else (1 if np.ndim(bits) == 0 else len(bits)))
    if d % 8:
        raise ValueError(f"d must be a multiple of 8, got {d}")
    offs = [d * sum(hb[:i]) // 8 for i in range(len(hb))]
    return d * sum(hb) // 8, offs


def stage2_params(q8, bits, group, anchor="zero"):
    """Per (batch, head, group, channel) parameters ``(s2, z2, lo, hi)`` as int64 ``[B, H, G, d]``.

    mn, mx = min, max of q8 over the group's tokens;
    s2 = max(1, ceil((mx - mn) / (2^b - 1)));  z2 = round(-mn / s2);
    lo = max(0, z2 + ceil(-128 / s2));  hi = min(2^b - 1, z2 + floor(127 / s2)).
    With ``anchor='min'``: z2 = mn, lo = 0, hi = min(2^b - 1, floor((127 - z2) / s2)).
    All integer arithmetic.
    """
    q8 = np.asarray(q8)
    _check_4d("q8", q8)
    if not np.issubdtype(q8.dtype, np.integer):
        raise TypeError(f"q8 must be an integer array, got {q8.dtype}")
    q = q8.astype(np.int64)
    if q.size and (q.min() < -127 or q.max() > 127):
        # ASSUMPTION: stage-2 input is stage-1 data, which never holds -128 (FORMAT.md stage 1).
        # With -128, z2 = round(128 / 1) = 128 would not fit the int8 Z2 tensor.
        raise ValueError("stage-2 input must lie in [-127, 127] (stage-1 data)")
    hb = head_bits(bits, q.shape[1])
    starts = _starts(q.shape[2], group)
    mn = np.minimum.reduceat(q, starts, axis=2)
    mx = np.maximum.reduceat(q, starts, axis=2)
    levels = (2 ** np.array(hb, np.int64) - 1).reshape(1, -1, 1, 1)
    s2 = np.maximum(1, _ceil_div(mx - mn, levels))
    z2 = _stage2_zero(mn, s2, anchor)
    lo, hi = _stage2_clamp(s2, z2, levels, anchor)
    return s2, z2, lo, hi


def _check_anchor(anchor):
    if anchor not in ("zero", "min"):
        raise ValueError(f"anchor must be 'zero' or 'min', got {anchor!r}")


def _stage2_zero(mn, s2, anchor):
    """``z2 = round(-mn / s2)``, or ``mn`` itself with ``anchor='min'``."""
    _check_anchor(anchor)
    return np.broadcast_to(mn, np.broadcast(mn, s2).shape).copy() if anchor == "min" \
        else _round_div(-mn, s2)


def _stage2_clamp(s2, z2, levels, anchor="zero"):
    """``lo = max(0, z2 + ceil(-128 / s2))``, ``hi = min(2^b - 1, z2 + floor(127 / s2))``;
    with ``anchor='min'``: ``lo = 0``, ``hi = min(2^b - 1, floor((127 - z2) / s2))``."""
    if anchor == "min":
        return np.zeros_like(z2), np.minimum(levels, (127 - z2) // s2)
    return np.maximum(0, z2 - (128 // s2)), np.minimum(levels, z2 + 127 // s2)


def _stage2_encode(q, s2, z2, lo, hi, anchor):
    """Codes of int64 ``q`` with per-element parameters (FORMAT.md stage 2)."""
    raw = _round_div(q - z2, s2) if anchor == "min" else _round_div(q, s2) + z2
    return np.minimum(np.maximum(raw, lo), hi)


def _stage2_decode(code, s2, z2, anchor):
    return z2 + code * s2 if anchor == "min" else (code - z2) * s2


# The candidates of ``fit = mse`` in FORMAT.md's order: scale offsets outer, zero offsets inner.
MSE_SCALE_OFFSETS = (0, 1, 2)
MSE_ZERO_OFFSETS = (0, -1, 1)


def stage2_fit_mse(q8, bits, group, anchor="zero"):
    """``fit = mse`` parameters ``(s2, z2, lo, hi)`` as int64 ``[B, H, G, d]`` (FORMAT.md).

    Starting from the min/max fit, tries ``s = s2_minmax + ds`` (ds in 0, 1, 2) and
    ``z = round(-mn / s) + dz`` (dz in 0, -1, +1), in that order; a candidate needs
    ``-127 <= z <= 127`` and ``lo <= hi``; it replaces the best so far only when its squared
    error ``sum over the group's tokens of ((code - z) * s - q8)^2`` is strictly smaller.
    With ``anchor='min'`` the zero candidates are ``z = mn + dz`` and the error uses that
    anchor's codes and dequantization.
    """
    s0, z0, lo0, hi0 = stage2_params(q8, bits, group, anchor)
    q = np.asarray(q8).astype(np.int64)
    n = q.shape[2]
    starts = _starts(n, group)
    mn = np.minimum.reduceat(q, starts, axis=2)
    levels = (2 ** np.array(head_bits(bits, q.shape[1]), np.int64) - 1).reshape(1, -1, 1, 1)

    def sse(s2, z2, lo, hi):
        t = lambda a: _per_token(a, group, n)  # noqa: E731
        code = _stage2_encode(q, t(s2), t(z2), t(lo), t(hi), anchor)
        return np.add.reduceat((_stage2_decode(code, t(s2), t(z2), anchor) - q) ** 2, starts,
                               axis=2)

    best = [s0, z0, lo0, hi0]
    best_err = sse(*best)
    for ds in MSE_SCALE_OFFSETS:
        s = s0 + ds
        z_base = _stage2_zero(mn, s, anchor)
        for dz in MSE_ZERO_OFFSETS:
            if ds == 0 and dz == 0:
                continue
            z = z_base + dz
            lo, hi = _stage2_clamp(s, z, levels, anchor)
            valid = (z >= -127) & (z <= 127) & (lo <= hi)
            err = sse(s, z, lo, hi)
            better = valid & (err < best_err)
            for i, v in enumerate((s, z, lo, hi)):
                best[i] = np.where(better, v, best[i])
            best_err = np.where(better, err, best_err)
    return tuple(best)


def stage2_codes(q8, bits, group, fit="minmax", anchor="zero"):
    """Stage-2 codes, unpacked. Returns ``(codes uint8 [B,H,N,d], s2 uint8 [B,H,G,d], z2 int8)``.

    ``q = clamp(round(q8 / s2) + z2, lo, hi)`` with the exact integer ``round``; ``fit`` picks
    the encoder of ``s2``/``z2`` (``'minmax'`` or ``'mse'``, see ``stage2_fit_mse``); ``anchor``
    where the grid starts (``'zero'``: ``clamp(round(q8 / s2) + z2, lo, hi)``; ``'min'``:
    ``clamp(round((q8 - z2) / s2), 0, hi)``).
    """
    q8 = np.asarray(q8)
    if fit == "minmax":
        s2, z2, lo, hi = stage2_params(q8, bits, group, anchor)
    elif fit == "mse":
        s2, z2, lo, hi = stage2_fit_mse(q8, bits, group, anchor)
    else:
        raise ValueError(f"fit must be 'minmax' or 'mse', got {fit!r}")
    n = q8.shape[2]

    def tok(a):
        return _per_token(a, group, n)

    q = _stage2_encode(q8.astype(np.int64), tok(s2), tok(z2), tok(lo), tok(hi), anchor)
    return q.astype(np.uint8), s2.astype(np.uint8), z2.astype(np.int8)


def stage2_quantize(q8, bits, group, order="lsb_first", fit="minmax", anchor="zero"):
    """Stage-2 quantization (``#qattn.stage2<bits, group, order>``) of stage-1 data ``q8``.

    Returns ``(packed uint8 [B, N, R], s2 uint8 [B, H, G, d], z2 int8 [B, H, G, d])``.
    FORMAT.md stores P and S2 in int8 tensors with unsigned content; here they are uint8 (use
    ``.view(np.int8)`` for the int8 tensor's bytes).
    """
    codes, s2, z2 = stage2_codes(q8, bits, group, fit, anchor)
    return pack_codes(codes, bits, order), s2, z2


def _bit_positions(b, order):
    """For string bit ``c*b + i``: which bit of code ``c`` it holds, and numpy's ``bitorder``.

    lsb_first: string bit k = c*b + i holds code bit i, stored at byte k/8, bit k%8 (LSB = 0),
    i.e. numpy ``bitorder='little'``.  msb_first: it holds code bit b-1-i, stored at byte k/8,
    bit 7 - k%8, i.e. ``bitorder='big'``.
    """
    i = np.arange(b)
    if order == "lsb_first":
        return i, "little"
    if order == "msb_first":
        return b - 1 - i, "big"
    raise ValueError(f"order must be 'lsb_first' or 'msb_first', got {order!r}")


def pack_codes(codes, bits, order="lsb_first"):
    """Pack codes ``[B, H, N, d]`` (values < 2^b_h) into token-major rows ``[B, N, R]`` uint8.

    Head h occupies bytes ``[off_h, off_h + d*b_h/8)`` of each row; inside them, code c occupies
    bits ``c*b .. c*b + b - 1`` of the head's bit string (see ``_bit_positions``).
    """
    codes = np.asarray(codes)
    _check_4d("codes", codes)
    nb, h, n, d = codes.shape
    hb = head_bits(bits, h)
    row_bytes(d, hb)  # checks d % 8
    parts = []
    for head, b in enumerate(hb):
        c = codes[:, head].astype(np.int64)  # [B, N, d]
        if c.size and (c.min() < 0 or c.max() >= 2**b):
            raise ValueError(f"head {head}: codes out of range for {b} bits")
        which, bitorder = _bit_positions(b, order)
        string = ((c[..., None] >> which) & 1).astype(np.uint8).reshape(nb, n, d * b)
        parts.append(np.packbits(string, axis=-1, bitorder=bitorder))
    return np.concatenate(parts, axis=-1)


def unpack_codes(packed, H, d, bits, order="lsb_first"):
    """Inverse of ``pack_codes``: ``[B, N, R]`` bytes (uint8 or int8) to codes uint8 ``[B,H,N,d]``."""
    packed = np.asarray(packed)
    if packed.ndim != 3:
        raise ValueError(f"packed: expected [B, N, R], got {packed.shape}")
    packed = packed.view(np.uint8) if packed.dtype == np.int8 else packed.astype(np.uint8)
    hb = head_bits(bits, H)
    r, offs = row_bytes(d, hb)
    nb, n, rr = packed.shape
    if rr != r:
        raise ValueError(f"row has {rr} bytes, expected R = {r}")
    out = np.empty((nb, H, n, d), np.uint8)
    for head, (b, off) in enumerate(zip(hb, offs)):
        which, bitorder = _bit_positions(b, order)
        seg = packed[:, :, off : off + d * b // 8]
        string = np.unpackbits(seg, axis=-1, bitorder=bitorder).reshape(nb, n, d, b)
        out[:, head] = (string.astype(np.int64) << which).sum(axis=-1)
    return out


def stage2_dequantize(packed, s2, z2, H, d, bits, group, order="lsb_first", anchor="zero"):
    """``q8' = (q - z2) * s2`` (``anchor='min'``: ``z2 + q * s2``) in integers. Returns int8
    ``[B, H, N, d]`` (always in [-128, 127])."""
    _check_anchor(anchor)
    codes = unpack_codes(packed, H, d, bits, order).astype(np.int64)
    n = codes.shape[2]
    s2 = np.asarray(s2)
    s2 = (s2.view(np.uint8) if s2.dtype == np.int8 else s2).astype(np.int64)  # unsigned content
    z2 = np.asarray(z2).astype(np.int64)
    q = _stage2_decode(codes, _per_token(s2, group, n), _per_token(z2, group, n), anchor)
    if q.size and (q.min() < -128 or q.max() > 127):
        raise ValueError("stage-2 dequantization left int8 (inconsistent codes/scales/zeros)")
    return q.astype(np.int8)


# --------------------------------------------------------------------------------------------
# Decode buffer and dequantized K / V
# --------------------------------------------------------------------------------------------


def buffer_quantize(x, scale):
    """Decode-buffer quantization with a fixed f32 scale per (batch, head).

    x: ``[B, H, Nb, d]`` float (to f32), scale: ``[B, H]`` (to f32).
    ``q8 = clamp(round(x / s), -127, 127)``, 0 where ``s == 0``. Outliers are clamped.
    """
    x = _as_f32(x)
    _check_4d("x", x)
    s = _as_f32(scale)
    if s.shape != x.shape[:2]:
        raise ValueError(f"scale must be [B, H] = {x.shape[:2]}, got {s.shape}")
    return _quantize_symmetric(x, s[:, :, None, None])


def dequantized_kv(
    s1,
    block,
    granularity=None,
    *,
    q8=None,
    packed=None,
    s2=None,
    z2=None,
    bits=None,
    group=None,
    order="lsb_first",
    buffer=None,
    buffer_scale=None,
    anchor="zero",
):
    """Dequantized K or V (float32 ``[B, Hkv, Nk + Nb, d]``) as ``qattn.attention`` sees them.

    Cache operand, one of:
      * stage 2: ``packed [B, Nk, R]``, ``s2``, ``z2 [B, Hkv, G, d]``, ``bits``, ``group``,
        ``order`` -> ``q8' = (q - z2) * s2`` (integers), then stage 1 below;
      * stage 1 only: ``q8 [B, Hkv, Nk, d]`` int8.
    Then ``f32(q8') * s`` with the stage-1 scales ``s1`` (``[B, Hkv, NB]`` or ``[B, Hkv, NB, d]``,
    block ``block``).
    Optional decode buffer ``buffer [B, Hkv, Nb, d]`` int8 with ``buffer_scale [B, Hkv]`` f32:
    ``f32(q8) * s``, appended after the cache's tokens.
    """
    s1 = np.asarray(s1)
    if packed is not None:
        if q8 is not None:
            raise ValueError("give either packed (stage 2) or q8 (stage 1), not both")
        if s2 is None or z2 is None or bits is None or group is None:
            raise ValueError("stage-2 operand needs s2, z2, bits and group")
        h, d = np.shape(s2)[1], np.shape(s2)[3]
        q8 = stage2_dequantize(packed, s2, z2, h, d, bits, group, order, anchor)
    elif q8 is None:
        raise ValueError("give packed (stage 2) or q8 (stage 1)")
    x = stage1_dequantize(q8, s1, block, granularity)
    if buffer is None:
        return x
    buffer = np.asarray(buffer)
    _check_4d("buffer", buffer)
    if buffer_scale is None:
        raise ValueError("a decode buffer needs its [B, H] scale")
    bs = _as_f32(buffer_scale)
    xb = buffer.astype(F32) * bs[:, :, None, None]
    return np.concatenate([x, xb], axis=2)


# --------------------------------------------------------------------------------------------
# Softmax terms: exact and SAS
# --------------------------------------------------------------------------------------------

_DIGITS = 60
_PI = Decimal(
    "3.14159265358979323846264338327950288419716939937510582097494459230781640628620899863"
)


def _dec_cos(x):
    """cos of a Decimal, Taylor series at the current context precision (|x| <= pi here)."""
    term, total, k = Decimal(1), Decimal(1), 0
    x2 = x * x
    while True:
        k += 2
        term = -term * x2 / (k * (k - 1))
        if abs(term) < Decimal(10) ** (-(_DIGITS + 5)):
            return total
        total += term


def _round_to_f32(v):
    """Round an exact value (Fraction) to the nearest f32, ties to even. Correct rounding."""
    v = Fraction(v)
    f = np.float32(float(v))  # within one f32 ulp of the correct result
    cands = [np.nextafter(f, F32(-np.inf)), f, np.nextafter(f, F32(np.inf))]

    def key(c):
        return (abs(Fraction(float(c)) - v), int(np.array(c, F32).view(np.uint32)) & 1)

    return min(cands, key=key)


def sas_nodes(degree):
    """The ``p + 1`` Chebyshev nodes of [0, 1]: ``t_k = (1 + cos((2k+1) pi / (2p+2))) / 2``."""
    p = int(degree)
    return np.array([(1 + math.cos((2 * k + 1) * math.pi / (2 * p + 2))) / 2 for k in range(p + 1)])


@functools.lru_cache(maxsize=None)
def _sas_coefficients_exact(degree):
    """Coefficients (ascending powers) of the interpolant of exp at the Chebyshev nodes of [0, 1],
    as Fractions, from 60-digit nodes and exp values (error ~1e-55, far below f32 rounding)."""
    p = int(degree)
    if p < 1:
        raise ValueError("SAS degree must be >= 1")
    with localcontext() as ctx:
        ctx.prec = _DIGITS
        nodes = [(1 + _dec_cos((2 * k + 1) * _PI / (2 * p + 2))) / 2 for k in range(p + 1)]
        values = [t.exp() for t in nodes]
    # Solve the Vandermonde system exactly in rationals (Gauss-Jordan).
    rows = [[Fraction(t) ** j for j in range(p + 1)] + [Fraction(y)] for t, y in zip(nodes, values)]
    n = p + 1
    for col in range(n):
        piv = max(range(col, n), key=lambda r: abs(rows[r][col]))
        rows[col], rows[piv] = rows[piv], rows[col]
        for r in range(n):
            if r != col and rows[r][col] != 0:
                f = rows[r][col] / rows[col][col]
                rows[r] = [a - f * b for a, b in zip(rows[r], rows[col])]
    return tuple(rows[i][n] / rows[i][i] for i in range(n))


def sas_coefficients(degree):
    """f32 coefficients ``[c_0, ..., c_p]`` (ascending powers) of the degree-``p`` polynomial
    interpolating exp at the Chebyshev nodes of [0, 1], each correctly rounded to f32.

    ASSUMPTION: "coefficients rounded to f32" means the exact interpolant's coefficients rounded
    to nearest (even); computing them in float64 and rounding gives the same values for
    degrees 1..6 (checked by the tests).
    """
    return np.array([_round_to_f32(c) for c in _sas_coefficients_exact(degree)], F32)


@functools.lru_cache(maxsize=None)
def _sas_lut_tuple(n):
    with localcontext() as ctx:
        ctx.prec = _DIGITS
        return tuple(_round_to_f32(Decimal(-k).exp()) for k in range(n + 1))


def sas_lut(n):
    """``LUT[k] = exp(-k)`` correctly rounded to f32, for ``k = 0 .. n``."""
    return np.array(_sas_lut_tuple(int(n)), F32)


def fma_f32(a, b, c):
    """Fused multiply-add in f32: ``a * b + c`` with a single rounding (elementwise, exact).

    a*b is exact in f64; the f64 sum's error is recovered with TwoSum and only matters when the
    f64 sum lands exactly on an f32 rounding boundary (a midpoint), where it is nudged.
    """
    a, b, c = (np.asarray(t, F32).astype(np.float64) for t in (a, b, c))
    p = a * b
    s = p + c
    bb = s - p
    err = (p - (s - bb)) + (c - bb)
    r = s.astype(F32)
    r64 = r.astype(np.float64)
    other = np.nextafter(r, np.where(s > r64, F32(np.inf), F32(-np.inf)).astype(F32))
    midpoint = (s != r64) & ((s - r64) == (other.astype(np.float64) - s))
    nudged = np.nextafter(s, np.where(err > 0, np.inf, -np.inf))
    fix = midpoint & (err != 0)
    return np.where(fix, nudged.astype(F32), r).astype(F32)


def softmax_terms(x, mode="exact", threshold=-6.0, degree=2, dtype=np.float32, fma=False):
    """Softmax terms for ``x = s - rowmax <= 0`` (``-inf`` allowed for masked entries).

    mode='exact': ``exp(x)``. In f32 this is exp computed in float64 and rounded to f32, i.e.
      correctly rounded except in (astronomically rare) double-rounding cases.
      ASSUMPTION: FORMAT.md says "exp(x) in f32" without fixing the exp implementation.
    mode='sas': ``0`` if ``x < threshold``; else with ``i = floor(x)``, ``f = x - i``:
      ``LUT[-i] * P(f)``, ``P`` evaluated by Horner's rule ``(..(c_p f + c_{p-1}) f + ..) + c_0``.
      ``dtype=np.float32`` (the spec): every operation rounded to f32; ``fma=True`` fuses each
      Horner step (one rounding per step) instead of multiply-then-add.
      ``dtype=np.float64``: same f32 coefficients and LUT, arithmetic in float64.
      ASSUMPTION: the comparison ``x < threshold`` uses ``threshold`` rounded to ``dtype``.
    """
    dtype = np.dtype(dtype).type
    x = np.asarray(x, dtype)
    if np.any(x > 0):
        raise ValueError("softmax terms are defined for x <= 0 (x = s - row max)")
    if mode == "exact":
        if dtype is np.float32:
            return np.exp(x.astype(np.float64)).astype(F32)
        return np.exp(x)
    if mode != "sas":
        raise ValueError(f"mode must be 'exact' or 'sas', got {mode!r}")
    thr = dtype(threshold)
    if not thr < 0:
        raise ValueError("SAS threshold must be negative")
    keep = x >= thr  # False for -inf and NaN
    xs = np.where(keep, x, dtype(0))
    i = np.floor(xs)
    f = xs - i  # exact
    lut = sas_lut(int(-math.floor(float(thr)))).astype(dtype)
    c = sas_coefficients(degree).astype(dtype)
    p = np.full_like(f, c[-1])
    for cj in c[-2::-1]:
        if fma and dtype is np.float32:
            p = fma_f32(p, f, np.full_like(f, cj))
        else:
            p = p * f + cj
    terms = lut[(-i).astype(np.int64)] * p
    return np.where(keep, terms, dtype(0)).astype(dtype)


# --------------------------------------------------------------------------------------------
# Attention
# --------------------------------------------------------------------------------------------


def attention_weights(
    q, k, scale, causal, softmax="exact", threshold=-6.0, degree=2, dtype=np.float64, fma=False
):
    """Softmax probabilities ``[B, Hq, Nq, Nk]`` of ``qattn.attention``.

    q: ``[B, Hq, Nq, d]`` (dequantized), k: ``[B, Hkv, Nk, d]`` (dequantized, cache and decode
    buffer tokens together, so ``Nk`` here is FORMAT.md's ``Nk + Nb``). Query head h uses KV head
    ``h // (Hq // Hkv)``. Causal: ``j > i + (Nk - Nq)`` is masked (the last query sees every key).
    Scores ``scale * (Q K^T)``, then ``x = s - rowmax``, terms per ``softmax_terms``, divided by
    their row sum. In ``dtype`` (float64: exact semantics; float32: mirrors the f32 spec up to the
    unspecified order of the dot products and sums).
    """
    dtype = np.dtype(dtype).type
    q = np.asarray(q, dtype)
    k = np.asarray(k, dtype)
    _check_4d("q", q)
    _check_4d("k", k)
    b, hq, nq, d = q.shape
    hkv, nk = k.shape[1], k.shape[2]
    if k.shape[0] != b or k.shape[3] != d:
        raise ValueError(f"q {q.shape} and k {k.shape} disagree")
    if hkv == 0 or hq % hkv:
        raise ValueError(f"Hq = {hq} is not a multiple of Hkv = {hkv}")
    kk = np.repeat(k, hq // hkv, axis=1)  # kk[:, h] = k[:, h // (hq // hkv)]
    s = dtype(scale) * np.matmul(q, np.swapaxes(kk, -1, -2))
    if causal:
        if nq > nk:
            # ASSUMPTION: FORMAT.md leaves fully masked rows (i < Nq - Nk) undefined; reject.
            raise ValueError(f"causal attention with Nq = {nq} > Nk = {nk} has fully masked rows")
        i = np.arange(nq)[:, None]
        j = np.arange(nk)[None, :]
        s = np.where(j > i + (nk - nq), dtype(-np.inf), s)
    x = s - s.max(axis=-1, keepdims=True)
    t = softmax_terms(x, softmax, threshold, degree, dtype, fma)
    return t / t.sum(axis=-1, keepdims=True)


def attention(
    q, k, v, scale, causal, softmax="exact", threshold=-6.0, degree=2, dtype=np.float64, fma=False
):
    """``O = softmax(scale * Q K^T + M) V`` on dequantized operands, ``[B, Hq, Nq, d]`` in ``dtype``.

    q ``[B, Hq, Nq, d]``, k and v ``[B, Hkv, Nk, d]`` (use ``stage1_dequantize`` /
    ``dequantized_kv`` for quantized operands). See ``attention_weights`` for GQA, the mask and
    the softmax options. ``dtype=np.float64`` is the reference; ``np.float32`` follows the f32
    spec but FORMAT.md does not fix the f32 summation order, so it agrees only to rounding.
    """
    dtype = np.dtype(dtype).type
    p = attention_weights(q, k, scale, causal, softmax, threshold, degree, dtype, fma)
    v = np.asarray(v, dtype)
    _check_4d("v", v)
    hq, hkv = p.shape[1], v.shape[1]
    if v.shape[2] != p.shape[3] or hkv == 0 or hq % hkv:
        raise ValueError(f"v {v.shape} does not match the weights {p.shape}")
    return np.matmul(p, np.repeat(v, hq // hkv, axis=1))


# --------------------------------------------------------------------------------------------
# Per-sequence lengths and the paged cache
# --------------------------------------------------------------------------------------------


def _kv_lens(kv_lens, batch):
    """``kv_lens`` as a list of ``batch`` Python ints >= 0."""
    lens = np.asarray(kv_lens)
    if lens.ndim != 1 or not np.issubdtype(lens.dtype, np.integer):
        raise ValueError(f"kv_lens must be a 1-D integer array [B], got {lens.dtype} {lens.shape}")
    if lens.shape[0] != batch:
        raise ValueError(f"kv_lens has {lens.shape[0]} entries, the batch has {batch} sequences")
    for b, n in enumerate(lens.tolist()):
        if n < 0:
            raise ValueError(f"kv_lens[{b}] = {n} is negative")
    return [int(n) for n in lens.tolist()]


def cached_tokens(kv_len, nb=None):
    """``C_b``, the keys of a sequence of ``kv_len`` keys that live in the cache (pages).

    Without a decode buffer (``nb=None``) every key: ``C_b = L_b``. With a buffer of ``nb`` rows the
    last ``L_b mod nb`` keys are buffer rows (a full buffer has been flushed):
    ``C_b = L_b - (L_b mod nb)``. Works elementwise on arrays.
    """
    lens = np.asarray(kv_len, np.int64)
    if nb is None:
        return lens
    if int(nb) <= 0:
        raise ValueError(f"decode buffer size must be positive, got {nb}")
    return lens - lens % int(nb)


def pages_read(kv_len, page, nb=None):
    """How many ``page_table`` entries of a sequence are read: ``ceil(C_b / P)`` (``C_b / P`` with
    a buffer, whose ``C_b`` is a multiple of ``P``). Works elementwise on arrays."""
    if int(page) <= 0:
        raise ValueError(f"page size must be positive, got {page}")
    return _ceil_div(cached_tokens(kv_len, nb), int(page))


def keys_seen(kv_len, nq, causal):
    """Keys that each query row ``i`` (``0 <= i < nq``) of a sequence of ``kv_len`` keys sees:
    keys ``0 .. n_i - 1`` with ``n_i = L_b``, or causal ``n_i = clamp(i + L_b - Nq + 1, 0, L_b)``
    (the last query aligned with the sequence's own last key). int64 ``[nq]``; 0 marks a row that
    sees no key (its output is 0)."""
    lens = int(kv_len)
    i = np.arange(int(nq), dtype=np.int64)
    if not causal:
        return np.full(i.shape, lens, np.int64)
    return np.clip(i + lens - int(nq) + 1, 0, lens)


def _pool_entries(name, arr, axis, per_page, n_pool, what):
    """Checks a pool array: ``n_pool`` pages (axis 0) of ``per_page`` entries on ``axis``."""
    arr = np.asarray(arr)
    if arr.shape[0] != n_pool or arr.ndim <= axis or arr.shape[axis] != per_page:
        raise ValueError(f"{name}: expected {n_pool} {what} of {per_page} entries on axis {axis}, "
                         f"got shape {arr.shape}")
    return arr


def _gather(arr, ids, axis, count):
    """The pages ``ids`` of a pool array (pages on axis 0) joined along ``axis`` as a batch-1
    array, cut to its first ``count`` entries on that axis."""
    joined = np.concatenate([arr[i : i + 1] for i in ids], axis=axis)
    return np.take(joined, np.arange(count), axis=axis)


def paged_kv(
    s1,
    block,
    granularity=None,
    *,
    kv_lens=None,
    page_table=None,
    q8=None,
    packed=None,
    s2=None,
    z2=None,
    bits=None,
    group=None,
    order="lsb_first",
    anchor="zero",
    buffer=None,
    buffer_scale=None,
):
    """Per-sequence dequantized K or V: a list of ``B`` float32 arrays ``[Hkv, L_b, d]``
    (FORMAT.md "Per-sequence lengths and the paged cache").

    Cache operand as in ``dequantized_kv`` (stage 2: ``packed``, ``s2``, ``z2``, ``bits``,
    ``group``, ``order``, ``anchor``; stage 1 only: ``q8``; stage-1 scales ``s1``), in one of
    two forms:

    * contiguous (``page_table=None``): ``packed [B, N, R]``, ``s1 [B, Hkv, ceil(N/block)(, d)]``,
      ``s2``/``z2 [B, Hkv, ceil(N/group), d]`` or ``q8 [B, Hkv, N, d]``; sequence ``b`` is batch
      row ``b`` (the identity page table with ``P = N``);
    * paged: the same arrays with batch -> page and ``N`` -> ``P``, a pool of ``NP`` pages
      (``packed [NP, P, R]``, ``s1 [NP, Hkv, P/block(, d)]``, ``s2``/``z2 [NP, Hkv, P/group, d]``
      or ``q8 [NP, Hkv, P, d]``), and ``page_table`` integer ``[B, MP]``: logical key ``j`` of
      sequence ``b`` is row ``j % P`` of page ``page_table[b, j // P]``. ``P`` must be a
      multiple of ``block``, which ``group`` divides.

    ``kv_lens`` (integer ``[B]``, required with ``page_table``): sequence ``b`` has ``L_b`` keys,
    the first ``C_b = cached_tokens(L_b, Nb)`` in the cache, the last ``L_b - C_b`` in rows
    ``0 .. L_b - C_b - 1`` of the decode buffer ``buffer [B, Hkv, Nb, d]`` int8 (scale
    ``buffer_scale [B, Hkv]`` f32; ``Nb`` a multiple of ``block``, ``Nb = P`` when paged).
    Only the entries ``0 ..
    pages_read(L_b, P, Nb) - 1`` of a table row are read, and only the cache rows, blocks and
    groups that hold one of the first ``C_b`` keys; everything else may hold anything.
    Without ``kv_lens`` (contiguous form only) every sequence has the whole cache and the whole
    buffer, ``L_b = N + Nb``, as ``dequantized_kv``.

    Raises ValueError for inconsistent shapes, a page size that does not fit the blocks, a
    negative length, a read table entry outside ``[0, NP)``, or ``C_b`` above the capacity
    (``MP * P`` paged, ``N`` contiguous).
    """
    s1 = np.asarray(s1)
    if s1.ndim not in (3, 4):
        raise ValueError(f"stage-1 scales must have rank 3 or 4, got shape {s1.shape}")
    expected = {"block": 3, "channel": 4}
    if granularity is not None and expected.get(granularity) != s1.ndim:
        raise ValueError(f"granularity {granularity!r} does not match scales of shape {s1.shape}")
    block = int(block)
    if block <= 0:
        raise ValueError("block size must be positive")
    stage2 = packed is not None
    if stage2:
        if q8 is not None:
            raise ValueError("give either packed (stage 2) or q8 (stage 1), not both")
        if s2 is None or z2 is None or bits is None or group is None:
            raise ValueError("stage-2 operand needs s2, z2, bits and group")
        packed, s2, z2 = np.asarray(packed), np.asarray(s2), np.asarray(z2)
        group = int(group)
        if packed.ndim != 3 or s2.ndim != 4 or z2.shape != s2.shape:
            raise ValueError(f"stage 2: expected packed [NP, P, R] and s2, z2 [NP, Hkv, G, d], got "
                             f"{packed.shape}, {s2.shape}, {z2.shape}")
        n_pool, tokens = packed.shape[0], packed.shape[1]
        hkv, d = s2.shape[1], s2.shape[3]
    elif q8 is not None:
        q8 = np.asarray(q8)
        _check_4d("q8", q8)
        n_pool, hkv, tokens, d = q8.shape
    else:
        raise ValueError("give packed (stage 2) or q8 (stage 1)")
    if s1.shape[1] != hkv:
        raise ValueError(f"stage-1 scales {s1.shape} do not have the operand's {hkv} heads")

    paged = page_table is not None
    form = "pages" if paged else "sequences"
    if paged:
        if kv_lens is None:
            raise ValueError("a page table needs kv_lens")
        if tokens % block:
            raise ValueError(f"page size P = {tokens} is not a multiple of the stage-1 block {block}")
        if stage2 and block % group:
            raise ValueError(f"stage-2 group {group} does not divide the stage-1 block {block}")
        table = np.asarray(page_table)
        if table.ndim != 2 or not np.issubdtype(table.dtype, np.integer):
            raise ValueError(f"page_table must be an integer array [B, MP], got {table.dtype} "
                             f"{table.shape}")
        batch = table.shape[0]
    else:
        batch = n_pool
    # Every pool array holds n_pool pages (sequences) of `tokens` tokens.
    n_blocks = -(-tokens // block)
    _pool_entries("s1", s1, 2, n_blocks, n_pool, form)
    if s1.ndim == 4 and s1.shape[3] != d:
        raise ValueError(f"channel scales {s1.shape} do not have d = {d} channels")
    if stage2:
        n_groups = -(-tokens // group)
        _pool_entries("s2", s2, 2, n_groups, n_pool, form)
        _pool_entries("z2", z2, 2, n_groups, n_pool, form)

    nb = None
    if buffer is not None:
        buffer = np.asarray(buffer)
        _check_4d("buffer", buffer)
        nb = buffer.shape[2]
        if buffer.shape[0] != batch or buffer.shape[1] != hkv or buffer.shape[3] != d:
            raise ValueError(f"buffer {buffer.shape} does not match [B, Hkv, Nb, d] = "
                             f"[{batch}, {hkv}, Nb, {d}]")
        if buffer_scale is None:
            raise ValueError("a decode buffer needs its [B, H] scale")
        bscale = _as_f32(buffer_scale)
        if bscale.shape != (batch, hkv):
            raise ValueError(f"buffer_scale must be [B, Hkv] = {(batch, hkv)}, got {bscale.shape}")
        if paged and nb != tokens:
            raise ValueError(f"a paged cache's decode buffer holds one page: Nb = {nb} != P = {tokens}")
        if kv_lens is not None and (nb == 0 or nb % block):
            raise ValueError(f"with kv_lens the decode buffer's Nb = {nb} must be a positive "
                             f"multiple of the stage-1 block {block} (a full buffer is flushed)")

    if kv_lens is None:  # today's form: the whole cache and the whole buffer
        full = dequantized_kv(s1, block, q8=q8, packed=packed, s2=s2, z2=z2, bits=bits,
                              group=group, order=order, buffer=buffer, buffer_scale=buffer_scale,
                              anchor=anchor)
        return [full[b] for b in range(batch)]

    lens = _kv_lens(kv_lens, batch)
    out = []
    for b, length in enumerate(lens):
        c = int(cached_tokens(length, nb))
        if paged:
            n_pages = int(pages_read(length, tokens, nb))
            if n_pages > table.shape[1]:
                raise ValueError(f"sequence {b}: {c} cached keys need {n_pages} pages, the page "
                                 f"table has MP = {table.shape[1]} (capacity {table.shape[1] * tokens})")
            ids = [int(i) for i in table[b, :n_pages]]
            for j, i in enumerate(ids):
                if not 0 <= i < n_pool:
                    raise ValueError(f"sequence {b}: page_table[{b}, {j}] = {i} is outside the "
                                     f"pool of {n_pool} pages")
        else:
            if c > tokens:
                raise ValueError(f"sequence {b}: {c} cached keys exceed the cache's N = {tokens}")
            ids = [b]
        if c == 0:
            x = np.zeros((hkv, 0, d), F32)
        else:
            # The sequence's first c keys as a contiguous batch-1 operand: rows, blocks and
            # groups past them (never read) are cut off before anything is decoded.
            def take(arr, axis, per):
                return _gather(arr, ids, axis, -(-c // per))

            s1_b = take(s1, 2, block)
            if stage2:
                x = dequantized_kv(s1_b, block, packed=take(packed, 1, 1), s2=take(s2, 2, group),
                                   z2=take(z2, 2, group), bits=bits, group=group, order=order,
                                   anchor=anchor)[0]
            else:
                x = dequantized_kv(s1_b, block, q8=take(q8, 2, 1))[0]
        if buffer is not None and length > c:
            tail = buffer[b, :, : length - c].astype(F32) * bscale[b][:, None, None]
            x = np.concatenate([x, tail], axis=1)
        out.append(x)
    return out


def varlen_attention(
    q, ks, vs, scale, causal, softmax="exact", threshold=-6.0, degree=2, dtype=np.float64, fma=False
):
    """``qattn.attention`` with per-sequence lengths: ``[B, Hq, Nq, d]`` in ``dtype``.

    q ``[B, Hq, Nq, d]`` (dequantized); ``ks``, ``vs``: ``B`` arrays ``[Hkv, L_b, d]`` (e.g. from
    ``paged_kv``). Query row ``i`` of sequence ``b`` attends to keys ``0 .. L_b - 1``, causal
    ``j <= i + L_b - Nq`` (``keys_seen``); a row that sees no key (``L_b = 0``, or causal with
    ``i + L_b - Nq < 0``) is 0. The other rows are ``attention`` (same softmax options) of the
    sequence's keys.
    """
    dtype = np.dtype(dtype).type
    q = np.asarray(q, dtype)
    _check_4d("q", q)
    batch, hq, nq, d = q.shape
    if len(ks) != batch or len(vs) != batch:
        raise ValueError(f"expected {batch} K and V arrays, got {len(ks)} and {len(vs)}")
    out = np.zeros(q.shape, dtype)
    for b in range(batch):
        k = np.asarray(ks[b], dtype)
        v = np.asarray(vs[b], dtype)
        if k.ndim != 3 or k.shape[2] != d or v.shape != k.shape:
            raise ValueError(f"sequence {b}: K {k.shape} and V {v.shape} must both be "
                             f"[Hkv, L_b, d = {d}]")
        if k.shape[0] == 0 or hq % k.shape[0]:
            raise ValueError(f"Hq = {hq} is not a multiple of Hkv = {k.shape[0]}")
        seen = keys_seen(k.shape[1], nq, causal)
        rows = np.nonzero(seen)[0]
        if rows.size == 0:
            continue
        first = int(rows[0])  # the rows that see a key are first .. nq - 1
        out[b, :, first:] = attention(q[b : b + 1, :, first:], k[None], v[None], scale, causal,
                                      softmax, threshold, degree, dtype, fma)[0]
    return out
