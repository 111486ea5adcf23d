# RUN: %python %s
# REQUIRES: numpy
"""Per-sequence lengths and the paged cache (FORMAT.md): ``paged_kv`` on a pool made by
quantizing every sequence contiguously with the model and cutting it into pages at shuffled
physical ids equals the contiguous model, for every scheme (stage 2 with 2/3/4/mixed bits, both
orders and anchors, block and channel scales, f16 scales; int8 only); the identity table with
P = N equals the contiguous form; a decode buffer at several fill levels; every byte that is
never read is garbage (NaN scales, random codes, bad table entries) and changing it changes
nothing; ``varlen_attention`` against a plain loop (empty rows 0, causal alignment per sequence);
the ValueErrors for bad tables, lengths and shapes; and make_paged.py + check_paged.py (the
attention lit tests' scripts) end to end against the model, a corrupted page caught. Fresh data
every run: the seed is printed (pass it as the first argument to repeat a run)."""

import math
import os
import secrets
import subprocess
import sys
import tempfile

import numpy as np

from qattn import format as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
from testutil import sas_term64  # noqa: E402

SEED = int(sys.argv[1]) if len(sys.argv) > 1 else secrets.randbits(32)
print(f"format_paged: seed {SEED}")
rng = np.random.default_rng(SEED)

HKV, D = 2, 64
LENS = [1, 15, 16, 17, 64, 65, 1000]

# bits None: int8 only (stage 1). fit picks the encoder (the stored format decodes the same).
SCHEMES = [
    dict(bits=[4], group=16, block=16, order="lsb_first", anchor="zero", gran="block", scale="f32"),
    dict(bits=[2], group=8, block=32, order="msb_first", anchor="min", gran="channel", scale="f16"),
    dict(bits=[4, 2], group=16, block=64, order="lsb_first", anchor="zero", gran="block",
         scale="f16", fit="mse"),
    dict(bits=[3], group=4, block=16, order="msb_first", anchor="zero", gran="channel", scale="f32"),
    dict(bits=None, block=16, gran="channel", scale="f32"),
    dict(bits=None, block=32, gran="block", scale="f16"),
]


def name(sc):
    if sc["bits"] is None:
        return f"int8 block {sc['block']} {sc['gran']} {sc['scale']}"
    bits = "/".join(map(str, sc["bits"]))
    return (f"{bits}-bit g{sc['group']} block {sc['block']} {sc['order']} anchor {sc['anchor']} "
            f"{sc['gran']} {sc['scale']}")


def keys(n):
    """Float K [1, Hkv, n, d]: normal with two outlier channels (never all zeros)."""
    x = rng.standard_normal((1, HKV, n, D)) + 0.1 * rng.standard_t(3, (1, HKV, n, D))
    x[..., 3] = 8 * x[..., 3] + 2
    x[..., 40] *= 5
    return x.astype(np.float32)


def quantize(x, sc):
    """The model's contiguous operand of one sequence: {name: [1, ...] array}."""
    q8, s1 = F.stage1_quantize(x, sc["block"], sc["scale"], sc["gran"])
    if sc["bits"] is None:
        return dict(s1=s1, q8=q8)
    packed, s2, z2 = F.stage2_quantize(q8, sc["bits"], sc["group"], sc["order"],
                                       sc.get("fit", "minmax"), sc["anchor"])
    return dict(s1=s1, packed=packed.view(np.int8), s2=s2.view(np.int8), z2=z2)


def dequantized(parts, sc, **kw):
    """The model's contiguous K' of a quantized operand (``dequantized_kv``)."""
    if sc["bits"] is None:
        return F.dequantized_kv(parts["s1"], sc["block"], q8=parts["q8"], **kw)
    return F.dequantized_kv(parts["s1"], sc["block"], packed=parts["packed"], s2=parts["s2"],
                            z2=parts["z2"], bits=sc["bits"], group=sc["group"],
                            order=sc["order"], anchor=sc["anchor"], **kw)


def layout(sc, tokens):
    """Per-page (or per-sequence) shapes of every operand array, with its token axis (counted
    with the page axis) and how many tokens one entry on that axis covers."""
    blocks = -(-tokens // sc["block"])
    s1 = (HKV, blocks, D) if sc["gran"] == "channel" else (HKV, blocks)
    out = dict(s1=(s1, 2, sc["block"]))
    if sc["bits"] is None:
        out["q8"] = ((HKV, tokens, D), 2, 1)
    else:
        r, _ = F.row_bytes(D, sc["bits"], HKV)
        groups = -(-tokens // sc["group"])
        out["packed"] = ((tokens, r), 1, 1)
        out["s2"] = ((HKV, groups, D), 2, sc["group"])
        out["z2"] = ((HKV, groups, D), 2, sc["group"])
    return out


def garbage(shape, dtype, g):
    """What unread bytes hold: random codes and int8 values; NaN or huge scales."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        return g.integers(0, 256, shape, dtype=np.uint8).view(dtype)
    x = g.uniform(-6e4, 6e4, shape)
    x[g.random(shape) < 0.5] = np.nan
    return x.astype(dtype)


def entries(per, c, j, page):
    """The entries of page j of a sequence with c cached tokens: (first sequence entry, count)."""
    first = j * page // per
    return first, min(-(-c // per), (j + 1) * page // per) - first


def paged_pool(seqs, lens, page, sc, extra, g, max_pages=None):
    """Pool arrays [NP, ...] and table [B, MP]: sequence b's parts (c_b tokens) cut into pages
    placed at shuffled physical ids; unread entries garbage, unread table entries random
    (-1, huge, negative)."""
    need = [-(-c // page) for c in lens]
    n_pool = sum(need) + extra
    ids = g.permutation(n_pool)
    lay = layout(sc, page)
    dtypes = {k: v.dtype for k, v in seqs[0].items()} if seqs else None
    pool = {k: garbage((n_pool,) + shp, dtypes[k], g) for k, (shp, _, _) in lay.items()}
    mp = max_pages if max_pages is not None else max(need) + 2
    table = g.choice(np.array([-1, -7, n_pool, n_pool + 100, 2**31 - 1], np.int64), (len(lens), mp))
    nxt = 0
    for b, (parts, c) in enumerate(zip(seqs, lens)):
        for j in range(need[b]):
            pid = int(ids[nxt])
            nxt += 1
            table[b, j] = pid
            for k, (_, axis, per) in lay.items():
                first, count = entries(per, c, j, page)
                src = np.take(parts[k][0], np.arange(first, first + count), axis=axis - 1)
                dst = [slice(None)] * (pool[k].ndim - 1)
                dst[axis - 1] = slice(0, count)
                pool[k][pid][tuple(dst)] = src
    return pool, table.astype(np.int32), ids[nxt:]


def contiguous_pool(seqs, lens, n, sc, g):
    """Contiguous operand [B, n, ...]: sequence b in batch row b, the rest garbage."""
    lay = layout(sc, n)
    pool = {k: garbage((len(lens),) + shp, seqs[0][k].dtype, g) for k, (shp, _, _) in lay.items()}
    for b, (parts, c) in enumerate(zip(seqs, lens)):
        for k, (_, axis, per) in lay.items():
            dst = [slice(None)] * (pool[k].ndim - 1)
            dst[axis - 1] = slice(0, -(-c // per))
            pool[k][b][tuple(dst)] = parts[k][0]
    return pool


def model(pool, sc, **kw):
    if sc["bits"] is None:
        return F.paged_kv(pool["s1"], sc["block"], sc["gran"], q8=pool["q8"], **kw)
    return F.paged_kv(pool["s1"], sc["block"], sc["gran"], packed=pool["packed"], s2=pool["s2"],
                      z2=pool["z2"], bits=sc["bits"], group=sc["group"], order=sc["order"],
                      anchor=sc["anchor"], **kw)


def same(got, want, what):
    assert len(got) == len(want), what
    for b, (x, y) in enumerate(zip(got, want)):
        assert x.dtype == np.float32 and x.shape == y.shape, (what, b, x.shape, y.shape)
        assert np.array_equal(x, y), (what, b, float(np.nanmax(np.abs(x - y))))
        assert np.all(np.isfinite(x)), (what, b)


def expect_error(call, text):
    """``call`` raises ValueError whose message contains ``text``."""
    try:
        call()
    except ValueError as e:
        assert text in str(e), f"expected {text!r} in {str(e)!r}"
        return
    raise AssertionError(f"expected ValueError ({text})")


# ---- paged == contiguous, every scheme, several page sizes ---------------------------------
lens_all = [0] + LENS
count = 0
for sc in SCHEMES:
    floats = [keys(n) for n in lens_all]
    seqs = [quantize(x, sc) if x.shape[2] else None for x in floats]
    nonempty = [s for s in seqs if s is not None]
    filler = {k: v[:, :0] if k == "packed" else v[:, :, :0] for k, v in nonempty[0].items()}
    seqs = [s if s is not None else filler for s in seqs]
    want = [dequantized(s, sc)[0] if n else np.zeros((HKV, 0, D), np.float32)
            for s, n in zip(seqs, lens_all)]
    kv_lens = np.array(lens_all, np.int32)
    for page in (sc["block"], 2 * sc["block"], 128):
        if page % sc["block"]:
            continue
        pool, table, _ = paged_pool(seqs, lens_all, page, sc, 3, rng)
        got = model(pool, sc, kv_lens=kv_lens, page_table=table)
        same(got, want, f"{name(sc)} P={page}")
        # Fresh garbage and a new placement of the pages: the same keys.
        pool2, table2, _ = paged_pool(seqs, lens_all, page, sc, 5, np.random.default_rng(rng.integers(2**32)))
        same(model(pool2, sc, kv_lens=kv_lens, page_table=table2), want, f"{name(sc)} P={page} (regarbled)")
        # The same table with int64 entries and kv_lens as a list.
        same(model(pool, sc, kv_lens=list(lens_all), page_table=table.astype(np.int64)), want,
             f"{name(sc)} P={page} (int64)")
        count += 1
    # The contiguous form with lengths: capacity the longest sequence, rounded up, and ragged.
    for n in (-(-max(lens_all) // sc["block"]) * sc["block"], max(lens_all) + 3):
        cont = contiguous_pool(seqs, lens_all, n, sc, rng)
        same(model(cont, sc, kv_lens=kv_lens), want, f"{name(sc)} contiguous N={n}")
    print(f"paged_kv: {name(sc)}: pages of {lens_all} keys at shuffled ids (3-5 unused pages) "
          "== contiguous model, bit-exact; contiguous form with lengths too OK")
print(f"paged_kv: {count} (scheme, page size) pools, all unread bytes garbage (NaN scales) OK")

# ---- identity table with P = N == the contiguous form --------------------------------------
for sc in (SCHEMES[0], SCHEMES[1], SCHEMES[4]):
    n = 4 * sc["block"]
    lens = [n, 1, n - 1, 0, sc["block"] + 1]
    floats = [keys(n) for _ in lens]
    full = [quantize(x, sc) for x in floats]
    cut = [quantize(x[:, :, :c], sc) if c else None for x, c in zip(floats, lens)]
    cut = [c if c is not None else {k: v[:, :0] if k == "packed" else v[:, :, :0] for k, v in full[0].items()}
           for c in cut]
    cont = contiguous_pool(cut, lens, n, sc, rng)
    ident = np.arange(len(lens), dtype=np.int32)[:, None]
    got_id = model(cont, sc, kv_lens=np.array(lens, np.int32), page_table=ident)
    got_ct = model(cont, sc, kv_lens=np.array(lens, np.int32))
    same(got_id, got_ct, f"{name(sc)} identity table")
    # Today's form (no kv_lens) on full sequences == dequantized_kv, per batch row.
    whole = {k: np.concatenate([f[k] for f in full]) for k in full[0]}
    ref = dequantized(whole, sc)
    same(model(whole, sc), [ref[b] for b in range(len(lens))], f"{name(sc)} no kv_lens")
    same(model(whole, sc, kv_lens=np.full(len(lens), n, np.int32), page_table=ident),
         [ref[b] for b in range(len(lens))], f"{name(sc)} identity table, full lengths")
print("paged_kv: identity table with P = N == contiguous form with lengths; full lengths and no "
      "kv_lens == dequantized_kv OK")

# ---- decode buffer at several fill levels --------------------------------------------------
for sc in (SCHEMES[0], SCHEMES[1], SCHEMES[4]):
    page = 2 * sc["block"]
    lens = []
    for c in (0, page, 3 * page):
        for t in (0, 1, page // 2, page - 1):
            lens.append(c + t)
    lens.append(2 * page)  # a buffer that just filled has been flushed: C = L, fill 0
    floats = [keys(n) for n in lens]
    cached = [int(F.cached_tokens(n, page)) for n in lens]
    assert cached[-1] == lens[-1] and cached[3] == 0 and cached[5] == page
    seqs = [quantize(x[:, :, :c], sc) if c else None for x, c in zip(floats, cached)]
    proto = next(s for s in seqs if s is not None)
    seqs = [s if s is not None else {k: v[:, :0] if k == "packed" else v[:, :, :0] for k, v in proto.items()}
            for s in seqs]
    bscale = rng.uniform(0.02, 0.1, (len(lens), HKV)).astype(np.float32)
    buf = garbage((len(lens), HKV, page, D), np.int8, rng)
    for b, (x, n, c) in enumerate(zip(floats, lens, cached)):
        buf[b : b + 1, :, : n - c] = F.buffer_quantize(x[:, :, c:n], bscale[b : b + 1])
    # Buffer scales of sequences with an empty tail are never read.
    empty_tail = np.array([n == c for n, c in zip(lens, cached)])
    bscale_g = bscale.copy()
    bscale_g[empty_tail] = np.nan
    want = []
    for b, (s, n, c) in enumerate(zip(seqs, lens, cached)):
        head = dequantized(s, sc)[0] if c else np.zeros((HKV, 0, D), np.float32)
        tail = buf[b, :, : n - c].astype(np.float32) * bscale[b][:, None, None]
        want.append(np.concatenate([head, tail], axis=1))
        # Spelled out for one channel: key j < C from the pages, j >= C buffer row j - C.
        for j in (0, c - 1, c, n - 1):
            if 0 <= j < n:
                if j < c:
                    assert want[-1][1, j, 5] == head[1, j, 5]
                else:
                    assert want[-1][1, j, 5] == np.float32(buf[b, 1, j - c, 5]) * bscale[b, 1]
    kv_lens = np.array(lens, np.int32)
    pool, table, _ = paged_pool(seqs, cached, page, sc, 3, rng)
    same(model(pool, sc, kv_lens=kv_lens, page_table=table, buffer=buf, buffer_scale=bscale_g),
         want, f"{name(sc)} paged + buffer")
    cont = contiguous_pool(seqs, cached, max(cached) + sc["block"], sc, rng)
    same(model(cont, sc, kv_lens=kv_lens, buffer=buf, buffer_scale=bscale_g), want,
         f"{name(sc)} contiguous + buffer")
    # A smaller contiguous buffer (Nb = block): other split, same keys by definition.
    nb = sc["block"]
    cached_nb = [int(F.cached_tokens(n, nb)) for n in lens]
    seqs_nb = [quantize(x[:, :, :c], sc) if c else {k: v[:, :0] if k == "packed" else v[:, :, :0]
                                                   for k, v in proto.items()}
               for x, c in zip(floats, cached_nb)]
    buf_nb = garbage((len(lens), HKV, nb, D), np.int8, rng)
    for b, (x, n, c) in enumerate(zip(floats, lens, cached_nb)):
        buf_nb[b : b + 1, :, : n - c] = F.buffer_quantize(x[:, :, c:n], bscale[b : b + 1])
    got = model(contiguous_pool(seqs_nb, cached_nb, max(lens), sc, rng), sc, kv_lens=kv_lens,
                buffer=buf_nb, buffer_scale=bscale)
    for b, (x, n, c) in enumerate(zip(got, lens, cached_nb)):
        assert x.shape == (HKV, n, D)
        assert np.array_equal(x[:, c:], buf_nb[b, :, : n - c].astype(np.float32) * bscale[b][:, None, None])
    print(f"paged_kv: {name(sc)}: decode buffer (Nb = P = {page}) filled 0, 1, P/2, P-1 after "
          f"0, 1, 3 pages, and just flushed: cache keys then buffer rows 0 .. fill - 1, garbage "
          "rows and unread scales ignored; contiguous form with Nb = P and Nb = block OK")

# ---- varlen_attention against a plain loop ---------------------------------------------------


def naive(q, ks, vs, scale, causal, term=math.exp):
    """Per sequence, query head and row: keys j < L_b, causal j <= i + L_b - Nq; no key: 0."""
    B, Hq, Nq, d = q.shape
    out = np.zeros(q.shape)
    for b in range(B):
        k, v = ks[b].astype(np.float64), vs[b].astype(np.float64)
        hkv, n = k.shape[0], k.shape[1]
        for h in range(Hq):
            kh = h // (Hq // hkv)
            for i in range(Nq):
                js = [j for j in range(n) if not causal or j <= i + n - Nq]
                if not js:
                    continue
                s = [scale * math.fsum(float(q[b, h, i, c]) * float(k[kh, j, c]) for c in range(d))
                     for j in js]
                m = max(s)
                w = [term(x - m) for x in s]
                tot = math.fsum(w)
                for c in range(d):
                    out[b, h, i, c] = math.fsum(wj * v[kh, j, c] for wj, j in zip(w, js)) / tot
    return out



lens = [0, 1, 2, 3, 4, 5, 9]
NQ, HQ, d = 4, 4, 8
ks = [rng.standard_normal((2, n, d)) for n in lens]
vs = [rng.standard_normal((2, n, d)) for n in lens]
q = rng.standard_normal((len(lens), HQ, NQ, d)) * 2
for causal in (False, True):
    for smx, term in ((dict(), math.exp), (dict(softmax="sas", threshold=-3.0, degree=3),
                                            lambda x: sas_term64(x, -3.0, 3))):
        o = F.varlen_attention(q, ks, vs, 0.3, causal, **smx)
        ref = naive(q, ks, vs, 0.3, causal, term)
        assert o.dtype == np.float64 and o.shape == q.shape
        assert np.max(np.abs(o - ref)) <= 1e-12, (causal, smx)
        for b, n in enumerate(lens):
            seen = F.keys_seen(n, NQ, causal)
            want_seen = [min(n, max(0, i + n - NQ + 1)) if causal else n for i in range(NQ)]
            assert seen.tolist() == want_seen
            assert np.all(o[b][:, seen == 0] == 0) and np.all(np.any(o[b][:, seen > 0] != 0, axis=-1))
            if n >= NQ or (n > 0 and not causal):  # every row sees a key: plain attention
                assert np.array_equal(o[b : b + 1], F.attention(q[b : b + 1], ks[b][None], vs[b][None],
                                                                0.3, causal, **smx))
        o32 = F.varlen_attention(q.astype(np.float32), ks, vs, 0.3, causal, dtype=np.float32, **smx)
        assert o32.dtype == np.float32 and np.max(np.abs(o32 - o)) <= 1e-5
# Causal rows that see no key: with L_b = 2 and Nq = 4 rows 0 and 1 are 0, row 2 sees key 0 only.
o = F.varlen_attention(q, ks, vs, 0.3, True)
assert np.all(o[2, :, :2] == 0)
assert np.allclose(o[2, 0, 2], vs[2][0, 0]) and np.allclose(o[2, 3, 2], vs[2][1, 0])
print(f"varlen_attention: lengths {lens}, Nq = {NQ}, GQA 2, causal / not, exact and SAS == plain "
      "loop (1e-12); rows that see no key are 0; causal j <= i + L_b - Nq per sequence; f32 "
      "within 1e-5 OK")

# ---- errors --------------------------------------------------------------------------------
sc = SCHEMES[0]
lens = [17, 40, 5]
seqs = [quantize(keys(n), sc) for n in lens]
page = 16
pool, table, _ = paged_pool(seqs, lens, page, sc, 2, rng, max_pages=3)
kv = np.array(lens, np.int32)
same(model(pool, sc, kv_lens=kv, page_table=table), [dequantized(s, sc)[0] for s in seqs], "errors base")
n_pool = pool["packed"].shape[0]
for bad_id in (n_pool, -1, n_pool + 7):
    t = table.copy()
    t[1, 2] = bad_id  # read: 40 keys are pages 0, 1, 2
    expect_error(lambda: model(pool, sc, kv_lens=kv, page_table=t), f"page_table[1, 2] = {bad_id}")
t = table.copy()
t[1, 2] = table[0, 0]  # sequences may share a page: sequence 1's keys 32..39 are rows 0..7 of it
got = model(pool, sc, kv_lens=kv, page_table=t)
assert np.array_equal(got[1][:, 32:], dequantized(seqs[0], sc)[0][:, :8])
t = table.copy()
t[2, 1] = -1  # not read (5 keys: one page)
model(pool, sc, kv_lens=kv, page_table=t)
expect_error(lambda: model(pool, sc, kv_lens=np.array([17, 49, 5], np.int32), page_table=table),
             "need 4 pages, the page table has MP = 3")
expect_error(lambda: model(pool, sc, kv_lens=np.array([17, -1, 5], np.int32), page_table=table),
             "kv_lens[1] = -1 is negative")
expect_error(lambda: model(pool, sc, kv_lens=np.array([17, 40], np.int32), page_table=table),
             "kv_lens has 2 entries")
expect_error(lambda: model(pool, sc, kv_lens=kv.astype(np.float32), page_table=table),
             "1-D integer array")
expect_error(lambda: model(pool, sc, page_table=table), "a page table needs kv_lens")
expect_error(lambda: model(pool, sc, kv_lens=kv, page_table=table.astype(np.float32)),
             "page_table must be an integer array")
expect_error(lambda: model(pool, sc, kv_lens=kv, page_table=table[0]),
             "page_table must be an integer array")
cut = {k: (v[:, :8] if k == "packed" else v[:, :, : (1 if k == "s1" else 8 // sc["group"])])
       for k, v in pool.items()}
expect_error(lambda: model(cut, sc, kv_lens=np.array([1, 1, 1], np.int32), page_table=table),
             "page size P = 8 is not a multiple of the stage-1 block 16")
sc_g = dict(sc, block=8, group=16)
expect_error(lambda: model({k: (v[:, :, :2] if k == "s1" else v) for k, v in pool.items()}, sc_g,
                           kv_lens=kv, page_table=table), "group 16 does not divide the stage-1 block 8")
expect_error(lambda: model(dict(pool, s1=np.concatenate([pool["s1"]] * 2, axis=2)), sc, kv_lens=kv,
                           page_table=table),
             "s1: expected")
expect_error(lambda: model(dict(pool, z2=pool["z2"][:-1]), sc, kv_lens=kv, page_table=table),
             "s2, z2 [NP, Hkv, G, d]")
expect_error(lambda: model(dict(pool, s2=pool["s2"][:-1], z2=pool["z2"][:-1]), sc, kv_lens=kv,
                           page_table=table), "s2: expected")
buf = rng.integers(-127, 128, (3, HKV, 32, D), dtype=np.int8)
bs = np.ones((3, HKV), np.float32)
expect_error(lambda: model(pool, sc, kv_lens=kv, page_table=table, buffer=buf, buffer_scale=bs),
             "Nb = 32 != P = 16")
expect_error(lambda: model(pool, sc, kv_lens=kv, page_table=table, buffer=buf[:, :, :16]),
             "needs its [B, H] scale")
expect_error(lambda: model(pool, sc, kv_lens=kv, page_table=table, buffer=buf[:, :, :16],
                           buffer_scale=bs[:2]), "buffer_scale must be [B, Hkv]")
expect_error(lambda: model(pool, sc, kv_lens=kv, page_table=table, buffer=buf[:2, :, :16],
                           buffer_scale=bs[:2]), "does not match [B, Hkv, Nb, d]")
cont = contiguous_pool(seqs, lens, 48, sc, rng)
model(cont, sc, kv_lens=np.array([17, 0, 3], np.int32))
expect_error(lambda: model(cont, sc, kv_lens=np.array([49, 0, 3], np.int32)),
             "sequence 0: 49 cached keys exceed the cache's N = 48")
expect_error(lambda: model(cont, sc, kv_lens=kv, buffer=buf[:, :, :8], buffer_scale=bs),
             "must be a positive multiple of the stage-1 block 16")
expect_error(lambda: F.paged_kv(pool["s1"], 16, "channel", packed=pool["packed"], s2=pool["s2"],
                                z2=pool["z2"], bits=4, group=16, kv_lens=kv, page_table=table),
             "granularity 'channel' does not match")
expect_error(lambda: F.paged_kv(pool["s1"], 16, kv_lens=kv, page_table=table),
             "give packed (stage 2) or q8 (stage 1)")
expect_error(lambda: F.paged_kv(pool["s1"], 16, packed=pool["packed"], s2=pool["s2"], bits=4,
                                group=16, kv_lens=kv, page_table=table), "needs s2, z2, bits and group")
ks3 = [rng.standard_normal((2, n, d)) for n in (3, 0)]
expect_error(lambda: F.varlen_attention(rng.standard_normal((3, 4, 2, d)), ks3, ks3, 1.0, True),
             "expected 3 K and V arrays")
expect_error(lambda: F.varlen_attention(rng.standard_normal((2, 4, 2, d)), ks3, [ks3[0], ks3[0]],
                                        1.0, True), "sequence 1: K")
expect_error(lambda: F.varlen_attention(rng.standard_normal((2, 3, 2, d)), ks3, ks3, 1.0, False),
             "Hq = 3 is not a multiple of Hkv = 2")
print("paged_kv / varlen_attention: ValueErrors for a read page id outside the pool (NP, -1), too "
      "few table entries, negative / missing / non-integer lengths, a page size off the block, a "
      "group not dividing the block, pool shapes, a buffer that is not one page, a contiguous "
      "length past N; unread -1 entries and shared pages accepted OK")
# ---- the integration scripts end to end (test/Integration/Inputs, used by attention lit tests) -
# make_paged.py writes a case, check_paged.py --selftest writes o from the model and checks it;
# then one read K page's block scale is doubled and the check must fail, naming the sequence.
here = os.path.dirname(os.path.abspath(__file__))
inputs = os.path.join(here, "..", "Integration", "Inputs")
with tempfile.TemporaryDirectory() as tmp:
    case = os.path.join(tmp, "in")
    out = os.path.join(tmp, "out")
    make = [sys.executable, os.path.join(inputs, "make_paged.py"), "--seed", str(SEED % 1000),
            "--batch-lens", "0,1,17,40", "--hq", "4", "--hkv", "2", "--nq", "2", "--d", "32",
            "--k", "block=16,bits=4,group=8", "--v", "block=16,bits=2,group=8,order=msb,anchor=min",
            "--page", "16", "--buffer", "--out", case]
    subprocess.run(make, check=True, stdout=subprocess.DEVNULL)
    check = [sys.executable, os.path.join(inputs, "check_paged.py"), "--case", "e2e", "--in", case,
             "--out", out, "--k", "block=16,bits=4,group=8",
             "--v", "block=16,bits=2,group=8,order=msb,anchor=min", "--causal",
             "--max-rel-fro", "1", "--min-sqnr", "0"]
    r = subprocess.run(check + ["--selftest"], capture_output=True, text=True)
    assert r.returncode == 0 and "e2e: all checks passed" in r.stdout, r.stdout + r.stderr
    # (b) by bounds the model's o cannot meet fails; within 1.02x of the model's own loss passes.
    strict = check[:-4] + ["--max-rel-fro", "0", "--min-sqnr", "0"]
    r = subprocess.run(strict, capture_output=True, text=True)
    assert r.returncode == 1 and "vs float64 attention (rel_fro <= 0, sqnr >= 0 dB) FAIL" \
        in r.stdout, r.stdout + r.stderr
    r = subprocess.run(strict + ["--or-within-model", "1.02"], capture_output=True, text=True)
    assert r.returncode == 0 and "or rel_fro <= 1.02 x the model's) OK" in r.stdout, \
        r.stdout + r.stderr
    table = np.load(os.path.join(case, "page_table.npy"))
    ks1 = np.load(os.path.join(case, "k_scales.npy"))
    ks1[table[3, 1]] *= 2  # sequence 3 (40 keys: pages 0, 1 and 8 buffer rows)
    np.save(os.path.join(case, "k_scales.npy"), ks1)
    r = subprocess.run(check, capture_output=True, text=True)
    assert r.returncode == 1 and "dequantized operands (8 A + 64) u max|V'| FAIL" in r.stdout \
        and "worst at sequence 3 (L=40)" in r.stdout, r.stdout + r.stderr
print("make_paged.py + check_paged.py: a paged case with a buffer passes against the model "
      "(--selftest); a doubled scale of one read page fails, naming the sequence OK")
print("format_paged: PASS")
