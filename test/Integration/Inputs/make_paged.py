"""Seeded inputs of one qattn.attention case with per-sequence lengths, paged (--page P) or
contiguous (--page 0, capacity --capacity), optionally with the int8 decode buffer (--buffer).
Writes DIR/<name>.npy named like the op's operands (qattn-run --input <name>=DIR/<name>.npy):

  q               [B, Hq, Nq, d] f32 | f16 (--q-dtype); int8 with --q block=.. (then q_scales
                  [B, Hq, ceil(Nq/block)(, d)] and q_float, the unquantized f32 queries)
  k_codes         [NP, P, R] int8 (unsigned content)        stage 2 (--k with bits=..)
  k_scales        [NP, Hkv, P/block] (gran=channel: [NP, Hkv, P/block, d]) f32 | f16
  k_group_scales  [NP, Hkv, P/group, d] int8 (unsigned content)
  k_zeros         [NP, Hkv, P/group, d] int8
  k_data          [NP, Hkv, P, d] int8 + k_scales               int8 only (--k without bits)
  v_...           likewise for --v
  k_buffer, v_buffer [B, Hkv, Nb, d] int8, k_buffer_scale, v_buffer_scale [B, Hkv] f32 (--buffer;
                  Nb = P paged, --buffer-size contiguous)
  kv_lens         [B] int32
  page_table      [B, MP] int32 (paged only)
In the contiguous form NP -> B and P -> N (the capacity). Also written: kf_<b>, vf_<b> (the
unquantized f32 keys and values of sequence b, [Hkv, L_b, d]) and case.json (the options).

Data: per sequence, float K (normal with heavy tails and d/8 outlier channels per head, the same
channels in every sequence, like real K caches) and V (normal) of L_b tokens. The first C_b tokens
(all L_b without a buffer, L_b - L_b mod Nb with one) are quantized as one contiguous sequence by
the model (stage1_quantize, then stage2_quantize with --fit) and cut into pages placed at shuffled
physical ids of a pool of NP = pages needed + --pages-extra pages. The last L_b - C_b tokens are
buffer rows 0 .., quantized by buffer_quantize with a fixed per-(b, head) scale: 1.25 x the
largest stage-1 scale of the head's last cached block, or max|tail| / 127 without a cached block.
Everything the op must never read holds garbage, so that a lowering that reads it is caught:
unused pages, rows / blocks / groups past C_b, buffer rows past the fill, and the buffer scale of
an empty tail hold random bytes (codes, int8) or huge random values (float scales; NaN with
--garbage nan); table entries past the read ones hold -1.
"""

import argparse
import json
import math
import os

import numpy as np

import qcheck
from qattn import format as F


def ints(text):
    return [int(s) for s in text.split(",") if s != ""]


def scheme(text, fit):
    """--k / --v: qcheck's key=value spelling, plus the encoder fit (fit=mse, or --fit)."""
    spec = qcheck.parse_spec(text)
    if "block" not in spec:
        raise SystemExit(f"error: scheme {text!r} has no block=")
    s = dict(qcheck.stage1_spec(spec), stage2="bits" in spec)
    if s["stage2"]:
        if "group" not in spec:
            raise SystemExit(f"error: scheme {text!r} has bits= but no group=")
        s.update(bits=spec["bits"], group=spec["group"], order=qcheck.order_name(spec),
                 anchor=spec.get("anchor", "zero"), fit=spec.get("fit", fit))
        if s["block"] % s["group"]:
            raise SystemExit(f"error: group {s['group']} does not divide block {s['block']}")
    return s


p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
p.add_argument("--out", required=True)
p.add_argument("--seed", type=int, required=True)
p.add_argument("--batch-lens", default="1,15,16,17,1000,4097", help="L_b, one sequence per entry")
p.add_argument("--hq", type=int, default=8)
p.add_argument("--hkv", type=int, default=2)
p.add_argument("--nq", type=int, default=1)
p.add_argument("--d", type=int, default=64)
p.add_argument("--q", default="", help="empty: float q; else block=B[,scale=..][,gran=..] (int8 q)")
p.add_argument("--q-dtype", default="f32", choices=("f32", "f16"))
p.add_argument("--k", required=True, help="block=B[,scale=f32|f16][,gran=block|channel]"
               "[,bits=4-2..,group=G,order=lsb|msb,anchor=zero|min,fit=minmax|mse]")
p.add_argument("--v", required=True, help="as --k")
p.add_argument("--page", type=int, default=0, help="page size P; 0: contiguous form")
p.add_argument("--capacity", type=int, help="contiguous N (default: the longest length rounded "
               "up to the blocks)")
p.add_argument("--pages-extra", type=int, default=3, help="unused pages in the pool")
p.add_argument("--max-pages", type=int, help="MP (default: the most pages a sequence reads + 1)")
p.add_argument("--buffer", action="store_true")
p.add_argument("--buffer-size", type=int, help="contiguous Nb (default: the blocks' lcm)")
p.add_argument("--fit", default="minmax", choices=("minmax", "mse"))
p.add_argument("--garbage", default="random", choices=("random", "nan"))
a = p.parse_args()

rng = np.random.default_rng(a.seed)
lens = ints(a.batch_lens)
B, HQ, HKV, NQ, D = len(lens), a.hq, a.hkv, a.nq, a.d
if B == 0 or min(lens) < 0:
    raise SystemExit("error: --batch-lens needs one or more lengths >= 0")
if HQ % HKV or D % 8:
    raise SystemExit("error: --hq must be a multiple of --hkv and --d of 8")
ks, vs = scheme(a.k, a.fit), scheme(a.v, a.fit)
blocks = math.lcm(ks["block"], vs["block"])
paged = a.page > 0
if paged and a.capacity is not None:
    raise SystemExit("error: --capacity is the contiguous form's (--page 0)")
if paged and a.buffer_size is not None and a.buffer_size != a.page:
    raise SystemExit("error: a paged cache's buffer is one page (--buffer-size = --page)")
if paged:
    if a.page % blocks:
        raise SystemExit(f"error: page size {a.page} is not a multiple of the blocks {blocks}")
    tokens = a.page
nb = None
if a.buffer:
    nb = a.page if paged else (a.buffer_size or blocks)
    if nb % blocks:
        raise SystemExit(f"error: buffer size {nb} is not a multiple of the blocks {blocks}")
cached = [int(F.cached_tokens(n, nb)) for n in lens]
if not paged:
    tokens = a.capacity if a.capacity is not None else -(-max(cached) // blocks) * blocks
    if tokens < max(cached):
        raise SystemExit(f"error: capacity {tokens} < the longest cached length {max(cached)}")
    if tokens == 0:
        tokens = blocks  # an empty cache still has a shape

# ---- float data --------------------------------------------------------------------------------
q_float = rng.standard_normal((B, HQ, NQ, D)).astype(np.float32)
outliers = [rng.choice(D, max(1, D // 8), replace=False) for _ in range(HKV)]
shifts = [rng.uniform(-5, 5, len(c)) for c in outliers]


def k_float(n):
    x = rng.standard_normal((HKV, n, D)) + 0.1 * rng.standard_t(3, (HKV, n, D))
    for h in range(HKV):
        x[h][:, outliers[h]] = 10 * x[h][:, outliers[h]] + shifts[h]
    return x.astype(np.float32)


kf = [k_float(n) for n in lens]
vf = [rng.standard_normal((HKV, n, D)).astype(np.float32) for n in lens]


def garbage(shape, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        return rng.integers(0, 256, shape, dtype=np.uint8).view(dtype)
    if a.garbage == "nan":
        return np.full(shape, np.nan, dtype)
    return (rng.uniform(1e3, 3e4, shape) * rng.choice([-1, 1], shape)).astype(dtype)


# ---- the quantized operands ------------------------------------------------------------------
def operand(s, prefix):
    """Per-page arrays of one of K / V: {name: (shape per page, token axis, tokens per entry, dtype)}."""
    nblk = -(-tokens // s["block"])
    s1 = (HKV, nblk, D) if s["granularity"] == "channel" else (HKV, nblk)
    out = {f"{prefix}_scales": (s1, 1, s["block"], qcheck.DTYPES[s["scale_dtype"]])}
    if s["stage2"]:
        r, _ = F.row_bytes(D, s["bits"], HKV)
        ng = -(-tokens // s["group"])
        out[f"{prefix}_codes"] = ((tokens, r), 0, 1, np.int8)
        out[f"{prefix}_group_scales"] = ((HKV, ng, D), 1, s["group"], np.int8)
        out[f"{prefix}_zeros"] = ((HKV, ng, D), 1, s["group"], np.int8)
    else:
        out[f"{prefix}_data"] = ((HKV, tokens, D), 1, 1, np.int8)
    return out


def quantize(x, s, prefix):
    """The model's contiguous operand of one sequence's cached tokens x [Hkv, C, d]."""
    q8, s1 = F.stage1_quantize(x[None], s["block"], s["scale_dtype"], s["granularity"])
    out = {f"{prefix}_scales": s1[0]}
    if s["stage2"]:
        packed, s2, z2 = F.stage2_quantize(q8, s["bits"], s["group"], s["order"], s["fit"],
                                           s["anchor"])
        out.update({f"{prefix}_codes": packed[0].view(np.int8),
                    f"{prefix}_group_scales": s2[0].view(np.int8), f"{prefix}_zeros": z2[0]})
    else:
        out[f"{prefix}_data"] = q8[0]
    return out, s1[0]


pages_needed = [int(F.pages_read(n, tokens, nb)) for n in lens] if paged else [1] * B
n_pool = sum(pages_needed) + a.pages_extra if paged else B
layout = {**operand(ks, "k"), **operand(vs, "v")}
arrays = {name: garbage((n_pool,) + shp, dt) for name, (shp, _, _, dt) in layout.items()}
if paged:
    mp = a.max_pages if a.max_pages is not None else max(pages_needed) + 1
    if mp < max(pages_needed):
        raise SystemExit(f"error: --max-pages {mp} < the {max(pages_needed)} pages a sequence reads")
    table = np.full((B, mp), -1, np.int32)
    physical = iter(rng.permutation(n_pool).tolist())

buf_rows = {"k": garbage((B, HKV, nb, D), np.int8), "v": garbage((B, HKV, nb, D), np.int8)} \
    if nb else None
buf_scale = {"k": garbage((B, HKV), np.float32), "v": garbage((B, HKV), np.float32)} if nb else None

for b, (n, c) in enumerate(zip(lens, cached)):
    for prefix, s, x in (("k", ks, kf[b]), ("v", vs, vf[b])):
        s1 = None
        if c:
            parts, s1 = quantize(x[:, :c], s, prefix)
            for j in range(pages_needed[b] if paged else 1):
                if paged:
                    if prefix == "k":
                        table[b, j] = next(physical)
                    pid, t0 = int(table[b, j]), j * tokens
                else:
                    pid, t0 = b, 0
                t1 = min(c, t0 + tokens)
                for name, part in parts.items():
                    _, axis, per, _ = layout[name]
                    first, last = t0 // per, -(-t1 // per)
                    dst = [slice(None)] * part.ndim
                    dst[axis] = slice(0, last - first)
                    src = [slice(None)] * part.ndim
                    src[axis] = slice(first, last)
                    arrays[name][pid][tuple(dst)] = part[tuple(src)]
        if nb and n > c:
            tail = x[:, c:n]
            if s1 is not None:  # the last cached block (C_b is a whole number of blocks)
                last = np.asarray(s1[:, -1], np.float32).reshape(HKV, -1).max(axis=1)
                scale = (np.float32(1.25) * last).astype(np.float32)
            else:
                scale = (np.abs(tail).reshape(HKV, -1).max(axis=1) / np.float32(127)).astype(np.float32)
            buf_scale[prefix][b] = scale
            buf_rows[prefix][b : b + 1, :, : n - c] = F.buffer_quantize(tail[None], scale[None])

# ---- queries, lengths, table, buffers ----------------------------------------------------------
qspec = qcheck.parse_spec(a.q)
if qspec:
    s1q = qcheck.stage1_spec(qspec)
    q8, qscale = F.stage1_quantize(q_float, s1q["block"], s1q["scale_dtype"], s1q["granularity"])
    arrays.update(q=q8, q_scales=qscale, q_float=q_float)
else:
    arrays["q"] = q_float.astype(np.float16 if a.q_dtype == "f16" else np.float32)
arrays["kv_lens"] = np.array(lens, np.int32)
if paged:
    arrays["page_table"] = table
if nb:
    arrays.update(k_buffer=buf_rows["k"], k_buffer_scale=buf_scale["k"], v_buffer=buf_rows["v"],
                  v_buffer_scale=buf_scale["v"])
for b in range(B):
    arrays[f"kf_{b}"], arrays[f"vf_{b}"] = kf[b], vf[b]

os.makedirs(a.out, exist_ok=True)
# A case written earlier into the same directory must not leave operands this one lacks (a
# buffer, a page table, more sequences): check_paged.py goes by which files exist.
OPERANDS = ("q", "q_scales", "q_float", "kv_lens", "page_table")
OPERANDS += tuple(f"{x}_{n}" for x in "kv" for n in ("codes", "scales", "group_scales", "zeros",
                                                      "data", "buffer", "buffer_scale"))
for old in os.listdir(a.out):
    stem = old[:-4] if old.endswith(".npy") else None
    if stem in OPERANDS or (stem and stem[:3] in ("kf_", "vf_") and stem[3:].isdigit()):
        os.remove(os.path.join(a.out, old))
for name, arr in arrays.items():
    np.save(os.path.join(a.out, name + ".npy"), arr)
case = dict(seed=a.seed, lens=lens, hq=HQ, hkv=HKV, nq=NQ, d=D, q=a.q, k=a.k, v=a.v,
            page=a.page, tokens=tokens, pool=n_pool, max_pages=int(table.shape[1]) if paged else None,
            buffer=nb, fit=a.fit, garbage=a.garbage)
with open(os.path.join(a.out, "case.json"), "w") as f:
    json.dump(case, f, indent=1)

form = (f"paged P={tokens} NP={n_pool} MP={table.shape[1]} ({sum(pages_needed)} pages read)"
        if paged else f"contiguous N={tokens}")
buf = f", buffer Nb={nb} (fills {','.join(str(n - c) for n, c in zip(lens, cached))})" if nb else ""
print(f"make_paged: B={B} L={a.batch_lens} Hq={HQ} Hkv={HKV} Nq={NQ} d={D} "
      f"q {a.q or a.q_dtype}, K {a.k}, V {a.v}, {form}{buf}, seed {a.seed} -> {a.out}")
