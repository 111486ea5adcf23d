"""Key smoothing + stage 1 + stage 2 with ``fit = mse`` of a compiled function against the NumPy
model (FORMAT.md), all bit-exact.

The function takes keys ``k`` and new keys ``kn``; returns ``ks``, ``mu`` (smooth_keys with the
calibration range), ``ksn`` (smooth_keys of ``kn`` using ``mu``), ``q8``, ``s1`` (stage 1 of
``ks``), ``codes``, ``s2``, ``z2`` (stage 2 of ``q8`` with ``fit = mse``) and ``q8d``
(progressive_dequantize). Also checks that the mse fit moved some groups and never increased a
group's squared error against the min/max fit.
"""

import numpy as np

import qcheck
from qattn import format as F

p = qcheck.parser(__doc__)
p.add_argument("--art", required=True)
p.add_argument("--function", required=True)
p.add_argument("--out", required=True, help="qattn-run's --output-dir")
p.add_argument("--calibration", required=True, help="START,END")
p.add_argument("--block", type=int, required=True)
p.add_argument("--stage2", required=True, help="bits=B[-B...],group=G[,order=lsb|msb]")
p.add_argument("--anchor", default="zero", choices=("zero", "min"))
p.add_argument("--fit", default="mse", choices=("minmax", "mse"))
a = p.parse_args()
c = qcheck.Checker(a.case)
spec = qcheck.parse_spec(a.stage2)
bits, group, order = spec["bits"], spec["group"], qcheck.order_name(spec)

k_dtype = qcheck.manifest_arg_dtype(a.art, a.function, "k")
kn_dtype = qcheck.manifest_arg_dtype(a.art, a.function, "kn")
k = qcheck.as_f32(qcheck.load(a.out, "k", k_dtype), k_dtype)
kn = qcheck.as_f32(qcheck.load(a.out, "kn", kn_dtype), kn_dtype)
start, end = (int(v) for v in a.calibration.split(","))

want_ks, want_mu = F.smooth_keys(k, calibration=(start, end))
c.exact("smooth_keys mean", qcheck.load(a.out, "mu", "f32"), want_mu)
c.exact("smooth_keys K - mean", qcheck.load(a.out, "ks", "f32"), want_ks)
c.exact("smooth_keys using the mean", qcheck.load(a.out, "ksn", "f32"),
        F.smooth_keys(kn, mean=want_mu)[0])

want_q8, want_s1 = F.stage1_quantize(want_ks, a.block)
c.exact("stage1 of the smoothed keys q8", qcheck.load(a.out, "q8", "i8"), want_q8)
c.exact("stage1 scales s1", qcheck.load(a.out, "s1", "f32"), want_s1)

fa = f"fit={a.fit}" + (" anchor=min" if a.anchor == "min" else "")
want_p, want_s2, want_z2 = F.stage2_quantize(want_q8, bits, group, order, fit=a.fit,
                                             anchor=a.anchor)
c.exact(f"{fa} scales s2", qcheck.load(a.out, "s2", "i8"), want_s2.view(np.int8))
c.exact(f"{fa} zero points z2", qcheck.load(a.out, "z2", "i8"), want_z2)
c.exact(f"{fa} packed codes", qcheck.load(a.out, "codes", "i8"), want_p.view(np.int8))
H, d = want_q8.shape[1], want_q8.shape[3]
want_dq = F.stage2_dequantize(want_p, want_s2, want_z2, H, d, bits, group, order, a.anchor)
c.exact("progressive_dequantize q8d", qcheck.load(a.out, "q8d", "i8"), want_dq)

if a.fit == "mse":
    _, s_mm, z_mm = F.stage2_codes(want_q8, bits, group, anchor=a.anchor)
    moved = int(np.sum((s_mm != want_s2) | (z_mm != want_z2)))
    n = want_q8.shape[2]
    starts = np.arange(0, n, group)
    mm_dq = F.stage2_dequantize(*F.stage2_quantize(want_q8, bits, group, order, anchor=a.anchor),
                                H, d, bits, group, order, a.anchor)
    err = lambda dq: np.add.reduceat((dq.astype(np.int64) - want_q8) ** 2, starts, axis=2)  # noqa: E731
    e, e_mm = err(want_dq), err(mm_dq)
    c.line(moved > 0 and bool(np.all(e <= e_mm)), "fit=mse never worse than minmax per group",
           f"{moved} of {want_s2.size} groups moved; squared error {int(e.sum())} vs "
           f"{int(e_mm.sum())}")
c.finish()
