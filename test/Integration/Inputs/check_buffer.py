"""Decode buffer ops (qattn.buffer_append, qattn.buffer_flush) of a compiled function against the
NumPy model. Inputs come from make_inputs.py (--in), results from qattn-run (--out).

  append: the function appends x1 at row --pos1 of buf (result b1), then x2 at row --pos2 of b1
          (result b2), both with the scale s. Checks, bit-exact: the appended rows equal
          ``format.buffer_quantize`` of the new tokens (f16 input converted to f32 first), every
          other row is unchanged; and that some values were clamped at +-127 (outliers beyond
          127 s), so the clamp is exercised.
  flush:  the function flushes the full buffer ``buf`` (scale ``s``) into the cache (``codes``,
          ``bs``, ``s2``, ``z2``) at token --pos. Checks, bit-exact: the written token rows of
          the codes, the written blocks of the block scales (``s`` converted to the scale type,
          repeated per channel for channel granularity) and the written groups of s2 / z2 equal
          the model's stage 2 of the buffer; everything outside them is unchanged.
"""

import numpy as np

import qcheck
from qattn import format as F

p = qcheck.parser(__doc__)
p.add_argument("kind", choices=["append", "flush"])
p.add_argument("--art", required=True)
p.add_argument("--function", required=True)
p.add_argument("--in", dest="inp", required=True)
p.add_argument("--out", required=True)
p.add_argument("--pos1", type=int)
p.add_argument("--pos2", type=int)
p.add_argument("--pos", type=int)
p.add_argument("--stage1", help="block=B[,scale=f32|f16][,gran=block|channel]")
p.add_argument("--stage2", help="bits=..,group=G[,order=lsb|msb]")
a = p.parse_args()
c = qcheck.Checker(a.case)


def float_in(name):
    dtype = qcheck.manifest_arg_dtype(a.art, a.function, name)
    return qcheck.as_f32(qcheck.load(a.inp, name, dtype), dtype)


def check_rows(what, got, before, rows, want, axis):
    """got == want on index range ``rows`` of ``axis`` and == before elsewhere."""
    sl = [slice(None)] * got.ndim
    sl[axis] = rows
    sl = tuple(sl)
    c.exact(f"{what}: written {axis_names[axis]} {rows.start}..{rows.stop - 1}", got[sl], want)
    keep = np.ones(got.shape[axis], bool)
    keep[rows] = False
    rest_got = np.compress(keep, got, axis=axis)
    rest_before = np.compress(keep, before, axis=axis)
    c.exact(f"{what}: other {axis_names[axis]} unchanged", rest_got, rest_before)


if a.kind == "append":
    axis_names = {2: "rows"}
    buf = qcheck.load(a.inp, "buf", "i8")
    s = qcheck.load(a.inp, "s", "f32")
    x1, x2 = float_in("x1"), float_in("x2")
    b1, b2 = qcheck.load(a.out, "b1", "i8"), qcheck.load(a.out, "b2", "i8")
    w1, w2 = F.buffer_quantize(x1, s), F.buffer_quantize(x2, s)
    check_rows("b1 = append(x1) at row %d" % a.pos1, b1, buf,
               slice(a.pos1, a.pos1 + x1.shape[2]), w1, 2)
    check_rows("b2 = append(x2) at row %d" % a.pos2, b2, b1,
               slice(a.pos2, a.pos2 + x2.shape[2]), w2, 2)
    sc = s[:, :, None, None].astype(np.float64)
    clamped = int((np.abs(x1 / sc) > 127.5).sum() + (np.abs(x2 / sc) > 127.5).sum())
    c.line(clamped > 0, "coverage: outliers beyond 127 s clamped",
           f"{clamped} clamped values, max |x / s| {float(max(np.abs(x1 / sc).max(), np.abs(x2 / sc).max())):.1f}")
else:
    axis_names = {1: "token rows", 2: "blocks/groups"}
    s1 = qcheck.stage1_spec(qcheck.parse_spec(a.stage1))
    s2spec = qcheck.parse_spec(a.stage2)
    bits, group, order = s2spec["bits"], s2spec["group"], qcheck.order_name(s2spec)
    block = s1["block"]
    buf = qcheck.load(a.inp, "buf", "i8")
    s = qcheck.load(a.inp, "s", "f32")
    before = {n: qcheck.load(a.inp, n) for n in ("codes", "bs", "s2", "z2")}
    got = {n: qcheck.load(a.out, "new_" + n) for n in ("codes", "bs", "s2", "z2")}
    nb = buf.shape[2]
    pos = a.pos
    assert pos % block == 0, "the test must flush at a block-aligned position"
    w_codes, w_s2, w_z2 = F.stage2_quantize(buf, bits, group, order)
    w_bs = s.astype(qcheck.DTYPES[s1["scale_dtype"]])[:, :, None]  # [B, H, 1]
    w_bs = np.repeat(w_bs, nb // block, axis=2)
    if s1["granularity"] == "channel":
        w_bs = np.repeat(w_bs[..., None], buf.shape[3], axis=3)
    check_rows("codes", got["codes"].view(np.uint8), before["codes"].view(np.uint8),
               slice(pos, pos + nb), w_codes, 1)
    check_rows("block scales", got["bs"], before["bs"],
               slice(pos // block, (pos + nb) // block), w_bs, 2)
    check_rows("group scales s2", got["s2"].view(np.uint8), before["s2"].view(np.uint8),
               slice(pos // group, (pos + nb) // group), w_s2, 2)
    check_rows("zero points z2", got["z2"], before["z2"],
               slice(pos // group, (pos + nb) // group), w_z2, 2)
c.finish()
