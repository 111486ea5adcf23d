"""qattn.attention of a compiled function against the NumPy model.

The function takes float ``q``, ``k``, ``v`` (``[B, H, N, d]``; k and v are the cache), quantizes
them inside as --q / --k / --v say and returns ``o = attention(...)``. With --buffers it also takes
the decode buffers ``kb``, ``vb`` (int8) and their scales ``kbs``, ``vbs`` (written by
make_inputs.py attn-buffer into --in, together with the unquantized new tokens ``knew``, ``vnew``);
with --append T the function first appends ``knew_t`` / ``vnew_t`` (the last T new tokens) to the
buffers at row Nb - T. Arrays are looked up in --out (qattn-run's output dir) first, then --in.

Checks:
  (a) o against the model's float64 attention on the *same dequantized operands* (the model
      quantizes q / k / v bit-exactly as FORMAT.md says, then dequantizes): the only freedom
      FORMAT.md leaves is the order of the f32 sums and expf's last ulps, so the bound is tight.
      Per query row i, with u = 2^-24 and A_i = max_j |scale| sum_c |Q'_ic| |K'_jc| over the keys
      row i sees (the magnitude that the f32 score rounding is relative to):
        |o_i - model_i| <= (8 A_i + 64) u max|V'| + half an ulp of o's type.
      An f32 score error e moves a softmax output by at most 2 e max|V'|; the scores' rounding
      error is a few u A_i in practice (about 1 u A_i measured), the exponentials, sums and
      division add a few u. --tol-score / --tol-base change the 8 and the 64;
  (b) o against float64 attention with exact softmax on the unquantized inputs (the new tokens
      unquantized too): rel_fro <= --max-rel-fro and SQNR >= --min-sqnr (measured bounds with
      margin, loose enough for quantization noise, tight enough to catch a broken lowering).
"""

import os
import sys

import numpy as np

import qcheck
from qattn import format as F

p = qcheck.parser(__doc__)
p.add_argument("--art", required=True)
p.add_argument("--function", required=True)
p.add_argument("--out", required=True, help="qattn-run's --output-dir")
p.add_argument("--in", dest="inp", help="make_inputs.py's --out")
qcheck.add_attention_args(p)
p.add_argument("--buffers", action="store_true")
p.add_argument("--append", type=int, default=0)
a = p.parse_args()
c = qcheck.Checker(a.case)


def find(name, dtype=None):
    for directory in (a.out, a.inp):
        if directory and os.path.exists(os.path.join(directory, name + ".npy")):
            return qcheck.load(directory, name, dtype)
    sys.exit(f"error: {name}.npy is in neither --out nor --in")


def float_arg(name):
    dtype = qcheck.manifest_arg_dtype(a.art, a.function, name)
    return qcheck.as_f32(find(name, dtype), dtype)


q, k, v = float_arg("q"), float_arg("k"), float_arg("v")
o_dtype = qcheck.manifest_arg_dtype(a.art, a.function, "o")
o_raw = find("o", o_dtype)
o = (F.bf16_to_f32(o_raw) if o_dtype == "bf16" else o_raw).astype(np.float64)
B, Hq, Nq, d = q.shape
scale = qcheck.softmax_scale(a.scale, d)

# ---- the model's dequantized operands -------------------------------------------------------
qspec = qcheck.parse_spec(a.q)
if qspec:
    s1 = qcheck.stage1_spec(qspec)
    q8, qs = F.stage1_quantize(q, s1["block"], s1["scale_dtype"], s1["granularity"])
    qd = F.stage1_dequantize(q8, qs, s1["block"])
else:
    qd = q


def kv_operand(x, text, buf=None, buf_scale=None):
    spec = qcheck.parse_spec(text)
    s1 = qcheck.stage1_spec(spec)
    x8, xs = F.stage1_quantize(x, s1["block"], s1["scale_dtype"], s1["granularity"])
    if "bits" in spec:
        s2kw = qcheck.stage2_kwargs(spec)
        packed, s2, z2 = F.stage2_quantize(x8, s2kw["bits"], s2kw["group"], s2kw["order"],
                                           anchor=s2kw["anchor"])
        extra = dict(packed=packed, s2=s2, z2=z2, **s2kw)
    else:
        extra = dict(q8=x8)
    return F.dequantized_kv(xs, s1["block"], buffer=buf, buffer_scale=buf_scale, **extra)


kb = vb = kbs = vbs = None
k_full, v_full = k, v
if a.buffers:
    kb, vb = find("kb", "i8"), find("vb", "i8")
    kbs, vbs = find("kbs", "f32"), find("vbs", "f32")
    if a.append:
        t = a.append
        kb, vb = kb.copy(), vb.copy()
        kb[:, :, -t:] = F.buffer_quantize(find("knew_t", "f32"), kbs)
        vb[:, :, -t:] = F.buffer_quantize(find("vnew_t", "f32"), vbs)
    k_full = np.concatenate([k, find("knew", "f32")], axis=2)
    v_full = np.concatenate([v, find("vnew", "f32")], axis=2)
kd = kv_operand(k, a.k, kb, kbs)
vd = kv_operand(v, a.v, vb, vbs)

smx = qcheck.softmax_kwargs(a.softmax)

# ---- (a) against the model on the same dequantized operands --------------------------------
model = F.attention(qd, kd, vd, scale, a.causal, dtype=np.float64, **smx)
vmax = float(np.max(np.abs(vd)))
U = 2.0**-24
nk = kd.shape[2]
kabs = np.repeat(np.abs(kd.astype(np.float64)), Hq // kd.shape[1], axis=1)
mag = abs(scale) * np.matmul(np.abs(qd.astype(np.float64)), np.swapaxes(kabs, -1, -2))  # [B,Hq,Nq,Nk]
if a.causal:
    seen = np.arange(nk)[None, :] <= np.arange(Nq)[:, None] + (nk - Nq)
    mag = np.where(seen, mag, 0)
A = mag.max(-1, keepdims=True)  # [B, Hq, Nq, 1]
limit = (a.tol_score * A + a.tol_base) * U * vmax \
    + np.abs(model) * qcheck.output_ulp_factor(o_dtype) + qcheck.output_abs_floor(o_dtype)
err = np.abs(o - model)
c.bound(f"vs model on dequantized operands ({a.tol_score:g} A + {a.tol_base:g}) u max|V'|", err,
        limit, f"max_abs {float(err.max()):.3e} = {float(err.max()) / vmax:.2e} max|V'|, "
        f"max A {float(A.max()):.1f}")

# ---- (b) against float64 attention on the unquantized inputs --------------------------------
ref = F.attention(q, k_full, v_full, scale, a.causal, dtype=np.float64)
max_abs, rel, sqnr = qcheck.metrics(o, ref)
mmax_abs, mrel, msqnr = qcheck.metrics(model, ref)
c.line(rel <= a.max_rel_fro and sqnr >= a.min_sqnr,
       f"vs float64 attention (rel_fro <= {a.max_rel_fro:g}, sqnr >= {a.min_sqnr:g} dB)",
       f"max_abs={max_abs:.3e} rel_fro={rel:.3e} sqnr={sqnr:.1f} dB; "
       f"model: rel_fro={mrel:.3e} sqnr={msqnr:.1f} dB")
c.finish()
