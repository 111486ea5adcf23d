"""Stage 2 (qattn.progressive_quantize + qattn.progressive_dequantize) of a compiled function
against the NumPy model.

The function takes int8 ``q8`` (from make_inputs.py stage2, in --in) and returns packed ``codes``,
``s2``, ``z2`` (progressive_quantize) and ``q8d`` (progressive_dequantize of those three).
Checks:
  * codes, s2 and z2 bit-exact against ``format.stage2_quantize``;
  * q8d bit-exact against ``format.stage2_dequantize`` of the *compiled* codes, s2, z2 (so that
    the dequantization is checked on its own);
  * FORMAT.md's bound |q8 - q8d| < s2, and <= s2 / 2 where the lo/hi clamps leave a code alone;
  * coverage: the data exercised the clamps and the s2 = 1 case (else the test is too weak).
"""

import numpy as np

import qcheck
from qattn import format as F

p = qcheck.parser(__doc__)
p.add_argument("--in", dest="inp", required=True, help="make_inputs.py's --out")
p.add_argument("--out", required=True, help="qattn-run's --output-dir")
p.add_argument("--stage2", required=True, help="bits=4[-2-3...],group=G[,order=lsb|msb]")
a = p.parse_args()
c = qcheck.Checker(a.case)
spec = qcheck.parse_spec(a.stage2)
bits, group, order = spec["bits"], spec["group"], qcheck.order_name(spec)

q8 = qcheck.load(a.inp, "q8", "i8")
codes = qcheck.load(a.out, "codes", "i8")
s2 = qcheck.load(a.out, "s2", "i8")
z2 = qcheck.load(a.out, "z2", "i8")
q8d = qcheck.load(a.out, "q8d", "i8")
B, H, N, d = q8.shape

want_codes, want_s2, want_z2 = F.stage2_quantize(q8, bits, group, order)
hb = F.head_bits(bits, H)
R, offs = F.row_bytes(d, hb)


def byte_where(idx):
    b, t, r = idx
    head = max(i for i in range(H) if offs[i] <= r)
    return f"(head {head}, {hb[head]} bits, byte {r - offs[head]} of the head)"


def group_where(idx):
    b, h, g, ch = idx
    vals = q8[b, h, g * group : (g + 1) * group, ch]
    return f"(group values min {vals.min()} max {vals.max()}, {hb[h]} bits)"


c.exact("stage2 scales s2", s2.view(np.uint8), want_s2, group_where)
c.exact("stage2 zero points z2", z2, want_z2, group_where)
c.exact("stage2 packed codes", codes.view(np.uint8), want_codes, byte_where)

try:
    got_deq = F.stage2_dequantize(codes, s2, z2, H, d, bits, group, order)
    c.exact("progressive_dequantize q8d", q8d, got_deq)
except ValueError as e:  # the compiled codes / s2 / z2 are inconsistent
    c.line(False, "progressive_dequantize q8d", f"model cannot dequantize the compiled codes: {e}")

s2t = np.repeat(want_s2.astype(np.int64), group, axis=2)[:, :, :N]
err = np.abs(q8.astype(np.int64) - q8d.astype(np.int64))
c.bound("|q8 - q8d| < s2", err, s2t - 1)
s2p, z2p, lo, hi = F.stage2_params(q8, bits, group)
raw = F._round_div(q8.astype(np.int64), s2t) + np.repeat(z2p, group, axis=2)[:, :, :N]
lot = np.repeat(lo, group, axis=2)[:, :, :N]
hit = np.repeat(hi, group, axis=2)[:, :, :N]
clamped = (raw < lot) | (raw > hit)
c.bound("|q8 - q8d| <= s2/2 where unclamped", np.where(clamped, 0, 2 * err), s2t)
c.line(int(clamped.sum()) > 0 and int((want_s2 == 1).sum()) > 0,
       "coverage: clamped codes and s2 = 1 groups present",
       f"{int(clamped.sum())} clamped codes, {int((want_s2 == 1).sum())} groups with s2 = 1, "
       f"s2 max {int(want_s2.max())}, z2 in [{int(want_z2.min())}, {int(want_z2.max())}]")
c.finish()
