"""Stage 1 (qattn.quantize + qattn.dequantize) of a compiled function against the NumPy model.

The function takes float ``x`` and returns ``q8``, ``s1`` (quantize) and ``xd``
(dequantize(q8, s1)); qattn-run wrote them to --out. Checks:
  * q8 and s1 bit-exact against ``format.stage1_quantize`` of the same x (after the conversion
    of f16 / bf16 input to f32);
  * xd bit-exact against ``f32(q8) * s`` rounded to xd's type (nearest even);
  * FORMAT.md's bound |x - xd| <= s/2 + (|x| + |x'|) 2^-24, plus half an ulp of xd's type when
    it is narrower than f32, wherever FORMAT.md promises it: for blocks whose stored scale is 0
    with max|x| = 0, or a normal number of the scale type (a scale that underflows to a
    subnormal or 0, or overflows to inf, is outside the bound's domain; such blocks are still
    checked bit-exactly, NaN matching any NaN since FORMAT.md fixes no NaN payload);
  * q8 never holds -128.
"""

import numpy as np

import qcheck
from qattn import format as F

p = qcheck.parser(__doc__)
p.add_argument("--art", required=True)
p.add_argument("--function", required=True)
p.add_argument("--out", required=True, help="qattn-run's --output-dir")
p.add_argument("--in", dest="inp", help="where x is when it was given with --input")
p.add_argument("--stage1", required=True, help="block=B[,scale=f32|f16][,gran=block|channel]")
a = p.parse_args()
c = qcheck.Checker(a.case)
spec = qcheck.stage1_spec(qcheck.parse_spec(a.stage1))

x_dtype = qcheck.manifest_arg_dtype(a.art, a.function, "x")
xd_dtype = qcheck.manifest_arg_dtype(a.art, a.function, "xd")
x = qcheck.as_f32(qcheck.load(a.inp or a.out, "x", x_dtype), x_dtype)
q8 = qcheck.load(a.out, "q8", "i8")
s1 = qcheck.load(a.out, "s1", spec["scale_dtype"])
xd_raw = qcheck.load(a.out, "xd", xd_dtype)

want_q8, want_s1 = F.stage1_quantize(x, spec["block"], spec["scale_dtype"], spec["granularity"])
block = spec["block"]


def where(idx):
    b, h, t = idx[:3]
    k = t // block
    sidx = (b, h, k) if want_s1.ndim == 3 else (b, h, k, idx[3])
    return f"x={x[idx]!r} s1={want_s1[sidx]!r}" if len(idx) == 4 else ""


c.exact("stage1 scales s1", s1, want_s1)
c.exact("stage1 data q8", q8, want_q8, where)
c.line(int(q8.min()) >= -127, "q8 avoids -128", f"min {int(q8.min())}, max {int(q8.max())}")

xd32 = F.stage1_dequantize(want_q8, want_s1, block, spec["granularity"])  # f32(q8) * s
if xd_dtype == "bf16":
    xd = F.bf16_to_f32(xd_raw).astype(np.float64)
    want_raw = F.f32_to_bf16(xd32)
else:
    xd = xd_raw.astype(np.float64)
    want_raw = xd32.astype(qcheck.DTYPES[xd_dtype])
nan = np.isnan(xd32)
if nan.any():  # any NaN matches any NaN; everything else bit-exact
    c.line(bool(np.array_equal(np.isnan(xd), nan)), f"dequantized xd NaN where the model's is",
           f"{int(nan.sum())} NaN values (scale inf)")
    xd_cmp, want_cmp = np.where(nan, 0, xd_raw), np.where(nan, 0, want_raw)
else:
    xd_cmp, want_cmp = xd_raw, want_raw
c.exact(f"dequantized xd ({xd_dtype})", xd_cmp.astype(xd_raw.dtype), want_cmp.astype(xd_raw.dtype))

s = np.asarray(want_s1, np.float32).astype(np.float64)
s = np.repeat(s, block, axis=2)[:, :, : x.shape[2]]
if s.ndim == 3:
    s = s[..., None]
x64 = x.astype(np.float64)
tiny = float(np.finfo(qcheck.DTYPES[spec["scale_dtype"]]).tiny)
mblk = np.maximum.reduceat(np.abs(x64), np.arange(0, x.shape[2], block), axis=2)
if want_s1.ndim == 3:
    mblk = mblk.max(axis=3, keepdims=True)
mtok = np.repeat(mblk, block, axis=2)[:, :, : x.shape[2]]
domain = np.broadcast_to(np.isfinite(s) & ((s >= tiny) | (mtok == 0)), x.shape)
limit = s / 2 + (np.abs(x64) + np.abs(np.where(nan, 0, xd32))) * 2.0**-24
if xd_dtype != "f32":
    limit = limit + np.abs(xd) * qcheck.output_ulp_factor(xd_dtype) + qcheck.output_abs_floor(xd_dtype)
err = np.abs(x64 - xd)
with np.errstate(invalid="ignore", divide="ignore"):
    ratio = np.where(domain & (s > 0), err / np.broadcast_to(s, err.shape), 0)
excluded = int((~domain).sum())
c.bound("|x - xd| <= s/2 (+ rounding)", err[domain], np.broadcast_to(limit, x.shape)[domain],
        f"max |x - xd| / s = {float(ratio.max()):.4f}"
        + (f"; {excluded} values in blocks with a subnormal, 0 or inf scale left out" if excluded else ""))
c.finish()
