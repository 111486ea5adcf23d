"""qattn.paged on CPU tensors (test/Python/paged-cache.test runs it): PagedKVCache appends
against an independent NumPy model written from docs/FORMAT.md with qattn.format (one sequence
and one page at a time: buffer_quantize into the tail, stage1_quantize + stage2_quantize of whole
pages, the tail's scale as the stage-1 scale of a flushed page, the tail-scale policy of
docs/PYTHON.md), bit for bit; qattn.paged.decode (the cpu artifact, the reference lowering)
against qattn.format's paged_kv + varlen_attention of the same cache within check_paged.py's
bound, and against float attention of the unquantized K/V; the compile cache; the errors.

On CPU (the lit test) the decode is the cpu artifact. --device cuda runs the same on CUDA
tensors (the GPU machine, with the cuda artifacts that --precompile compiled into OUT_DIR/cache
on the MLIR machine): appends bit-exact against the same model, decode within serving.py's
bound for the tile kernels (they round Q and P to f16), plus an append and a decode captured in
a CUDA graph and replayed against eager calls, a two-layer step replayed while batch slots
leave and join, the same step under torch.compile (fullgraph; aot_eager and inductor) against
eager calls, an append under torch.cuda.set_sync_debug_mode ("error"), the debug checks, and
a bad page id without debug dropped, not written, and recorded in the cache's error flags (as
the torch-ops form records it on CPU).

usage: paged_cache.py OUT_DIR [--seed N] [--device cpu|cuda] [--precompile]"""

import argparse
import os
import sys
import time

import numpy as np
import torch

ap = argparse.ArgumentParser(usage=__doc__.splitlines()[-1][7:])
ap.add_argument("out")
ap.add_argument("--seed", type=int, default=23)
ap.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
ap.add_argument("--precompile", action="store_true",
                help="only compile the cuda artifacts that --device cuda needs into OUT/cache")
ARGS = ap.parse_args()
OUT, SEED = ARGS.out, ARGS.seed
DEV = torch.device(ARGS.device)
CUDA = DEV.type == "cuda"
os.environ["QATTN_CACHE_DIR"] = os.path.join(OUT, "cache")

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "python"))  # this checkout's package
from qattn import compiler, ir, paged  # noqa: E402
from qattn import format as F  # noqa: E402
from qattn.runtime import QAttnRuntimeError  # noqa: E402

sys.path.insert(0, HERE)
from testutil import expect  # noqa: E402

print(f"paged_cache: seed {SEED}, device {DEV}")
rng = np.random.default_rng(SEED)
U = 2.0**-24
# check_paged.py's bound (a): (TOL_SCORE A + TOL_BASE) 2^-24 max|V'|; serving.py widens it for
# the tile kernels on the GPU.
TOL_SCORE, TOL_BASE = (16384, 32768) if CUDA else (8, 64)


def host(t):
    return t.detach().cpu().numpy()


# --------------------------------------------------------------------------------------------
# The NumPy model of the cache
# --------------------------------------------------------------------------------------------


class Model:
    """What the pools and tails must hold, built token page by token page with qattn.format."""

    def __init__(self, scheme, num_pages, page, heads, d, headroom):
        self.s, self.page, self.heads, self.headroom = scheme, page, heads, np.float32(headroom)
        self.pool = [np.zeros((num_pages,) + tuple(shape[1:]),
                              np.float32 if dt == "f32" else np.int8)
                     for _, shape, dt in scheme.operands("x", 1, heads, page, d)]
        self.tail, self.scale, self.running, self.last, self.lens = {}, {}, {}, {}, {}
        self.d = d

    def row(self, b):
        if b not in self.tail:
            self.tail[b] = np.zeros((self.heads, self.page, self.d), np.int8)
            self.scale[b] = np.zeros(self.heads, np.float32)
            self.lens[b] = 0
        return b

    def write(self, page_id, q8, s1):
        s = self.s
        if s.bits:
            packed, s2, z2 = F.stage2_quantize(q8, list(s.bits), s.group, s.order, s.fit, s.anchor)
            parts = [packed.view(np.int8), s1, s2.view(np.int8), z2]
        else:
            parts = [q8, s1]
        for pool, part in zip(self.pool, parts):
            pool[page_id] = part[0]

    def append(self, b, x, table_row):
        """Sequence b appends x [H, n, d] (f32)."""
        self.row(b)
        p, n, i = self.page, x.shape[1], 0
        while i < n:
            lp, f = divmod(self.lens[b], p)
            m = min(p - f, n - i)
            chunk = x[:, i:i + m]
            a = np.abs(chunk).max(axis=(1, 2)).astype(np.float32)
            if f == 0 and m == p:  # a whole page of new tokens: stage 1 from the floats
                q8, s1 = F.stage1_quantize(chunk[None], self.s.block)
                self.write(table_row[lp], q8, s1)
                self.last[b] = a
            else:
                if f == 0:  # a tail page opens: its scale from the previous page's magnitude
                    ref = self.last[b] if lp >= 1 else a
                    opened = np.maximum(self.headroom * ref, a) / np.float32(127)
                    self.scale[b] = opened.astype(np.float32)
                    self.running[b] = a
                else:
                    self.running[b] = np.maximum(self.running[b], a)
                self.tail[b][:, f:f + m] = F.buffer_quantize(chunk[None], self.scale[b][None])[0]
                if f + m == p:  # the tail page filled: stage 2 of its int8 data, its scale
                    s1 = np.repeat(self.scale[b][None, :, None], p // self.s.block, axis=2)
                    self.write(table_row[lp], self.tail[b][None], s1)
                    self.last[b] = self.running[b]
            self.lens[b] += m
            i += m


def check_storage(cache, layer, models, lens, tag):
    """Pools bit for bit; tails' filled rows and their scales."""
    for which, model in zip("kv", models):
        for j, (got, want) in enumerate(zip(cache.pools(layer, which), model.pool)):
            got = host(got)
            assert got.shape == want.shape and got.dtype == want.dtype, (tag, which, j)
            if not np.array_equal(got.view(np.uint8), want.view(np.uint8)):
                bad = np.argwhere(got.view(np.uint8) != want.view(np.uint8))
                raise AssertionError(f"{tag}: {which} pool operand {j} differs at "
                                     f"{bad[:4].tolist()}")
        tail, scale = cache.tails(layer, which)
        for b, length in enumerate(lens):
            fill = length % cache.page_size
            if fill:
                assert np.array_equal(host(tail[b, :, :fill]), model.tail[b][:, :fill]), \
                    (tag, which, "tail", b)
                assert np.array_equal(host(scale[b]).view(np.uint32),
                                      model.scale[b].view(np.uint32)), (tag, which, "scale", b)


def check_decode(cache, layer, q, lens, table, causal, floats, tag, min_sqnr):
    """decode against the model on the same cache (check_paged.py's bound (a)) and against float
    attention of the unquantized K/V (SQNR)."""
    q, table = q.to(DEV), table.to(DEV)
    t0 = time.time()
    out = paged.decode(q, cache, layer, table, torch.tensor(lens, dtype=torch.int32, device=DEV),
                       causal=causal)
    if CUDA:
        torch.cuda.synchronize()
    took = time.time() - t0
    assert out.shape == q.shape and out.dtype == q.dtype, (tag, out.shape, out.dtype)
    q4 = host((q.unsqueeze(2) if q.dim() == 3 else q.transpose(1, 2)).float())
    o4 = host((out.unsqueeze(2) if out.dim() == 3 else out.transpose(1, 2)).float())
    lens_t = torch.tensor(lens, dtype=torch.int32, device=DEV)
    ks, vs = (cache.dequantize(layer, which, table, lens_t) for which in "kv")
    scale = 1 / np.sqrt(q4.shape[-1])
    ref = F.varlen_attention(q4, ks, vs, scale, causal)
    half_ulp = 2.0**-8 if q.dtype == torch.bfloat16 else U  # bf16 keeps 8 significant bits
    nq, group = q4.shape[2], q4.shape[1] // cache.num_kv_heads
    worst = 0.0
    for b, length in enumerate(lens):
        seen = F.keys_seen(length, nq, causal)
        vmax = float(np.abs(vs[b]).max()) if length else 0.0
        for h in range(q4.shape[1]):
            a = scale * (np.abs(q4[b, h]).astype(np.float64)
                         @ np.abs(ks[b][h // group]).T.astype(np.float64))
            for i in range(nq):
                score = a[i, :seen[i]].max() if seen[i] else 0
                bound = (TOL_SCORE * score + TOL_BASE) * U * vmax
                err = np.abs(o4[b, h, i] - ref[b, h, i])
                tol = bound + half_ulp * np.maximum(np.abs(ref[b, h, i]), np.abs(o4[b, h, i]))
                assert (err <= tol).all(), (tag, b, h, i, float(err.max()), float(tol.max()))
                worst = max(worst, float((err / np.maximum(tol, 1e-30)).max()))
    # Float attention of the unquantized data: what the format loses.
    fk = [x.astype(np.float64) for x in floats[0]]
    fv = [x.astype(np.float64) for x in floats[1]]
    exact = F.varlen_attention(q4.astype(np.float64), fk, fv, scale, causal)
    sqnr = 10 * np.log10((exact**2).sum() / ((o4 - exact) ** 2).sum())
    assert sqnr >= min_sqnr, (tag, sqnr)
    print(f"{tag}: decode B={len(lens)} lens {lens}: within the bound (worst {worst:.2f} of it), "
          f"SQNR {sqnr:.1f} dB against float attention, {took * 1e3:.0f} ms")
    return out


# --------------------------------------------------------------------------------------------
# The data and the tables
# --------------------------------------------------------------------------------------------


def float_kv(rows, heads, n, d):
    """K: normal with heavy tails and two outlier channels; V: normal."""
    k = rng.standard_normal((rows, heads, n, d)) + 0.1 * rng.standard_t(3, (rows, heads, n, d))
    k[..., 3] = 8 * k[..., 3] + 2
    k[..., 40 % d] *= 5
    return k.astype(np.float32), rng.standard_normal((rows, heads, n, d)).astype(np.float32)


def tables(final_lens, page, extra_pages, extra_cols):
    """Shuffled physical pages for every page a sequence will touch, -1 past them."""
    need = [-(-n // page) for n in final_lens]
    num_pages = sum(need) + extra_pages
    ids = iter(rng.permutation(num_pages).tolist())
    table = np.full((len(final_lens), max(need) + extra_cols), -1, np.int32)
    for b, k in enumerate(need):
        for j in range(k):
            table[b, j] = next(ids)
    return num_pages, torch.from_numpy(table)


class Run:
    """One cache, its models and the float tokens each sequence has appended."""

    def __init__(self, cache, layer, dtype, rows):
        self.cache, self.layer, self.dtype = cache, layer, dtype
        c = cache
        self.models = [Model(s, c.num_pages, c.page_size, c.num_kv_heads, c.head_dim, c.headroom)
                       for s in (c.scheme, c.v_scheme)]
        self.lens = [0] * rows
        empty = np.zeros((c.num_kv_heads, 0, c.head_dim), np.float32)
        self.floats = ([empty] * rows, [empty] * rows)  # K, V per sequence

    def append(self, table, counts, t, via_prefill=False):
        c, rows = self.cache, len(counts)
        k, v = float_kv(rows, c.num_kv_heads, t, c.head_dim)
        kt = torch.from_numpy(k).to(self.dtype).to(DEV)
        vt = torch.from_numpy(v).to(self.dtype).to(DEV)
        n = torch.tensor(counts, dtype=torch.int32, device=DEV)
        if via_prefill:
            c.prefill(self.layer, kt, vt, table.to(DEV), n)
        else:
            c.append(self.layer, kt, vt, table.to(DEV),
                     torch.tensor(self.lens, dtype=torch.int32, device=DEV), n)
        kf, vf = host(kt.float()), host(vt.float())  # what the cache saw, as f32
        for b, m in enumerate(counts):
            if m:
                for model, x, fl in zip(self.models, (kf, vf), self.floats):
                    model.append(b, x[b, :, :m], table[b].tolist())
                    fl[b] = np.concatenate([fl[b], x[b, :, :m]], axis=1)
                self.lens[b] += m

    def check(self, tag):
        check_storage(self.cache, self.layer, self.models, self.lens, tag)


def state(cache, layer):
    return [t.clone() for w in "kv" for t in cache.pools(layer, w) + list(cache.tails(layer, w))]


def unchanged(before, cache, layer):
    return all(torch.equal(a, b) for a, b in zip(before, state(cache, layer)))


# --------------------------------------------------------------------------------------------
# 1. The default scheme: ragged lengths 1, 15, 16, 17, 200, 330, bf16 K/V
# --------------------------------------------------------------------------------------------

HQ, HKV, D, P = 4, 2, 64, 64
FINAL = [1, 15, 16, 17, 200, 330]
NP_, TABLE = tables(FINAL, P, extra_pages=5, extra_cols=1)
cache = paged.PagedKVCache(None, 2, NP_, P, HKV, D, max_batch=8, device=DEV)
print(f"scheme {cache.scheme}, headroom {cache.headroom}, {NP_} pages, table {list(TABLE.shape)}")
# CHECK: scheme Scheme(bits=(4,), group=16, block=64, order='lsb_first', anchor='min', fit='mse', scale='f32', granularity='block'), headroom 2.0

if ARGS.precompile:  # the MLIR machine, for a later --device cuda run on the GPU machine
    for nq, dtype in ((1, torch.float32), (2, torch.bfloat16)):
        print(paged.precompile(cache, HQ, num_queries=nq, dtype=dtype, target="cuda"))
    sys.exit(0)

run = Run(cache, 1, torch.bfloat16, len(FINAL))
B = len(FINAL)

# Prompts: 130 = 2 whole pages + 2, 190 = 2 + 62, 16 in the tail.
run.append(TABLE, [1, 10, 16, 5, 130, 190], 190, via_prefill=True)
run.check("prefill")
print(f"prefill: pools and tails bit-exact, lens {run.lens}")
# CHECK: prefill: pools and tails bit-exact, lens [1, 10, 16, 5, 130, 190]


def queries(*shape):
    return torch.from_numpy(rng.standard_normal(shape).astype(np.float32))


t0 = time.time()
check_decode(cache, 1, queries(B, HQ, D), run.lens, TABLE, False, run.floats, "prefill", 14)
first_decode = time.time() - t0
# CHECK: prefill: decode B=6 lens [1, 10, 16, 5, 130, 190]: within the bound
entries = lambda: sorted(e for e in os.listdir(os.path.join(OUT, "cache", "paged"))  # noqa: E731
                         if not e.startswith("."))
print(f"compile cache: {len(entries())} artifact after the first decode")
# CHECK: compile cache: 1 artifact after the first decode

# Multi-token appends: 190 -> 198 crosses a page boundary (the tail fills and flushes in the
# call, 6 tokens open the next tail); 5 -> 13.
run.append(TABLE, [0, 5, 0, 8, 8, 8], 8)
run.check("append 8")
print(f"append 8: pools and tails bit-exact, lens {run.lens}")
# CHECK: append 8: pools and tails bit-exact, lens [1, 15, 16, 13, 138, 198]

# 198 -> 320: the tail fills (flush), page [256, 320) is wholly new (stage 1 from the floats),
# and the sequence ends on a page boundary (empty tail).
run.append(TABLE, [0, 0, 0, 0, 0, 122], 122)
run.check("append 122")
print(f"append 122: pools and tails bit-exact, lens {run.lens}")
# CHECK: append 122: pools and tails bit-exact, lens [1, 15, 16, 13, 138, 320]
check_decode(cache, 1, queries(B, HQ, D), run.lens, TABLE, False, run.floats, "append 122", 14)
# CHECK: append 122: decode B=6 lens [1, 15, 16, 13, 138, 320]: within the bound

# Decode steps, one token per sequence that has not reached its length: 138 -> 200 flushes at
# 192 in a one-token append, 320 -> 330 opens a tail after a wholly new page.
steps = 0
while run.lens != FINAL:
    run.append(TABLE, [int(n < f) for n, f in zip(run.lens, FINAL)], 1)
    steps += 1
    if steps % 16 == 0:
        run.check(f"step {steps}")
run.check("steps")
print(f"{steps} one-token steps: pools and tails bit-exact, lens {run.lens}")
# CHECK: 62 one-token steps: pools and tails bit-exact, lens [1, 15, 16, 17, 200, 330]
t0 = time.time()
check_decode(cache, 1, queries(B, HQ, D), run.lens, TABLE, False, run.floats, "final", 14)
second_decode = time.time() - t0
# CHECK: final: decode B=6 lens [1, 15, 16, 17, 200, 330]: within the bound
assert all(not t.any() for w in "kv" for t in cache.pools(0, w)), "layer 0 was written"

# A smaller batch (rows 0..3) and FlashAttention's [B, Nq, Hq, d] bf16 queries, causal.
check_decode(cache, 1, queries(4, 2, HQ, D).to(torch.bfloat16), run.lens[:4], TABLE[:4, :1],
             True, [f[:4] for f in run.floats], "bf16 causal", 14)
# CHECK: bf16 causal: decode B=4 lens [1, 15, 16, 17]: within the bound
print(f"compile cache: {len(entries())} artifacts, first decode {first_decode:.1f} s, "
      f"a later one {second_decode:.2f} s")
# CHECK: compile cache: 2 artifacts
assert len(entries()) == 2 and (CUDA or second_decode < first_decode)

# A new process finds the artifacts on disk: forget the loaded functions and forbid compiling.
paged._functions.clear()
real_compile = compiler.compile_module


def no_compile(*args, **kwargs):
    raise AssertionError("compiled again")


compiler.compile_module = no_compile
check_decode(cache, 1, queries(B, HQ, D), run.lens, TABLE, False, run.floats, "from disk", 14)
# CHECK: from disk: decode B=6 lens [1, 15, 16, 17, 200, 330]: within the bound
compiler.compile_module = real_compile
print(f"compile cache: {len(entries())} artifacts")
# CHECK: compile cache: 2 artifacts

# A machine without qattn-compile (the GPU machine) uses the artifacts carried over in the cache
# folder, and says what to do when there are none.
paged._functions.clear()
had_compiler = os.environ.get("QATTN_COMPILE")
os.environ["QATTN_COMPILE"] = os.path.join(OUT, "no-such-qattn-compile")
check_decode(cache, 1, queries(B, HQ, D), run.lens, TABLE, False, run.floats, "no compiler", 14)
# CHECK: no compiler: decode B=6 lens [1, 15, 16, 17, 200, 330]: within the bound
os.environ["QATTN_CACHE_DIR"] = os.path.join(OUT, "empty-cache")
expect(compiler.CompileError, lambda: paged.precompile(cache, 8, target="cpu"))
# CHECK: CompileError: QATTN_COMPILE={{.*}}no-such-qattn-compile: not an executable file; and {{.*}}empty-cache/paged holds no artifact of this module (compile it where qattn-compile is, with qattn.paged.precompile, and carry {{.*}}empty-cache over)
os.environ["QATTN_CACHE_DIR"] = os.path.join(OUT, "cache")
if had_compiler is None:
    del os.environ["QATTN_COMPILE"]
else:
    os.environ["QATTN_COMPILE"] = had_compiler

# --------------------------------------------------------------------------------------------
# 2. Errors, each before anything changes (on CUDA: the debug checks)
# --------------------------------------------------------------------------------------------

cache.debug = True  # changes nothing on CPU, which always checks
T_ = TABLE.to(DEV)
lens_t = torch.tensor(run.lens, dtype=torch.int32, device=DEV)
one = torch.zeros((B, HKV, 1, D), device=DEV)
before = state(cache, 1)
# Sequence 4 (200 tokens) appending 56 fills page 3 of its row: its id is checked.
bad = T_.clone()
bad[4, 3] = NP_
n56 = torch.tensor([0, 0, 0, 0, 56, 0], dtype=torch.int32, device=DEV)
k56 = torch.zeros((B, HKV, 56, D), device=DEV)
expect(ValueError, lambda: cache.append(1, k56, k56, bad, lens_t, n56))
# CHECK: ValueError: block_table[4, 3] = {{[0-9]+}} is outside the pool of {{[0-9]+}} pages (sequence 4 fills that page in this append)
bad[4, 3] = -1
expect(ValueError, lambda: cache.append(1, k56, k56, bad, lens_t, n56))
# CHECK: ValueError: block_table[4, 3] = -1 is outside the pool
expect(ValueError, lambda: cache.append(1, one, one, T_[:, :5], lens_t))
# CHECK: ValueError: sequence 5: seq_lens[5] = 330 plus 1 new tokens exceed the block table's 5 pages of 64 tokens
expect(ValueError, lambda: cache.append(1, one, one, T_, lens_t - 2 * lens_t))
# CHECK: ValueError: seq_lens[0] = -1 is negative
expect(ValueError, lambda: cache.append(1, one, one, T_, lens_t,
                                        torch.full((B,), 2, dtype=torch.int32, device=DEV)))
# CHECK: ValueError: num_tokens[0] = 2 is outside [0, T = 1]
expect(TypeError, lambda: cache.append(1, one.int(), one.int(), T_, lens_t))
# CHECK: TypeError: k: expected float32, float16 or bfloat16, got torch.int32
expect(TypeError, lambda: cache.append(1, one, one, T_.long(), lens_t))
# CHECK: TypeError: block_table: expected dtype torch.int32, got torch.int64
expect(TypeError, lambda: cache.append(1, one, one, T_, lens_t.float()))
# CHECK: TypeError: seq_lens: expected dtype torch.int32, got torch.float32
expect(ValueError, lambda: cache.append(1, one, one, T_, lens_t[:3]))
# CHECK: ValueError: seq_lens: expected shape [6], got [3]
expect(ValueError, lambda: cache.append(1, torch.zeros((B, HKV + 1, 1, D), device=DEV), one, T_,
                                        lens_t))
# CHECK: ValueError: k: expected shape [B, Hkv = 2, T >= 1, d = 64], got [6, 3, 1, 64]
expect(ValueError, lambda: cache.append(1, one, torch.zeros((B, HKV, 2, D), device=DEV), T_,
                                        lens_t))
# CHECK: ValueError: v: shape [6, 2, 2, 64] differs from k's [6, 2, 1, 64]
expect(ValueError, lambda: cache.append(1, one.to("meta"), one, T_, lens_t))
# CHECK: ValueError: k: on meta, the cache is on {{cpu|cuda:0}}
expect(ValueError, lambda: cache.append(2, one, one, T_, lens_t))
# CHECK: ValueError: layer: expected an int in [0, 2), got 2
nine = torch.zeros((9, HKV, 1, D), device=DEV)
expect(ValueError, lambda: cache.append(1, nine, nine, T_, lens_t))
# CHECK: ValueError: k: batch 9 exceeds the cache's max_batch 8
assert unchanged(before, cache, 1), "a refused append changed the cache"
qf = torch.zeros((B, HQ, D), device=DEV)
bad_read = T_.clone()
bad_read[5, 2] = 99
expect(ValueError, lambda: paged.decode(qf, cache, 1, bad_read, lens_t))
# CHECK: ValueError: block_table[5, 2] = 99 is outside the pool of {{[0-9]+}} pages (sequence 5 reads it)
expect(ValueError, lambda: paged.decode(qf, cache, 1, T_[:, :4], lens_t))
# CHECK: ValueError: sequence 5: seq_lens[5] = 330 needs 5 full pages, the block table has 4
expect(ValueError, lambda: cache.dequantize(1, "k", bad_read, lens_t))
# CHECK: ValueError: block_table[5, 2] = 99 is outside the pool of {{[0-9]+}} pages (sequence 5 reads it)
expect(ValueError, lambda: cache.dequantize(1, "q", T_, lens_t))
# CHECK: ValueError: which: expected 'k' or 'v', got 'q'
expect(ValueError, lambda: cache.dequantize(1, "v", T_, lens_t[None]))
# CHECK: ValueError: seq_lens: expected shape [?], got [1, 6]
expect(TypeError, lambda: paged.decode(qf.double(), cache, 1, T_, lens_t))
# CHECK: TypeError: q: expected float32, float16 or bfloat16, got torch.float64
expect(ValueError, lambda: paged.decode(torch.zeros((B, 3, D), device=DEV), cache, 1, T_, lens_t))
# CHECK: ValueError: q: expected B >= 1 and Nq >= 1 queries of Hq heads (a multiple of Hkv = 2) of d = 64, got [6, 3, 64]
expect(ValueError, lambda: paged.PagedKVCache(ir.Scheme(block=48, group=16), 1, 4, 64, 2, 64,
                                              max_batch=1))
# CHECK: ValueError: page_size (64) must be a multiple of the scheme's stage-1 block (48)
expect(ValueError, lambda: paged.PagedKVCache(ir.Scheme(scale="f16"), 1, 4, 64, 2, 64,
                                              max_batch=1))
# CHECK: ValueError: scheme: the paged cache keeps f32 block scales

# A caller's workspace (FlashInfer's habit): the split scratch of a call lives there; decode
# with one equals decode without. CPU functions need none (0 bytes); on CUDA two streams run
# the function at once, each with its own workspace.
q_ws = queries(B, HQ, D).to(DEV)
need = paged.workspace_bytes(q_ws, cache, T_)
assert (need > 0) == CUDA, need
ws = torch.empty(max(need, 1), dtype=torch.uint8, device=DEV)
plain = paged.decode(q_ws, cache, 1, T_, lens_t)
assert torch.equal(plain, paged.decode(q_ws, cache, 1, T_, lens_t, workspace=ws))
print("workspace: decode with a caller's workspace equals decode without")
# CHECK: workspace: decode with a caller's workspace equals decode without
expect(TypeError, lambda: paged.decode(q_ws, cache, 1, T_, lens_t, workspace=[0]))
# CHECK: TypeError: workspace: expected a torch.Tensor, got list
if CUDA:
    expect(QAttnRuntimeError, lambda: paged.decode(q_ws, cache, 1, T_, lens_t,
                                                   workspace=ws[:-1]))
    q_two = queries(B, HQ, D).to(DEV)
    plain_two = paged.decode(q_two, cache, 1, T_, lens_t)
    ws_two = torch.empty_like(ws)
    streams = torch.cuda.Stream(), torch.cuda.Stream()
    torch.cuda.synchronize()
    for _ in range(3):
        with torch.cuda.stream(streams[0]):
            out_one = paged.decode(q_ws, cache, 1, T_, lens_t, workspace=ws)
        with torch.cuda.stream(streams[1]):
            out_two = paged.decode(q_two, cache, 1, T_, lens_t, workspace=ws_two)
        torch.cuda.synchronize()
        assert torch.equal(out_one, plain) and torch.equal(out_two, plain_two)
    print(f"cuda: two streams at once, a workspace of {need} bytes each")

if CUDA:
    # Without debug a bad page id is not checked: its page goes to the extra page, no fault.
    cache.debug = False
    bad[4, 3] = NP_ + 1000
    cache.append(1, k56, k56, bad, lens_t, n56)
    torch.cuda.synchronize()
    assert all(torch.equal(a, b) for a, b in zip(before[:4] + before[6:10],
                                                 cache.pools(1, "k") + cache.pools(1, "v"))), \
        "a dropped page was written into the pool"
    print("cuda: a bad page id without debug is dropped")

# Unchecked appends (CUDA without debug; on CPU the test turns the host checks off, so the
# torch-ops form runs unchecked) record what they drop or clamp in cache.errors, per layer.
loose = paged.PagedKVCache(None, 2, NP_, P, HKV, D, max_batch=8, device=DEV)
loose.debug, loose._host_checks = False, False
loose.check_errors()  # nothing yet
bad[4, 3] = NP_ + 1000
loose.append(1, k56, k56, bad, lens_t, n56)
print(f"unchecked errors flags {loose.errors.tolist()}")
# CHECK: unchecked errors flags [0, 1]
expect(ValueError, loose.check_errors)
# CHECK: ValueError: appends without checks dropped or clamped writes: layer 1: a page id outside [0, num_pages) in a page that filled (debug=True names the row)
loose.check_errors()  # cleared by the call that raised
loose.append(0, one, one, T_[:, :5], lens_t)  # sequence 5: 330 + 1 > 5 pages of 64
loose.append(0, one, one, T_, lens_t - 2 * lens_t)  # seq_lens[0] = -1
loose.append(1, one, one, T_, lens_t, torch.full_like(lens_t, 2))  # num_tokens 2 > T = 1
expect(ValueError, loose.check_errors)
# CHECK: ValueError: appends without checks dropped or clamped writes: layer 0: a sequence longer than its block table, a negative seq_lens or a num_tokens outside [0, T]; layer 1: a negative seq_lens or a num_tokens outside [0, T] (debug=True names the row)
loose.append(1, one, one, T_, lens_t)
loose.check_errors()
print("unchecked appends: errors recorded, raised once, cleared")
# CHECK: unchecked appends: errors recorded, raised once, cleared

# --------------------------------------------------------------------------------------------
# 3. Other schemes: int8-only K (block 32), mixed 4/2-bit msb_first V with the min/max fit and
#    the zero grid (group 8), f32 K/V, headroom 1.5; rows moved between batch slots
# --------------------------------------------------------------------------------------------

k8 = ir.Scheme(bits=(), block=32)
v42 = ir.Scheme(bits=(4, 2), group=8, block=32, order="msb_first")
FINAL2 = [70, 3, 128, 64]
NP2, TABLE2 = tables(FINAL2, P, extra_pages=2, extra_cols=0)
# Only pages that fill are read, by append and decode alike: tail pages may have no page yet.
TABLE2[0, 1] = TABLE2[1, 0] = -1
cache2 = paged.PagedKVCache(k8, 1, NP2, P, HKV, D, max_batch=5, v_scheme=v42, headroom=1.5,
                            device=DEV)
run2 = Run(cache2, 0, torch.float32, len(FINAL2))
run2.append(TABLE2, [40, 1, 64, 0], 64)
run2.append(TABLE2, [30, 2, 60, 64], 64)  # 40 -> 70 and 64 -> 124 cross a page boundary
while run2.lens != FINAL2:
    run2.append(TABLE2, [int(n < f) for n, f in zip(run2.lens, FINAL2)], 1)
run2.check("int8 K, 4/2-bit V")
print(f"int8 K, 4/2-bit V: pools and tails bit-exact, lens {run2.lens}")
# CHECK: int8 K, 4/2-bit V: pools and tails bit-exact, lens [70, 3, 128, 64]
swap = [1, 0, 2, 3]
if not CUDA:  # the GPU lowering takes uniform bit widths only
    check_decode(cache2, 0, queries(4, 2, HQ, D), run2.lens, TABLE2, True, run2.floats,
                 "int8 K, 4/2-bit V", 8)
    # Rows 0 and 1 swap slots (a batch reordered): the same sequences decode from their new rows.
    cache2.copy_rows([0, 1], [1, 0])
    check_decode(cache2, 0, queries(4, HQ, D), [run2.lens[i] for i in swap], TABLE2[swap],
                 False, [[f[i] for i in swap] for f in run2.floats], "moved rows", 8)
# CHECK: int8 K, 4/2-bit V: decode B=4 lens [70, 3, 128, 64]: within the bound
# CHECK: moved rows: decode B=4 lens [3, 70, 128, 64]: within the bound
# 3-bit K on the zero grid with the mse fit, 2-bit msb_first V on the min grid with min/max,
# pages of 32 with blocks of 16 (two blocks a page, f16 K/V): the pools and tails only.
k3 = ir.Scheme(bits=(3,), group=8, block=16, fit="mse")
v2 = ir.Scheme(bits=(2,), group=16, block=16, order="msb_first", anchor="min")
FINAL3 = [33, 95, 7]
NP3, TABLE3 = tables(FINAL3, 32, extra_pages=1, extra_cols=1)
cache3 = paged.PagedKVCache(k3, 1, NP3, 32, HKV, D, max_batch=3, v_scheme=v2, device=DEV)
run3 = Run(cache3, 0, torch.float16, len(FINAL3))
run3.append(TABLE3, [20, 70, 0], 70, via_prefill=True)
run3.append(TABLE3, [13, 25, 7], 25)
run3.check("3-bit K, 2-bit V")
print(f"3-bit K, 2-bit V: pools and tails bit-exact, lens {run3.lens}")
# CHECK: 3-bit K, 2-bit V: pools and tails bit-exact, lens [33, 95, 7]
print(f"page bytes {cache.page_bytes()} (K+V, one layer), allocated {cache.allocated_bytes()}")
# CHECK: page bytes 10256 (K+V, one layer)

# --------------------------------------------------------------------------------------------
# 4. CUDA: no host sync in an append, and an append + decode step captured in a CUDA graph
# --------------------------------------------------------------------------------------------

if CUDA:
    def twin():
        return paged.PagedKVCache(None, 1, 16, P, HKV, D, max_batch=4, device=DEV)

    graphed, eager = twin(), twin()
    table = torch.tensor([[0, 1, -1], [2, 3, -1], [4, 5, -1], [6, 7, 8]], dtype=torch.int32,
                         device=DEV)
    k0, v0 = (torch.from_numpy(x).to(DEV, torch.bfloat16) for x in float_kv(4, HKV, 127, D))
    lens0 = torch.tensor([60, 63, 1, 127], dtype=torch.int32, device=DEV)
    for c in (graphed, eager):
        c.prefill(0, k0, v0, table, lens0)
    lens = lens0.clone()  # the graph's inputs: lengths, new K/V, queries
    k_in = torch.zeros((4, HKV, 1, D), dtype=torch.bfloat16, device=DEV)
    v_in, q_in = torch.zeros_like(k_in), torch.zeros((4, HQ, D), device=DEV)
    paged.decode(q_in, graphed, 0, table, lens)  # loads the function, reserves its scratch
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    graphed.append(0, k_in, v_in, table, lens, torch.zeros(4, dtype=torch.int32, device=DEV))
    torch.cuda.set_sync_debug_mode("default")
    print("cuda: an append without host syncs")
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        graphed.append(0, k_in, v_in, table, lens)
        out_g = paged.decode(q_in, graphed, 0, table, lens + 1)
    for step in range(6):  # rows 0, 1 and 3 fill their tail pages (flushes inside the graph)
        k1, v1 = (torch.from_numpy(x).to(DEV, torch.bfloat16) for x in float_kv(4, HKV, 1, D))
        q1 = queries(4, HQ, D).to(DEV)
        k_in.copy_(k1), v_in.copy_(v1), q_in.copy_(q1)
        graph.replay()
        eager.append(0, k1, v1, table, lens)
        out_e = paged.decode(q1, eager, 0, table, lens + 1)
        lens += 1
        torch.cuda.synchronize()
        for w in "kv":
            for a, b in zip(graphed.pools(0, w) + list(graphed.tails(0, w)),
                            eager.pools(0, w) + list(eager.tails(0, w))):
                assert torch.equal(a, b), ("graph", step, w)
        assert torch.equal(out_g, out_e), ("graph output", step, (out_g - out_e).abs().max())
    print("cuda: 6 graph replays of append + decode equal eager calls")

    # A whole decode step (append + decode of every layer) captured once, replayed while
    # sequences leave and join, as an engine runs a fixed batch of slots under one graph: a slot
    # whose sequence finished idles at length 0 with no new token (num_tokens 0) until the
    # engine prefills a new prompt into it, outside the graph, in pages it hands out (here the
    # pages the leaving sequence freed). Lengths, table and token counts are device tensors that
    # the host changes in place between replays; the eager twin runs the same calls unrecorded.
    LAYERS = 2

    def twin2():
        return paged.PagedKVCache(None, LAYERS, 16, P, HKV, D, max_batch=4, device=DEV)

    graphed, eager = twin2(), twin2()
    table = torch.tensor([[0, 1, 2], [3, 4, 5], [6, 7, 8], [-1, -1, -1]], dtype=torch.int32,
                         device=DEV)
    lens = torch.tensor([62, 1, 100, 0], dtype=torch.int32, device=DEV)  # slot 3 idle
    ntok = torch.tensor([1, 1, 1, 0], dtype=torch.int32, device=DEV)

    def prompt(row, n):
        """Prefills an n-token prompt into slot `row` of both caches (the other rows untouched)."""
        only, before = torch.zeros_like(lens), lens.clone()
        only[row], before[row] = n, 0
        for layer in range(LAYERS):
            k, v = (torch.from_numpy(x).to(DEV, torch.bfloat16) for x in float_kv(4, HKV, n, D))
            for c in (graphed, eager):
                c.append(layer, k, v, table, before, only)

    for row, n in enumerate(lens.tolist()):
        if n:
            prompt(row, n)
    k_in = torch.zeros((LAYERS, 4, HKV, 1, D), dtype=torch.bfloat16, device=DEV)
    v_in, q_in = torch.zeros_like(k_in), torch.zeros((LAYERS, 4, HQ, D), device=DEV)

    def step(c, ks, vs, qs, table, lens, ntok):
        """One decode step of every layer: append each slot's new token, then attend."""
        outs = []
        for layer in range(LAYERS):
            c.append(layer, ks[layer], vs[layer], table, lens, ntok)
            outs.append(paged.decode(qs[layer], c, layer, table, lens + ntok))
        return outs

    def step_inputs():
        """Fresh new tokens and queries of every layer: K, V [L, 4, Hkv, 1, d], Q [L, 4, Hq, d]."""
        kv = np.stack([np.stack(float_kv(4, HKV, 1, D)) for _ in range(LAYERS)])  # [L, 2, ..]
        ks, vs = (torch.from_numpy(kv[:, i]).to(DEV, torch.bfloat16) for i in range(2))
        return ks, vs, torch.stack([queries(4, HQ, D) for _ in range(LAYERS)]).to(DEV)

    def same_step(c, ref, outs, ref_outs, lens, what):
        """``c`` holds ``ref``'s bytes, ``outs`` equal ``ref_outs`` in the rows of sequences
        of ``lens`` > 0 and are 0 in the idle slots (FORMAT.md: a row that sees no key)."""
        live = lens > 0
        for layer in range(LAYERS):
            for w in "kv":
                for a, b in zip(c.pools(layer, w) + list(c.tails(layer, w)),
                                ref.pools(layer, w) + list(ref.tails(layer, w))):
                    assert torch.equal(a, b), (what, "cache", layer, w)
            o, r = outs[layer][live], ref_outs[layer][live]
            assert torch.isfinite(o).all() and torch.equal(o, r), \
                (what, "output", layer, (o - r).abs().max())
            assert not outs[layer][~live].any(), (what, "idle slot output", layer)

    for layer in range(LAYERS):  # loads the function, reserves its scratch (slot 3: 0 keys)
        paged.decode(q_in[layer], graphed, layer, table, lens + ntok)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        outs_g = step(graphed, k_in, v_in, q_in, table, lens, ntok)
    # (step, what happens before it): slot 1 leaves after step 2, idles at step 3 and takes a
    # 70-token prompt in pages 4, 3, 9 before step 4; slot 3 joins with 130 tokens (two pages and
    # two tail rows) before step 5; slot 0 fills its first tail page at step 2.
    events = {3: ("leave", 1), 4: ("join", 1, 70, [4, 3, 9]), 5: ("join", 3, 130, [10, 11, 12])}
    checked = 0
    for s in range(8):
        ev = events.get(s)
        if ev and ev[0] == "leave":
            lens[ev[1]], ntok[ev[1]] = 0, 0
            table[ev[1]] = -1
        elif ev:
            _, row, n, pages = ev
            table[row] = torch.tensor(pages, dtype=torch.int32, device=DEV)
            prompt(row, n)
            lens[row], ntok[row] = n, 1
        ks, vs, qs = step_inputs()
        k_in.copy_(ks), v_in.copy_(vs), q_in.copy_(qs)
        graph.replay()
        outs_e = step(eager, ks, vs, qs, table, lens, ntok)
        lens += ntok
        torch.cuda.synchronize()
        same_step(graphed, eager, outs_g, outs_e, lens, ("join/leave graph", s))
        checked += LAYERS * int((lens > 0).sum())
    graphed.check_errors()
    print(f"cuda: 8 replays of a {LAYERS}-layer step while slots leave and join equal eager "
          f"calls ({checked} live rows checked, idle slots 0)")

    # torch.compile: the same step traced whole (fullgraph=True: append and decode are one
    # custom op each), through aot_eager and inductor, against eager calls bit for bit over
    # three steps, one of which fills slot 0's tail page.
    if hasattr(torch.library, "custom_op"):
        for backend in ("aot_eager", "inductor"):
            torch._dynamo.reset()
            graphed, eager = twin2(), twin2()  # prompt() writes both
            table = torch.tensor([[0, 1, 2], [3, 4, 5], [6, 7, 8], [9, 10, 11]],
                                 dtype=torch.int32, device=DEV)
            lens = torch.tensor([62, 5, 100, 0], dtype=torch.int32, device=DEV)
            ntok = torch.tensor([1, 1, 1, 0], dtype=torch.int32, device=DEV)
            for row, n in enumerate(lens.tolist()):
                if n:
                    prompt(row, n)
            f = torch.compile(step, fullgraph=True, backend=backend)
            for s in range(3):
                ks, vs, qs = step_inputs()
                outs_c = f(graphed, ks, vs, qs, table, lens, ntok)
                outs_e = step(eager, ks, vs, qs, table, lens, ntok)
                lens += ntok
                torch.cuda.synchronize()
                same_step(graphed, eager, outs_c, outs_e, lens, ("torch.compile", backend, s))
            graphed.check_errors()
            print(f"cuda: torch.compile(fullgraph=True, backend={backend!r}) of a {LAYERS}-layer "
                  "append + decode step equals eager calls")
print("paged_cache: all checks passed")
# CHECK: paged_cache: all checks passed
