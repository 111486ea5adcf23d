"""qattn.attention with per-sequence lengths (and a page table) against the NumPy model.

Inputs come from make_paged.py (--in: q, the K / V operands, kv_lens, page_table, the decode
buffers, the unquantized kf_<b> / vf_<b>), the result o from qattn-run (--out, o.npy). --q /
--k / --v spell the schemes as make_paged.py and check_attention.py do (anchor=min for the
min-anchored grid); they must match make_paged's (its case.json).

Checks:
  (a) o against the model's float64 ``varlen_attention`` on the dequantized operands
      (``paged_kv``: pages gathered through the table, cut to each sequence's keys, buffer rows
      after them). Per query row of sequence b, with u = 2^-24 and A the largest
      |scale| sum_c |Q'_c| |K'_jc| over the keys the row sees (check_attention.py's bound):
        |o - model| <= (8 A + 64) u max|V'_b| + half an ulp of o's type,
      max|V'_b| over sequence b's values (--tol-score / --tol-base change the 8 and the 64).
      Rows that see no key (L_b = 0, or causal with i + L_b - Nq < 0) must be exactly 0;
  (b) o against float64 attention with exact softmax on the unquantized queries, keys and
      values: rel_fro <= --max-rel-fro and SQNR >= --min-sqnr over the whole output (the worst
      sequence is named). With --or-within-model F, (b) also passes where o's rel_fro is at most
      F times the model's (long random sequences average many near-equal weights, so a format's
      loss relative to the output grows with the length: the bounds by bit width do not hold
      there, for the model either).
A failing check names the worst sequence, head, row and channel; the script exits 1.

--selftest [f32|f16|bf16] first writes --out/o.npy from the model itself (varlen_attention in
float32 on the same operands, rounded to that type): the end-to-end test of these scripts
before the lowering exists.
"""

import json
import os
import sys

import numpy as np

import qcheck
from qattn import format as F

p = qcheck.parser(__doc__)
p.add_argument("--in", dest="inp", required=True, help="make_paged.py's --out")
p.add_argument("--out", required=True, help="qattn-run's --output-dir (o.npy)")
p.add_argument("--art", help="the compiled artifact: o's dtype from its manifest")
p.add_argument("--function", help="the function in --art")
qcheck.add_attention_args(p)
p.add_argument("--selftest", nargs="?", const="f32", choices=("f32", "f16", "bf16"))
p.add_argument("--or-within-model", type=float, metavar="F",
               help="(b) also passes where rel_fro <= F x the model's rel_fro")
a = p.parse_args()
c = qcheck.Checker(a.case)


def load(name, dtype=None):
    return qcheck.load(a.inp, name, dtype)


def have(name):
    return os.path.exists(os.path.join(a.inp, name + ".npy"))


# ---- schemes, checked against make_paged's ---------------------------------------------------
def spec_of(text):
    """A scheme with its defaults spelled out, without the encoder fit (decoding is the same)."""
    spec = qcheck.parse_spec(text)
    spec.pop("fit", None)
    if spec:
        spec = dict(dict(scale="f32", gran="block"), **spec)
        if "bits" in spec:
            spec = dict(dict(order="lsb", anchor="zero"), **spec)
    return spec


case_file = os.path.join(a.inp, "case.json")
if os.path.exists(case_file):
    with open(case_file) as f:
        made = json.load(f)
    for flag, text in (("--q", a.q), ("--k", a.k), ("--v", a.v)):
        if spec_of(text) != spec_of(made[flag[2:]]):
            sys.exit(f"error: {flag} {text!r} is not make_paged's {made[flag[2:]]!r}")

qspec, kspec, vspec = (qcheck.parse_spec(t) for t in (a.q, a.k, a.v))

# ---- inputs and the model's dequantized operands ---------------------------------------------
kv_lens = load("kv_lens")
if kv_lens.dtype != np.int32 or kv_lens.ndim != 1:
    sys.exit(f"error: kv_lens holds {kv_lens.dtype} {kv_lens.shape}, expected int32 [B]")
page_table = load("page_table") if have("page_table") else None
if page_table is not None and page_table.dtype != np.int32:
    sys.exit(f"error: page_table holds {page_table.dtype}, expected int32")
lens = kv_lens.tolist()


def operand(prefix, spec):
    """(per-sequence dequantized [Hkv, L_b, d] float32, description)."""
    s1 = qcheck.stage1_spec(spec)
    scales = load(f"{prefix}_scales")
    if scales.dtype != qcheck.DTYPES[s1["scale_dtype"]]:
        sys.exit(f"error: {prefix}_scales holds {scales.dtype}, the scheme says {s1['scale_dtype']}")
    kw = dict(kv_lens=kv_lens, page_table=page_table)
    if have(f"{prefix}_buffer"):
        kw.update(buffer=load(f"{prefix}_buffer", "i8"), buffer_scale=load(f"{prefix}_buffer_scale", "f32"))
    if "bits" in spec:
        kw.update(packed=load(f"{prefix}_codes", "i8"), s2=load(f"{prefix}_group_scales", "i8"),
                  z2=load(f"{prefix}_zeros", "i8"), **qcheck.stage2_kwargs(spec))
    else:
        kw.update(q8=load(f"{prefix}_data", "i8"))
    try:
        return F.paged_kv(scales, s1["block"], s1["granularity"], **kw), "buffer" in kw
    except ValueError as e:
        sys.exit(f"error: the model rejects the {prefix.upper()} inputs: {e}")


kd, buffered = operand("k", kspec)
vd, _ = operand("v", vspec)

if qspec:
    s1q = qcheck.stage1_spec(qspec)
    q8 = load("q", "i8")
    qd = F.stage1_dequantize(q8, load("q_scales"), s1q["block"], s1q["granularity"])
    q_float = load("q_float", "f32")
else:
    q_raw = load("q")
    qd = q_float = qcheck.as_f32(q_raw, qcheck.float_dtype_name(q_raw.dtype))
B, Hq, Nq, d = qd.shape
if len(lens) != B:
    sys.exit(f"error: kv_lens has {len(lens)} entries, q has batch {B}")
scale = qcheck.softmax_scale(a.scale, d)
smx = qcheck.softmax_kwargs(a.softmax)

# ---- the result ------------------------------------------------------------------------------
if a.selftest:
    o32 = F.varlen_attention(qd, kd, vd, scale, a.causal, dtype=np.float32, **smx)
    o_self = {"f32": lambda x: x, "f16": lambda x: x.astype(np.float16), "bf16": F.f32_to_bf16}[
        a.selftest](o32)
    os.makedirs(a.out, exist_ok=True)
    np.save(os.path.join(a.out, "o.npy"), o_self)
if a.art:
    o_dtype = qcheck.manifest_arg_dtype(a.art, a.function, "o")
else:
    raw = np.load(os.path.join(a.out, "o.npy"), mmap_mode="r")
    o_dtype = qcheck.float_dtype_name(raw.dtype)
    if o_dtype is None:
        sys.exit(f"error: o.npy holds {raw.dtype}")
o_raw = qcheck.load(a.out, "o", o_dtype)
o = (F.bf16_to_f32(o_raw) if o_dtype == "bf16" else o_raw).astype(np.float64)
if o.shape != qd.shape:
    c.line(False, "output shape", f"o is {o.shape}, expected [B, Hq, Nq, d] = {qd.shape}")
    c.finish()

# ---- (a) against the model on the same dequantized operands ----------------------------------
model = F.varlen_attention(qd, kd, vd, scale, a.causal, dtype=np.float64, **smx)
U = 2.0**-24
limit = np.zeros(o.shape)
empty = np.zeros((B, Nq), bool)  # rows that see no key
for b in range(B):
    seen = F.keys_seen(lens[b], Nq, a.causal)
    empty[b] = seen == 0
    if lens[b] == 0:
        continue
    k64, v64 = kd[b].astype(np.float64), vd[b].astype(np.float64)
    kabs = np.repeat(np.abs(k64), Hq // k64.shape[0], axis=0)  # [Hq, L, d]
    mag = abs(scale) * np.matmul(np.abs(qd[b].astype(np.float64)), np.swapaxes(kabs, -1, -2))
    mag = np.where(np.arange(lens[b])[None, :] < seen[:, None], mag, 0)  # [Hq, Nq, L]
    A = mag.max(-1, keepdims=True)
    limit[b] = (a.tol_score * A + a.tol_base) * U * float(np.max(np.abs(v64)))
limit += np.abs(model) * qcheck.output_ulp_factor(o_dtype) + qcheck.output_abs_floor(o_dtype)
err = np.abs(o - model)
rows = np.broadcast_to(~empty[:, None, :, None], o.shape)
ratio = np.where(rows, err / np.where(limit > 0, limit, np.inf), 0)
ratio = np.where(rows & ~np.isfinite(err), np.inf, ratio)  # NaN / inf output fails


def where(idx):
    b, h, i, ch = (int(t) for t in idx)
    return f"sequence {b} (L={lens[b]}), head {h}, row {i}, channel {ch}"


bad = rows & ~(err <= limit)
if bad.any():
    worst = np.unravel_index(int(np.argmax(ratio)), o.shape)
    per_seq = [f"{b}: {int(bad[b].sum())}" for b in range(B) if bad[b].any()]
    c.line(False, f"vs model on dequantized operands ({a.tol_score:g} A + {a.tol_base:g}) u max|V'|",
           f"{int(bad.sum())} of {int(rows.sum())} values exceed the bound (per sequence "
           f"{', '.join(per_seq)}); worst at {where(worst)}: {err[worst]:.3e} > {limit[worst]:.3e}, "
           f"o {o[worst]:.6g} model {model[worst]:.6g}")
else:
    c.line(True, f"vs model on dequantized operands ({a.tol_score:g} A + {a.tol_base:g}) u max|V'|",
           f"max err/bound {float(ratio.max()) if ratio.size else 0:.3f}, "
           f"{int(rows.sum() // d)} rows")
zero_rows = np.broadcast_to(empty[:, None, :, None], o.shape)
nonzero = zero_rows & (o != 0)
if nonzero.any():
    first = np.argwhere(nonzero)[0]
    c.line(False, "rows that see no key are 0",
           f"{int(nonzero.sum())} nonzero values, first at {where(first)}: {o[tuple(first)]!r}")
else:
    c.line(True, "rows that see no key are 0", f"{int(empty.sum()) * Hq} rows")

# ---- (b) against float64 attention on the unquantized inputs ---------------------------------
ref = F.varlen_attention(q_float, [load(f"kf_{b}", "f32") for b in range(B)],
                         [load(f"vf_{b}", "f32") for b in range(B)], scale, a.causal,
                         dtype=np.float64)
max_abs, rel, sqnr = qcheck.metrics(o, ref)
_, mrel, msqnr = qcheck.metrics(model, ref)
seq_rel = [qcheck.metrics(o[b], ref[b])[1] if np.any(ref[b]) else 0.0 for b in range(B)]
wb = int(np.argmax(seq_rel))
if not np.any(ref):  # every row sees no key: nothing to compare but zeros
    rel, sqnr = (0.0, float("inf")) if max_abs == 0 else (float("inf"), float("-inf"))
within_model = a.or_within_model is not None and rel <= a.or_within_model * mrel
c.line((rel <= a.max_rel_fro and sqnr >= a.min_sqnr) or within_model,
       f"vs float64 attention (rel_fro <= {a.max_rel_fro:g}, sqnr >= {a.min_sqnr:g} dB"
       + (f", or rel_fro <= {a.or_within_model:g} x the model's)" if a.or_within_model else ")"),
       f"max_abs={max_abs:.3e} rel_fro={rel:.3e} sqnr={sqnr:.1f} dB, worst sequence {wb} "
       f"(L={lens[wb]}) rel_fro={seq_rel[wb]:.3e}; model: rel_fro={mrel:.3e} sqnr={msqnr:.1f} dB")
c.finish()
