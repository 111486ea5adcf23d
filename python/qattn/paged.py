"""A paged quantized KV cache for serving, and decode attention over it, on torch tensors.

The conventions are vLLM's, FlashInfer's and FlashAttention's (docs/PYTHON.md, "The paged KV
cache"):

>>> from qattn import paged
>>> cache = paged.PagedKVCache(None, num_layers=32, num_pages=4096, page_size=64,
...                            num_kv_heads=8, head_dim=128, max_batch=64, device="cuda")
>>> cache.append(layer, k, v, block_table, seq_lens)          # k, v [B, Hkv, T, d]
>>> out = paged.decode(q, cache, layer, block_table, seq_lens + T)   # q [B, Hq, d]

Storage, per layer, for K and for V:

* the **pool**: ``num_pages`` pages of ``page_size`` (P) tokens in exactly the operand layout of
  the paged form of docs/FORMAT.md ("Per-sequence lengths and the paged cache"), which the
  compiled function takes as it is: stage 2 ``codes [NP, P, R]``, ``scales [NP, Hkv, P/block]``
  f32, ``group_scales`` and ``zeros [NP, Hkv, P/group, d]`` int8; stage 1 only (``bits=()``)
  ``data [NP, Hkv, P, d]`` int8 and ``scales``. One more page, past the ``num_pages`` that the
  operands show, takes the writes that are masked off (below).
* the **tail**: the int8 decode buffer of FORMAT.md, one page per *batch row* (the buffer
  operands ``[B, Hkv, P, d]`` and their f32 scales ``[B, Hkv]`` are rows ``0 .. B-1`` of
  ``[max_batch, Hkv, P, d]`` and ``[max_batch, Hkv]``). Row ``b`` of ``block_table``,
  ``seq_lens``, ``k`` and ``q`` is tail row ``b``: a sequence keeps its row for its life, or
  is copied to another with ``copy_rows``.

``append`` writes every sequence's new tokens: those that land in the sequence's open tail page
are quantized with the tail's fixed scale (``qattn.buffer_append``); a tail page that fills is
compressed to stage 2 with the tail's scale as its stage-1 scale (``qattn.buffer_flush``, with
the scheme's ``fit``) into the physical page that ``block_table`` names; a page that lies wholly
inside one call's new tokens (a prompt's, or a long chunk's) is quantized from the float values
with its own stage-1 block scales (``qattn.progressive_quantize``). When a tail page opens its
scale becomes ``max(headroom * a_prev, a_new) / 127``: ``a_prev`` the largest float magnitude of
the sequence's previous page (per KV head; its block scale times 127), ``a_new`` that of the
tokens this call puts into the new page (``a_prev = a_new`` for a sequence's first page), and
``headroom`` 2 by default, docs/ACCURACY.md's best measured policy (``x2``).

On CUDA an append is one Triton launch per K and per V (``qattn.paged_append``, bit-exact with
the torch ops); on CPU tensors, without Triton, or with ``QATTN_PAGED_APPEND=torch`` it is torch
ops on the cache's device, with shapes that follow the call's static sizes only (B, T, the table
width): the pages an append could touch are computed for every row and written only where they
fill (masked writes go to the extra page). Neither form reads a length on the host, so a CUDA
append can be captured in a CUDA graph. On CPU tensors, or with ``debug=True``
(or ``QATTN_PAGED_DEBUG=1``), the lengths are read on the host first and a page id outside
``[0, num_pages)``, a sequence longer than the table, or a bad length raises ValueError before
anything changes; without it a CUDA append drops the writes of bad pages (memory stays safe,
that sequence's cache is wrong) and records what it met in ``errors``, one int32 of flags per
layer on the device (``ERROR_BAD_PAGE``, ``ERROR_PAST_TABLE``, ``ERROR_BAD_LENGTH``), which
``check_errors`` reads (a host sync: call it where the engine may wait, e.g. once per step
outside the captured graph) and raises for.

``decode`` compiles the paged decode function of the cache's schemes for the queries' heads,
count, dtype and causality once (``qattn.ir`` schemes, ``qattn-compile --target=cuda`` for CUDA
tensors, ``--target=cpu`` for CPU tensors), keeps the artifact on disk under
``$QATTN_CACHE_DIR`` (default ``~/.cache/qattn``), ``paged/<text>-<compiler>``, hashes of the
module text with the target and of the ``qattn-compile`` binary (its path, size and mtime), and
runs it on the current CUDA stream (CPU: synchronously, the reference lowering). One function
serves every batch, length, pool and table width. A machine without ``qattn-compile`` uses an
artifact of the same text carried over in the cache folder (``precompile`` writes them).

Past their argument checks, ``append`` and ``decode`` are one custom op each
(``qattn::paged_append``, which mutates the layer's pools, tails and error flags, and
``qattn::paged_decode``; the host checks of lengths and page ids run inside them): while
``torch.compile`` traces (``fullgraph=True`` works) they go into the graph as those ops; eager
calls run the ops' Python bodies directly, without the dispatcher's cost. With PyTorch before
2.4 they are plain functions.
"""

import copy
import hashlib
import itertools
import os
import shutil
import tempfile
import threading
import weakref
from typing import List, Optional

import torch

from qattn import compiler, ir, paged_append, torch_ops
from qattn import format as F
from qattn import torch_quant as TQ
from qattn.torch_quant import _round_div

__all__ = ["DEFAULT_SCHEME", "DEFAULT_HEADROOM", "PagedKVCache", "decode", "workspace_bytes",
           "precompile",
           "decode_function", "compiled_artifact", "cache_dir"]

# docs/ACCURACY.md: of the 4-bit g16 schemes measured on stories260K, the grid at the group
# minimum with the mse fit is best (bpq4-min-mse: top-1 61.8%, KL 0.409, means over seeds 0-2,
# against 59.1% / 0.564 for the plain grid), and twice the previous block's scale is the best
# decode-buffer policy that sees no future token (x2). The block is the serving cases' 64 (one
# block per 64-token page).
DEFAULT_SCHEME = ir.Scheme(bits=(4,), group=16, block=64, anchor="min", fit="mse")
DEFAULT_HEADROOM = 2.0
# The bits of PagedKVCache.errors.
ERROR_BAD_PAGE, ERROR_PAST_TABLE, ERROR_BAD_LENGTH = 1, 2, 4

_DEBUG_ENV = "QATTN_PAGED_DEBUG"
# The live caches by id: the custom ops (below) name their cache by a string, which
# torch.compile keeps as a constant of the graph.
_caches = weakref.WeakValueDictionary()
_cache_ids = itertools.count()
_Q_DTYPES = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16"}
_OPERAND_NAMES = {"p": "codes", "s": "scales", "g": "group_scales", "z": "zeros", "8": "data"}


def _positive(name, value):
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return value


def _device(device):
    dev = torch.device(device if device is not None else "cpu")
    if dev.type == "cuda" and dev.index is None:
        dev = torch.device("cuda", torch.cuda.current_device())
    return dev


# --------------------------------------------------------------------------------------------
# The module text
# --------------------------------------------------------------------------------------------


def _dyn_type(shape, elt):
    return "tensor<" + "x".join(str(s) for s in shape) + "x" + elt + ">"


def decode_function(name, *, scheme, v_scheme=None, hq, hkv, d, nq, page, q="f32", out=None,
                    causal=False, scale=None):
    """The MLIR text of ``func.func @name``: paged decode attention with per-sequence lengths and
    the int8 tail page (the serving form of docs/FORMAT.md, as
    ``scripts/gpu-check/serving/cases.py`` writes it), dynamic batch ``B``, pool ``NP`` and table
    width ``MP``. Operands: ``q [B, hq, nq, d]``; per K and V the pool (``k_codes``,
    ``k_scales``, ``k_group_scales``, ``k_zeros``, or ``k_data``, ``k_scales``); ``k_buffer``,
    ``k_buffer_scale``, ``v_buffer``, ``v_buffer_scale``; ``kv_lens``; ``page_table``. Result
    ``o [B, hq, nq, d]`` of ``out`` (default ``q``'s type)."""
    v_scheme = v_scheme or scheme
    out = out or q
    ops = [("q", ("?", hq, nq, d), q, ["B"])]
    for x, s in (("k", scheme), ("v", v_scheme)):
        for opname, shape, dtype in s.operands(x, 1, hkv, page, d):
            ops.append((f"{x}_{_OPERAND_NAMES[opname[1:]]}", ("?",) + tuple(shape[1:]), dtype,
                        ["NP"]))
    for x in "kv":
        ops += [(f"{x}_buffer", ("?", hkv, page, d), "i8", ["B"]),
                (f"{x}_buffer_scale", ("?", hkv), "f32", ["B"])]
    ops += [("kv_lens", ("?",), "i32", ["B"]), ("page_table", ("?", "?"), "i32", ["B", "MP"])]
    args, types = [], []
    for i, (opname, shape, dtype, dims) in enumerate(ops):
        t = _dyn_type(shape, dtype)
        dims = ", ".join(f'"{s}"' for s in dims + [""] * (len(shape) - len(dims)))
        args.append(f'    %a{i}: {t} {{qattn.name = "{opname}", qattn.dims = [{dims}]}}')
        types.append(t)
    v = [f"%a{i}" for i in range(len(ops))]
    nk = 4 if scheme.bits else 2
    nv = 4 if v_scheme.bits else 2
    keys, vals = v[1:1 + nk], v[1 + nk:1 + nk + nv]
    bufs, lens, table = v[1 + nk + nv:-2], v[-2], v[-1]
    attrs = [f"k_stage1 = {scheme.stage1}"]
    if scheme.bits:
        attrs.append(f"k_stage2 = {scheme.stage2}")
    attrs.append(f"v_stage1 = {v_scheme.stage1}")
    if v_scheme.bits:
        attrs.append(f"v_stage2 = {v_scheme.stage2}")
    if scale is not None:
        attrs.append(f"scale = {ir._float(scale)} : f32")
    if causal:
        attrs.append("causal")
    result = _dyn_type(("?", hq, nq, d), out)
    return (f"func.func @{name}(\n" + ",\n".join(args) + ")\n"
            f'    -> ({result} {{qattn.name = "o", qattn.dims = ["B", "", "", ""]}}) {{\n'
            f"  %o = qattn.attention {v[0]} keys({', '.join(keys)}) values({', '.join(vals)}) "
            f"buffers({', '.join(bufs)}) lengths({lens}) pages({table})\n"
            f"      {{{', '.join(attrs)}}}\n      : ({', '.join(types)}) -> {result}\n"
            f"  return %o : {result}\n}}\n")


# --------------------------------------------------------------------------------------------
# The compile cache
# --------------------------------------------------------------------------------------------


def cache_dir():
    """Where compiled artifacts are kept: ``$QATTN_CACHE_DIR``, else ``~/.cache/qattn``."""
    return os.environ.get("QATTN_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache",
                                                            "qattn")


_compile_lock = threading.Lock()


def compiled_artifact(text, target):
    """The artifact folder of module ``text`` compiled for ``target`` ('cpu' or 'cuda'): from
    the disk cache, else compiled there first, as ``cache_dir()/paged/<text>-<compiler>``: a
    hash of the text and the target, and one of the ``qattn-compile`` binary's path, size and
    mtime, so a rebuilt compiler compiles again. A folder is written under a temporary name and
    renamed into place, so concurrent processes never see half of one.

    Where ``qattn-compile`` cannot be found (a GPU machine without MLIR), the newest artifact of
    the same text and target in the cache is used: compile it on the MLIR machine
    (``precompile``) and carry the cache folder over (``QATTN_CACHE_DIR``)."""
    root = os.path.join(cache_dir(), "paged")
    text_key = hashlib.sha256(f"{target}\n{text}".encode()).hexdigest()[:24]
    try:
        tool = compiler.find_qattn_compile()
    except compiler.CompileError as e:
        return _carried_artifact(root, text_key, e)
    st = os.stat(tool)
    ident = f"{os.path.realpath(tool)}:{st.st_size}:{st.st_mtime_ns}"
    final = os.path.join(root, f"{text_key}-{hashlib.sha256(ident.encode()).hexdigest()[:12]}")
    manifest = os.path.join(final, "manifest.json")
    with _compile_lock:
        if os.path.isfile(manifest):
            return final
        os.makedirs(root, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=f".{os.path.basename(final)}-", dir=root)
        try:
            compiler.compile_module(text, tmp, target=target)
            try:
                os.rename(tmp, final)
            except OSError:
                if not os.path.isfile(manifest):  # not another process's finished copy
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return final


def _carried_artifact(root, text_key, why):
    found = []
    if os.path.isdir(root):
        found = [os.path.join(root, e) for e in os.listdir(root) if e.startswith(text_key + "-")
                 and os.path.isfile(os.path.join(root, e, "manifest.json"))]
    if not found:
        raise compiler.CompileError(
            f"{why}; and {root} holds no artifact of this module (compile it where qattn-compile "
            f"is, with qattn.paged.precompile, and carry {cache_dir()} over)")
    return max(found, key=lambda d: os.path.getmtime(os.path.join(d, "manifest.json")))


# --------------------------------------------------------------------------------------------
# Quantization of whole pages (FORMAT.md), graph-safe: no host reads, no tensors made from
# Python lists after construction.
# --------------------------------------------------------------------------------------------


class _Side:
    """K or V of one layer: the pool, the tails and the stage-2 constants of its scheme."""

    def __init__(self, scheme, num_pages, page, heads, d, max_batch, device):
        self.scheme, self.page, self.heads, self.d = scheme, page, heads, d
        self.num_pages = num_pages
        # The pool with one extra page, where masked-off page writes go.
        self.storage = [torch.zeros(shape, dtype=torch_ops.TORCH_DTYPES[dtype], device=device)
                        for _, shape, dtype in scheme.operands("x", num_pages + 1, heads, page, d)]
        self.pools = [s[:num_pages] for s in self.storage]
        self.tail = torch.zeros((max_batch, heads, page, d), dtype=torch.int8, device=device)
        self.tail_scale = torch.zeros((max_batch, heads), dtype=torch.float32, device=device)
        # Per row: the largest |x| of the last page an append touched (the open tail's, or the
        # last full page's when the tail is empty): a_prev for the next tail page's scale.
        self.amax = torch.zeros((max_batch, heads), dtype=torch.float32, device=device)
        # What the Triton append (qattn.paged_append) reads: each head's bits and byte offset
        # in a token's packed row, the row's bytes.
        hb = scheme.head_bits(heads) if scheme.bits else [0] * heads
        offsets = [sum(b * d // 8 for b in hb[:i]) for i in range(heads + 1)]
        self.row_bytes = offsets[-1]
        self.head_bits_t = torch.tensor(hb, dtype=torch.int32, device=device)
        self.head_offset_t = torch.tensor(offsets[:-1], dtype=torch.int32, device=device)
        if scheme.bits:
            self.levels = torch.tensor([(1 << b) - 1 for b in hb], dtype=torch.int32,
                                       device=device).reshape(1, heads, 1, 1)
            self.runs = []  # (first head, end head, bits, code bit per string bit, byte weights)
            for h0 in range(heads):
                if h0 and hb[h0] == hb[h0 - 1]:
                    self.runs[-1][1] = h0 + 1
                    continue
                b = hb[h0]
                msb = scheme.order == "msb_first"
                which = list(range(b - 1, -1, -1)) if msb else list(range(b))
                weight = [1 << (7 - k) if msb else 1 << k for k in range(8)]
                self.runs.append([h0, h0 + 1, b,
                                  torch.tensor(which, dtype=torch.int32, device=device),
                                  torch.tensor(weight, dtype=torch.int32, device=device)])

    # -- stage 1 ---------------------------------------------------------------------------------

    def stage1(self, x):
        """``#qattn.stage1<block>`` (f32 block scales) of whole pages ``x [n, H, P, d]`` f32:
        ``(q8 [n, H, P, d], s1 [n, H, P / block])``."""
        n, h, p, d = x.shape
        nb = p // self.scheme.block
        blocks = x.reshape(n, h * nb, self.scheme.block, d)
        m = blocks.abs().amax(dim=(2, 3))
        s1 = m / torch.full_like(m, 127.0)  # tensor / tensor: a true division on CUDA too
        return TQ.buffer_quantize(blocks, s1).reshape(n, h, p, d), s1.reshape(n, h, nb)

    # -- stage 2 ---------------------------------------------------------------------------------

    def _zero(self, mn, s):
        return mn if self.scheme.anchor == "min" else _round_div(-mn, s)

    def _bounds(self, s, z):
        """The codes that dequantize inside int8: ``lo``, ``hi`` (FORMAT.md, per anchor)."""
        floor = lambda a, b: torch.div(a, b, rounding_mode="floor")  # noqa: E731
        if self.scheme.anchor == "min":
            return torch.zeros_like(z), torch.minimum(self.levels.expand_as(z), floor(127 - z, s))
        return (torch.clamp(z - floor(torch.full_like(s, 128), s), min=0),
                torch.minimum(self.levels.expand_as(z), z + floor(torch.full_like(s, 127), s)))

    def _encode(self, q, s, z, lo, hi):
        raw = _round_div(q - z, s) if self.scheme.anchor == "min" else _round_div(q, s) + z
        return torch.maximum(torch.minimum(raw, hi), lo)

    def _decode(self, c, s, z):
        return z + c * s if self.scheme.anchor == "min" else (c - z) * s

    def stage2(self, q8):
        """Stage 2 (``bits``, ``group``, ``anchor``, ``fit``) of whole pages ``q8 [n, H, P, d]``:
        unpacked codes int32 ``[n, H, P, d]``, ``s2``, ``z2`` int32 ``[n, H, P / group, d]``."""
        n, h, p, d = q8.shape
        g = self.scheme.group
        q = q8.to(torch.int32).reshape(n, h, p // g, g, d)
        mn, mx = q.amin(dim=3), q.amax(dim=3)
        lv = self.levels
        s = torch.clamp(torch.div(mx - mn + lv - 1, lv, rounding_mode="floor"), min=1)
        z = self._zero(mn, s)
        lo, hi = self._bounds(s, z)
        at = lambda a: a.unsqueeze(3)  # noqa: E731  (per group -> per token of the group)
        if self.scheme.fit == "mse":
            def sse(s, z, lo, hi):
                c = self._encode(q, at(s), at(z), at(lo), at(hi))
                return ((self._decode(c, at(s), at(z)) - q) ** 2).sum(dim=3, dtype=torch.int32)

            best, err = [s, z, lo, hi], sse(s, z, lo, hi)
            for ds in F.MSE_SCALE_OFFSETS:
                s_c = s + ds
                z_base = self._zero(mn, s_c)
                for dz in F.MSE_ZERO_OFFSETS:
                    if ds == 0 and dz == 0:
                        continue
                    z_c = z_base + dz
                    lo_c, hi_c = self._bounds(s_c, z_c)
                    e = sse(s_c, z_c, lo_c, hi_c)
                    better = (z_c >= -127) & (z_c <= 127) & (lo_c <= hi_c) & (e < err)
                    best = [torch.where(better, a, b) for a, b in zip((s_c, z_c, lo_c, hi_c), best)]
                    err = torch.where(better, e, err)
            s, z, lo, hi = best
        codes = self._encode(q, at(s), at(z), at(lo), at(hi)).reshape(n, h, p, d)
        return codes, s, z

    def pack(self, codes):
        """Codes int32 ``[n, H, P, d]`` to token-major rows ``[n, P, R]`` int8 (FORMAT.md)."""
        n, _, p, d = codes.shape
        parts = []
        for h0, h1, b, which, weight in self.runs:
            c = codes[:, h0:h1].transpose(1, 2)  # [n, P, heads, d]
            string = torch.bitwise_and(torch.bitwise_right_shift(c[..., None], which), 1)
            string = string.reshape(n, p, (h1 - h0) * d * b // 8, 8)
            parts.append((string * weight).sum(dim=-1, dtype=torch.int32))
        return torch.cat(parts, dim=-1).to(torch.uint8).view(torch.int8)

    def encode_pages(self, q8, s1):
        """The pool entries of whole pages of stage-1 data: in the pool's operand order."""
        if not self.scheme.bits:
            return [q8, s1]
        codes, s2, z2 = self.stage2(q8)
        return [self.pack(codes), s1, s2.to(torch.uint8).view(torch.int8), z2.to(torch.int8)]

    # -- append ----------------------------------------------------------------------------------

    def append(self, x, plan):
        """Writes the new tokens ``x [B, H, T, d]`` as ``plan`` (``_Plan``) places them."""
        b, h, t, d = x.shape
        p, w = self.page, plan.window
        # The window's pages, token i of row b's window being new token i - fill (0 elsewhere).
        idx = plan.token.clamp(0, t - 1)[:, None, :, None].expand(b, h, w * p, d)
        xw = x.float().gather(2, idx)
        xw = torch.where(plan.new[:, None, :, None], xw, torch.zeros_like(xw))
        pages = xw.reshape(b, h, w, p, d).transpose(1, 2).reshape(b * w, h, p, d)
        amax_new = pages.abs().amax(dim=(2, 3)).reshape(b, w, h)

        old_tail, old_scale, old_amax = self.tail[:b], self.tail_scale[:b], self.amax[:b]
        cont = plan.continued[:, :, None]
        page_amax = torch.where(cont, torch.maximum(old_amax[:, None], amax_new), amax_new)

        # The scale of a tail page opened by this call (page `last` of the window).
        last = plan.last[:, None, None].expand(b, 1, h)
        a_new = amax_new.gather(1, last).squeeze(1)
        before = page_amax.gather(1, (last - 1).clamp(min=0)).squeeze(1)
        a_prev = torch.where((plan.last >= 1)[:, None], before, old_amax)
        a_prev = torch.where(plan.has_prev[:, None], a_prev, a_new)
        new_scale = torch.maximum(a_prev * plan.headroom, a_new)
        new_scale = new_scale / torch.full_like(new_scale, 127.0)

        # Tail-page contents: the rows already in the tail, then the new tokens quantized with
        # the open tail's scale (the first page) or the new tail's (the others).
        scale = torch.where(cont, old_scale[:, None], new_scale[:, None])
        q8 = TQ.buffer_quantize(pages, scale.reshape(b * w, h)).reshape(b, w, h, p, d)
        q8 = torch.where(plan.old[:, :, None, :, None], old_tail[:, None], q8)

        # Pages that fill: from the float values with their own block scales if wholly new,
        # else (the open tail filled) from the tail's int8 data with its scale.
        direct = (plan.complete & ~plan.continued).reshape(b * w)
        q8_float, s1_float = self.stage1(pages)
        q8_page = torch.where(direct[:, None, None, None], q8_float, q8.reshape(b * w, h, p, d))
        s1_tail = scale.reshape(b * w, h, 1).expand(b * w, h, p // self.scheme.block)
        s1_page = torch.where(direct[:, None, None], s1_float, s1_tail)
        for storage, part in zip(self.storage, self.encode_pages(q8_page, s1_page)):
            storage[plan.dest] = part

        rows = plan.rows[:, None]
        at_last = plan.last[:, None, None, None, None].expand(b, 1, h, p, d)
        self.tail[:b] = torch.where(rows[:, :, None, None], q8.gather(1, at_last).squeeze(1),
                                    old_tail)
        self.tail_scale[:b] = torch.where(plan.opens[:, None], new_scale, old_scale)
        self.amax[:b] = torch.where(rows, page_amax.gather(1, last).squeeze(1), old_amax)


class _Plan:
    """Where the tokens of one append go, as device tensors (no host reads). The *window* of row
    b is its pages ``seq_lens[b] // P + w`` for ``w < window``, as many as ``T`` new tokens can
    touch; window token ``i`` is new token ``i - fill``."""

    def __init__(self, lens, n, t, table, page, num_pages, headroom):
        # Unchecked (CUDA without debug) lengths out of range become in-range ones: the writes
        # stay inside the pool, the extra page and the tails; ``flags`` records them.
        bad_length = ((lens < 0) | (n < 0) | (n > t)).any()
        lens, n = lens.long().clamp(min=0), n.long().clamp(0, t)
        dev = lens.device
        b, mp = table.shape
        self.window = w = (t + page - 2) // page + 1
        fill = lens % page
        first = lens // page
        end = lens + n
        lp = first[:, None] + torch.arange(w, device=dev)  # logical page of each window page
        self.rows = n > 0
        self.touched = (lp * page < end[:, None]) & self.rows[:, None]
        self.complete = self.touched & ((lp + 1) * page <= end[:, None])
        self.continued = (lp == first[:, None]) & (fill > 0)[:, None]
        self.last = torch.clamp(torch.div(end - 1, page, rounding_mode="floor") - first, min=0)
        self.has_prev = first + self.last >= 1
        last_complete = self.complete.gather(1, self.last[:, None]).squeeze(1)
        self.opens = self.rows & ~last_complete & ~((self.last == 0) & (fill > 0))
        i = torch.arange(w * page, device=dev)
        self.token = i[None] - fill[:, None]
        self.new = (self.token >= 0) & (self.token < n[:, None])
        self.old = (i[None] < fill[:, None]).reshape(b, w, page)
        ids = table.long().gather(1, lp.clamp(max=mp - 1))
        good = (lp < mp) & (ids >= 0) & (ids < num_pages)
        past_table = ((n > 0) & (end > mp * page)).any()
        # ERROR_* bits, as the Triton append sets them: an int32 [1] tensor, no host read.
        self.flags = ((self.complete & ~good).any().int() * ERROR_BAD_PAGE
                      + past_table.int() * ERROR_PAST_TABLE
                      + bad_length.int() * ERROR_BAD_LENGTH).to(torch.int32).reshape(1)
        self.ids, self.lp = ids, lp
        self.dest = torch.where(self.complete & good, ids,
                                torch.full_like(ids, num_pages)).reshape(-1)
        self.headroom = headroom


# --------------------------------------------------------------------------------------------
# The cache
# --------------------------------------------------------------------------------------------


class PagedKVCache:
    """Paged quantized K/V of ``num_layers`` layers (see the module docstring for the layout).

    ``scheme``: the K scheme (a ``qattn.ir.Scheme``; None: ``DEFAULT_SCHEME``), ``v_scheme`` V's
    (default K's); f32 block scales only. ``num_pages`` pages of ``page_size`` tokens (a
    multiple of both stage-1 blocks) per layer; ``max_batch`` tail rows; ``headroom`` the tail
    scale's factor; ``debug`` checks the lengths and page ids on CUDA too (default
    ``$QATTN_PAGED_DEBUG``).
    """

    def __init__(self, scheme, num_layers, num_pages, page_size, num_kv_heads, head_dim, *,
                 max_batch, v_scheme=None, device=None, headroom=DEFAULT_HEADROOM, debug=None):
        scheme = DEFAULT_SCHEME if scheme is None else scheme
        v_scheme = scheme if v_scheme is None else v_scheme
        for what, s in (("scheme", scheme), ("v_scheme", v_scheme)):
            if not isinstance(s, ir.Scheme):
                raise TypeError(f"{what}: expected a qattn.ir.Scheme, got {type(s).__name__}")
            if s.scale != "f32" or s.granularity != "block":
                raise ValueError(f"{what}: the paged cache keeps f32 block scales (scale='f32', "
                                 f"granularity='block'), got {s.scale!r}, {s.granularity!r}")
        for what, value in (("num_layers", num_layers), ("num_pages", num_pages),
                            ("page_size", page_size), ("num_kv_heads", num_kv_heads),
                            ("head_dim", head_dim), ("max_batch", max_batch)):
            _positive(what, value)
        if head_dim % 8:
            raise ValueError(f"head_dim must be a multiple of 8, got {head_dim}")
        for what, s in (("scheme", scheme), ("v_scheme", v_scheme)):
            if page_size % s.block:
                raise ValueError(f"page_size ({page_size}) must be a multiple of the {what}'s "
                                 f"stage-1 block ({s.block})")
            if s.bits:
                s.head_bits(num_kv_heads)  # a per-head list must name every KV head
        if not headroom > 0:
            raise ValueError(f"headroom must be positive, got {headroom!r}")
        self.scheme, self.v_scheme = scheme, v_scheme
        self.num_layers, self.num_pages, self.page_size = num_layers, num_pages, page_size
        self.num_kv_heads, self.head_dim, self.max_batch = num_kv_heads, head_dim, max_batch
        self.headroom = float(headroom)
        self.device = _device(device)
        self.debug = (os.environ.get(_DEBUG_ENV, "") not in ("", "0") if debug is None
                      else bool(debug))
        args = (num_pages, page_size, num_kv_heads, head_dim, max_batch, self.device)
        self._layers = [(_Side(scheme, *args), _Side(v_scheme, *args))
                        for _ in range(num_layers)]
        # What unchecked appends met, per layer (ERROR_* bits); check_errors reads it.
        self.errors = torch.zeros(num_layers, dtype=torch.int32, device=self.device)
        self._host_checks = self.device.type == "cpu"  # (a test turns it off to see the flags)
        self._id = f"cache{next(_cache_ids)}"
        _caches[self._id] = self

    @property
    def checks(self):
        """Whether calls read lengths and page ids on the host to check them (CPU, or debug)."""
        return self._host_checks or self.debug

    def check_errors(self, clear=True):
        """Raises ValueError naming the layers and what went wrong if an unchecked append
        (CUDA without debug) met a page id outside the pool where a page filled, a sequence
        longer than its block table, or a length or ``num_tokens`` out of range since the last
        clear (those writes were dropped or clamped; rerun with ``debug=True`` for the row).
        Reads ``errors``, a host sync. ``clear``: reset the flags (also when raising)."""
        flags = self.errors.tolist()
        if clear:
            self.errors.zero_()
        bad = [(layer, f) for layer, f in enumerate(flags) if f]
        if not bad:
            return
        names = ((ERROR_BAD_PAGE, "a page id outside [0, num_pages) in a page that filled"),
                 (ERROR_PAST_TABLE, "a sequence longer than its block table"),
                 (ERROR_BAD_LENGTH, "a negative seq_lens or a num_tokens outside [0, T]"))
        what = "; ".join(f"layer {layer}: " + ", ".join(n for bit, n in names if f & bit)
                         for layer, f in bad)
        raise ValueError(f"appends without checks dropped or clamped writes: {what} (debug=True "
                         "names the row)")

    def _sides(self, layer):
        if not isinstance(layer, int) or not 0 <= layer < self.num_layers:
            raise ValueError(f"layer: expected an int in [0, {self.num_layers}), got {layer!r}")
        return self._layers[layer]

    def pools(self, layer, which):
        """The pool of K (``which='k'``) or V of ``layer``: the paged operands of FORMAT.md, in
        the compiled function's order (stage 2: codes, scales, group scales, zero points; stage
        1 only: data, scales), each ``[num_pages, ...]`` (views, written in place)."""
        return list(self._sides(layer)["kv".index(which)].pools)

    def tails(self, layer, which, batch=None):
        """The tails of K or V of ``layer``: ``(int8 [batch, Hkv, P, d], f32 [batch, Hkv])``,
        rows ``0 .. batch - 1`` (default all ``max_batch``), views. Row ``b`` holds sequence b's
        last ``seq_lens[b] % P`` tokens in its first rows; the rest is never read."""
        side = self._sides(layer)["kv".index(which)]
        batch = self.max_batch if batch is None else batch
        return side.tail[:batch], side.tail_scale[:batch]

    def dequantize(self, layer, which, block_table, seq_lens):
        """K (``which='k'``) or V of ``layer`` as docs/FORMAT.md defines them, read from the
        cache's own operands with ``qattn.format.paged_kv`` (the NumPy model): one float32 array
        ``[Hkv, L_b, d]`` per sequence, ``seq_lens`` the lengths *after* the appends (pages,
        then tail rows). For checking a cache, or a decode against float attention of what it
        holds; copies the pools to the host. Raises ValueError as ``decode`` does on CPU."""
        if which not in ("k", "v"):
            raise ValueError(f"which: expected 'k' or 'v', got {which!r}")
        lens = self._int32("seq_lens", seq_lens, (None,))
        b = lens.shape[0]
        self._batch("seq_lens", b)
        table = self._table(block_table, b)
        _check_decode(self, lens, table)
        side = self._sides(layer)["kv".index(which)]
        s = side.scheme
        host = [t.cpu().numpy() for t in self.pools(layer, which)]
        kw = dict(kv_lens=lens.cpu().numpy(), page_table=table.cpu().numpy(),
                  buffer=side.tail[:b].cpu().numpy(),
                  buffer_scale=side.tail_scale[:b].cpu().numpy())
        if s.bits:
            return F.paged_kv(host[1], s.block, packed=host[0], s2=host[2], z2=host[3],
                              bits=list(s.bits), group=s.group, order=s.order, anchor=s.anchor,
                              **kw)
        return F.paged_kv(host[1], s.block, q8=host[0], **kw)

    # -- argument checks -------------------------------------------------------------------------

    def _tensor(self, name, t):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name}: expected a torch.Tensor, got {type(t).__name__}")
        if t.device != self.device:
            raise ValueError(f"{name}: on {t.device}, the cache is on {self.device}")
        return t

    def _int32(self, name, t, shape):
        self._tensor(name, t)
        if t.dtype != torch.int32:
            raise TypeError(f"{name}: expected dtype torch.int32, got {t.dtype}")
        if t.dim() != len(shape) or any(want is not None and got != want
                                        for got, want in zip(t.shape, shape)):
            spelled = ", ".join("?" if s is None else str(s) for s in shape)
            raise ValueError(f"{name}: expected shape [{spelled}], got {list(t.shape)}")
        return t.contiguous()

    def _batch(self, name, b):
        if b > self.max_batch:
            raise ValueError(f"{name}: batch {b} exceeds the cache's max_batch {self.max_batch}")

    def _table(self, block_table, b):
        table = self._int32("block_table", block_table, (b, None))
        if table.shape[1] == 0:
            raise ValueError("block_table: needs at least one column")
        return table

    def _tokens(self, k, v):
        for name, x in (("k", k), ("v", v)):
            self._tensor(name, x)
            if x.dtype not in _Q_DTYPES:
                raise TypeError(f"{name}: expected float32, float16 or bfloat16, got {x.dtype}")
            if x.dim() != 4 or x.shape[1] != self.num_kv_heads or x.shape[3] != self.head_dim \
                    or x.shape[2] == 0 or x.shape[0] == 0:
                raise ValueError(f"{name}: expected shape [B, Hkv = {self.num_kv_heads}, T >= 1, "
                                 f"d = {self.head_dim}], got {list(x.shape)}")
        if k.shape != v.shape:
            raise ValueError(f"v: shape {list(v.shape)} differs from k's {list(k.shape)}")
        self._batch("k", k.shape[0])
        return k.shape[0], k.shape[2]

    # -- writing ---------------------------------------------------------------------------------

    def append(self, layer, k, v, block_table, seq_lens, num_tokens=None):
        """Appends new tokens to every sequence of the batch.

        ``k``, ``v``: ``[B, Hkv, T, d]`` float32/float16/bfloat16; ``block_table``: int32
        ``[B, MP]``, row b the physical pages of sequence b (vLLM's ``block_table``);
        ``seq_lens``: int32 ``[B]``, the lengths *before* the append; ``num_tokens``: int32
        ``[B]``, how many of the T tokens row b appends (default all T; 0 leaves a row alone).
        Writes the tail pages and every page that fills (the table entries of those pages are
        the only ones read). On CPU (or with debug) raises ValueError, before writing anything,
        for a length below 0 or above ``MP * P``, a ``num_tokens`` outside ``[0, T]``, or a page
        id outside ``[0, num_pages)`` where a page fills.
        """
        self._sides(layer)
        b, _ = self._tokens(k, v)
        table = self._table(block_table, b)
        lens = self._int32("seq_lens", seq_lens, (b,))
        given = None if num_tokens is None else self._int32("num_tokens", num_tokens, (b,))
        (_append_op if _tracing() else _append)(self._id, layer, k, v, table, lens, given,
                                                 self._state(layer))

    def _state(self, layer):
        """What an append of ``layer`` writes, as ``_append`` takes it: per K and V the
        pool's storage, the tail, its scale and amax; then the error flags of every layer."""
        return [t for side in self._layers[layer]
                for t in (*side.storage, side.tail, side.tail_scale, side.amax)] + [self.errors]

    def prefill(self, layer, k, v, block_table, num_tokens=None):
        """``append`` to empty sequences (``seq_lens`` 0): the prompt's whole pages to stage 2
        from their float values, the rest into the tails."""
        b, _ = self._tokens(k, v)
        lens = torch.zeros((b,), dtype=torch.int32, device=self.device)
        self.append(layer, k, v, block_table, lens, num_tokens)

    def _check_lengths(self, lens, n, t, table):
        mp, p = table.shape[1], self.page_size
        for i, (length, count) in enumerate(zip(lens.tolist(), n.tolist())):
            if length < 0:
                raise ValueError(f"seq_lens[{i}] = {length} is negative")
            if not 0 <= count <= t:
                raise ValueError(f"num_tokens[{i}] = {count} is outside [0, T = {t}]")
            if count and length + count > mp * p:
                raise ValueError(f"sequence {i}: seq_lens[{i}] = {length} plus {count} new tokens "
                                 f"exceed the block table's {mp} pages of {p} tokens")

    def _check_pages(self, plan):
        for i, w in zip(*[x.tolist() for x in torch.nonzero(plan.complete, as_tuple=True)]):
            page_id = int(plan.ids[i, w])
            if not 0 <= page_id < self.num_pages:
                raise ValueError(f"block_table[{i}, {int(plan.lp[i, w])}] = {page_id} is outside "
                                 f"the pool of {self.num_pages} pages (sequence {i} fills that "
                                 "page in this append)")

    def copy_rows(self, src, dst):
        """Copies sequences between batch rows, every layer's tail and tail state: row
        ``dst[i]`` becomes what row ``src[i]`` is (all rows are read before any is written, so
        a permutation works). Compacting a batch moves rows; forking a sequence (parallel
        sampling, beam search) copies its row and shares its full pages, which are never
        written again. ``src``, ``dst``: int64 tensors or lists of one length. Not for a CUDA
        graph (a list is copied from the host)."""
        src = torch.as_tensor(src, dtype=torch.long, device=self.device)
        dst = torch.as_tensor(dst, dtype=torch.long, device=self.device)
        if src.shape != dst.shape or src.dim() != 1:
            raise ValueError(f"src and dst must be 1-D of one length, got {list(src.shape)} "
                             f"and {list(dst.shape)}")
        for sides in self._layers:
            for side in sides:
                for t in (side.tail, side.tail_scale, side.amax):
                    t[dst] = t[src]

    # -- accounting ------------------------------------------------------------------------------

    def page_bytes(self):
        """Bytes of one page of K and V of one layer (codes or data, scales, zero points)."""
        k, v = self._layers[0]
        return sum(s[0].numel() * s.element_size() for side in (k, v) for s in side.pools)

    def allocated_bytes(self):
        """Every byte the cache allocated: pools (with their extra page) and tails, all layers."""
        return sum(t.numel() * t.element_size() for sides in self._layers for side in sides
                   for t in side.storage + [side.tail, side.tail_scale, side.amax])

    # -- decode ----------------------------------------------------------------------------------

    def _decode_text(self, hq, nq, qdtype, causal, scale):
        return decode_function("paged_decode", scheme=self.scheme, v_scheme=self.v_scheme, hq=hq,
                               hkv=self.num_kv_heads, d=self.head_dim, nq=nq,
                               page=self.page_size, q=qdtype, causal=causal, scale=scale)

    def _function(self, hq, nq, qdtype, causal, scale):
        target = "cpu" if self.device.type == "cpu" else "cuda"
        key = (target, self.device, self.scheme, self.v_scheme, self.num_kv_heads, self.head_dim,
               self.page_size, hq, nq, qdtype, causal, scale)
        fn = _functions.get(key)
        if fn is None:
            path = compiled_artifact(self._decode_text(hq, nq, qdtype, causal, scale), target)
            fn = _Decoder(torch_ops.load_artifact(path, self.device)["paged_decode"])
            _functions[key] = fn
        return fn


# --------------------------------------------------------------------------------------------
# The custom ops that append and decode run: torch.compile takes each as one op of its graph
# (torch.library.custom_op; with PyTorch before 2.4 they are plain functions, eager only)
# --------------------------------------------------------------------------------------------


def _rebound(side, tensors):
    """``side`` with its storage, tail, tail scale and amax replaced by ``tensors``: the op's
    arguments, which torch.compile may hand over as other buffers than the cache's own."""
    n = len(side.storage)
    view = copy.copy(side)
    view.storage = list(tensors[:n])
    view.pools = [t[:side.num_pages] for t in view.storage]
    view.tail, view.tail_scale, view.amax = tensors[n:n + 3]
    return view


def _append(cache_id: str, layer: int, k: torch.Tensor, v: torch.Tensor,
            table: torch.Tensor, lens: torch.Tensor, num_tokens: Optional[torch.Tensor],
            state: List[torch.Tensor]) -> None:
    """``PagedKVCache.append`` past its argument checks: the host checks of the lengths and page
    ids where the cache asks for them (CPU, or debug; before anything is written), then the
    writes into ``state`` (``PagedKVCache._state``)."""
    cache = _caches[cache_id]
    k_side, v_side = cache._layers[layer]
    nk, nv = len(k_side.storage) + 3, len(v_side.storage) + 3
    sides = (_rebound(k_side, state[:nk]), _rebound(v_side, state[nk:nk + nv]))
    errors = state[-1][layer:layer + 1]
    fast = paged_append.available(k.device)
    plan = None
    if cache.checks or not fast:  # the torch form's plan, which the checks read too
        b, _, t, _ = k.shape
        n = num_tokens
        if n is None:
            n = torch.full((b,), t, dtype=torch.int32, device=k.device)
        if cache.checks:
            cache._check_lengths(lens, n, t, table)
        plan = _Plan(lens, n, t, table, cache.page_size, cache.num_pages, cache.headroom)
        if cache.checks:
            cache._check_pages(plan)
    if fast:
        for side, x in zip(sides, (k, v)):
            paged_append.append(side, x, lens, num_tokens, table, cache.headroom, errors)
        return
    for side, x in zip(sides, (k, v)):
        side.append(x, plan)
    errors.bitwise_or_(plan.flags)


_append_op = torch_ops._custom_op("qattn::paged_append", mutates_args=("state",))(_append)


@_append_op.register_fake
def _append_fake(cache_id, layer, k, v, table, lens, num_tokens, state):
    return None


def _decode(cache_id: str, causal: bool, scale: Optional[float],
            operands: List[torch.Tensor], workspace: Optional[torch.Tensor]) -> torch.Tensor:
    """``decode`` past its argument checks: the host checks of the lengths and read page ids
    where the cache asks for them (CPU, or debug), then the compiled function on ``operands``
    (as it takes them, the queries ``[B, Hq, Nq, d]`` first, the lengths and the table last);
    the result has the queries' shape and dtype."""
    cache = _caches[cache_id]
    if cache.checks:
        _check_decode(cache, operands[-2], operands[-1])
    return _decoder(cache, operands, causal, scale)(operands, cache.device, workspace)


def _decoder(cache, operands, causal, scale):
    """The ``_Decoder`` of ``cache`` for the decode ``operands`` (queries first)."""
    _, hq, nq, _ = operands[0].shape
    return cache._function(hq, nq, _Q_DTYPES[operands[0].dtype], causal, scale)


_decode_op = torch_ops._custom_op("qattn::paged_decode")(_decode)


@_decode_op.register_fake
def _decode_fake(cache_id, causal, scale, operands, workspace):
    return operands[0].new_empty(operands[0].shape)


_is_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None)


def _tracing():
    """Whether torch.compile is tracing the caller: then the calls go through the custom ops,
    else straight to their Python bodies (no dispatcher on the eager path, as before the ops)."""
    return _is_compiling is not None and _is_compiling()


# What a decode function is compiled for -> its _Decoder, loaded once per process.
_functions = {}


class _Decoder:
    """A loaded paged decode function and the sizes its scratch is reserved for (CUDA)."""

    def __init__(self, fn):
        self.fn = fn
        self.reserved = (0, 0, 0)
        # Argument shapes -> the result's, as the runtime computed (and checked) them once.
        self.result_shape = {}

    def __call__(self, operands, device, workspace=None):
        fn = self.fn
        shapes = tuple(tuple(t.shape) for t in operands)
        if workspace is not None:
            workspace = _workspace(workspace, device)  # the runtime checks its size
        elif device.type == "cuda":
            b, mp, npages = shapes[0][0], shapes[-1][1], shapes[1][0]
            want = tuple(max(x, y) for x, y in zip((b, mp, npages), self.reserved))
            if want != self.reserved:
                # Size the scratch buffers for the largest batch and table seen, so that later
                # calls (and CUDA graph captures) at these sizes or smaller allocate nothing.
                fn.reserve(*[_resized(s, spec, want) for s, spec in zip(shapes, fn.args)])
                self.reserved = want
        (res,) = fn.results
        shape = self.result_shape.get(shapes)
        if shape is None:
            (shape,) = fn.result_shapes(*shapes)
            if len(self.result_shape) >= 1024:
                self.result_shape.clear()
            self.result_shape[shapes] = shape
        out = torch.empty(shape, dtype=torch_ops.TORCH_DTYPES[res.dtype], device=device)
        stream = torch.cuda.current_stream(device).cuda_stream if device.type == "cuda" else 0
        fn.launch([(t.data_ptr(), s.dtype, t.shape) for s, t in zip(fn.args, operands)],
                  [(out.data_ptr(), res.dtype, shape)], stream, workspace)
        return out


def _check_workspace(t, device):
    """Raises for a caller's workspace that is no tensor, on another device or not contiguous
    (no pointer read: it holds for torch.compile's fake tensors too)."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"workspace: expected a torch.Tensor, got {type(t).__name__}")
    if t.device != device or not t.is_contiguous():
        raise ValueError(f"workspace: expected a contiguous tensor on {device}, got one on "
                         f"{t.device}{'' if t.is_contiguous() else ', not contiguous'}")


def _workspace(t, device):
    """``(pointer, bytes)`` of a caller's workspace tensor; the runtime refuses one that is
    short or misaligned for the call (QAttnRuntimeError naming the bytes it needs)."""
    _check_workspace(t, device)
    return t.data_ptr(), t.numel() * t.element_size()


def _resized(shape, spec, sizes):
    """``shape`` with each symbolic size of ``spec`` (B, MP, NP) replaced from ``sizes``."""
    named = dict(zip(("B", "MP", "NP"), sizes))
    return tuple(named.get(sym, n) if isinstance(sym, str) else n
                 for sym, n in zip(spec.shape, shape))


def _decode_key(nq, causal, scale):
    """The compiled function's causality and scale: with one query causal changes nothing."""
    return bool(causal) and nq > 1, None if scale is None else float(scale)


def precompile(cache, num_q_heads, *, num_queries=1, dtype=torch.float32, causal=True,
               scale=None, target="cuda"):
    """Compiles (or finds) the decode function that ``decode`` would run for ``cache`` and
    queries of ``num_q_heads`` heads, ``num_queries`` per sequence, of ``dtype``, into the disk
    cache, for ``target``; returns the artifact folder. Run on the machine with qattn-compile to
    carry the cache to one without (``QATTN_CACHE_DIR``)."""
    if dtype not in _Q_DTYPES:
        raise TypeError(f"dtype: expected float32, float16 or bfloat16, got {dtype}")
    causal, scale = _decode_key(num_queries, causal, scale)
    text = cache._decode_text(num_q_heads, num_queries, _Q_DTYPES[dtype], causal, scale)
    return compiled_artifact(text, target)


def workspace_bytes(q, cache, block_table, *, causal=True, scale=None):
    """The bytes of the ``workspace`` that ``decode`` needs for queries shaped like ``q`` and a
    table shaped like ``block_table`` (any values; 0 on CPU). Compiles the function if needed."""
    operands, causal, scale = _decode_call(q, cache, 0, block_table, None, causal, scale)
    fn = _decoder(cache, operands, causal, scale).fn
    return fn.workspace_bytes(*[tuple(t.shape) for t in operands])


def decode(q, cache, layer, block_table, seq_lens, *, causal=True, scale=None, workspace=None):
    """Attention of the queries over each sequence's cached keys (pages, then its tail).

    ``q``: ``[B, Hq, d]`` (one query per sequence) or ``[B, Nq, Hq, d]`` (FlashAttention's
    layout), float32/float16/bfloat16, ``Hq`` a multiple of the cache's KV heads; the output has
    ``q``'s shape and dtype. ``block_table``: int32 ``[B, MP]``; ``seq_lens``: int32 ``[B]``,
    each sequence's length *after* its appends (its tokens are pages ``0 .. L // P - 1`` of its
    table row and tail rows ``0 .. L % P - 1``). ``causal`` (with ``Nq > 1``): query ``i`` sees
    keys ``j <= i + L - Nq``, the last query the last key; with one query it changes nothing.
    ``scale`` defaults to ``1 / sqrt(d)``. ``workspace``: a contiguous tensor on the cache's
    device of at least ``workspace_bytes(q, cache, block_table)`` bytes (256-byte aligned, as
    torch's allocator gives; the runtime raises QAttnRuntimeError for a shorter or misaligned
    one), where the call keeps its split-KV scratch: then nothing is
    allocated at any size, and calls with distinct workspaces may run on two streams at once;
    without one, the function's own scratch serves every call (one stream at a time; see
    "CUDA graphs" in docs/PYTHON.md). On CPU (or with the cache's debug) raises ValueError
    for a negative length, a sequence longer than its table or a read page id outside
    ``[0, num_pages)``.
    """
    operands, causal, scale = _decode_call(q, cache, layer, block_table, seq_lens, causal, scale)
    if _tracing():
        if workspace is not None:  # the op's schema would refuse it less clearly
            _check_workspace(workspace, cache.device)
        out = _decode_op(cache._id, causal, scale, operands, workspace)
    else:
        out = _decode(cache._id, causal, scale, operands, workspace)
    return out.squeeze(2) if q.dim() == 3 else out.transpose(1, 2).contiguous()


def _decode_call(q, cache, layer, block_table, seq_lens, causal, scale):
    """The argument-checked operands of a decode call and the compiled function's causality
    and scale (``seq_lens`` None: a stand-in of the batch's shape, for sizing)."""
    if not isinstance(cache, PagedKVCache):
        raise TypeError(f"cache: expected a qattn.paged.PagedKVCache, got {type(cache).__name__}")
    k, v = cache._sides(layer)
    cache._tensor("q", q)
    if q.dtype not in _Q_DTYPES:
        raise TypeError(f"q: expected float32, float16 or bfloat16, got {q.dtype}")
    if q.dim() == 3:
        q4 = q.unsqueeze(2)
    elif q.dim() == 4:
        q4 = q.transpose(1, 2)
    else:
        raise ValueError(f"q: expected [B, Hq, d] or [B, Nq, Hq, d], got {list(q.shape)}")
    b, hq, nq, d = q4.shape
    if d != cache.head_dim or hq % cache.num_kv_heads or b == 0 or nq == 0:
        raise ValueError(f"q: expected B >= 1 and Nq >= 1 queries of Hq heads (a multiple of "
                         f"Hkv = {cache.num_kv_heads}) of d = {cache.head_dim}, got "
                         f"{list(q.shape)}")
    cache._batch("q", b)
    table = cache._table(block_table, b)
    if seq_lens is None:
        lens = torch.zeros((b,), dtype=torch.int32, device=cache.device)
    else:
        lens = cache._int32("seq_lens", seq_lens, (b,))
    operands = [q4.contiguous(), *k.pools, *v.pools, k.tail[:b], k.tail_scale[:b], v.tail[:b],
                v.tail_scale[:b], lens, table]
    return (operands, *_decode_key(nq, causal, scale))


def _check_decode(cache, lens, table):
    p, mp = cache.page_size, table.shape[1]
    for i, length in enumerate(lens.tolist()):
        if length < 0:
            raise ValueError(f"seq_lens[{i}] = {length} is negative")
        pages = length // p
        if pages > mp:
            raise ValueError(f"sequence {i}: seq_lens[{i}] = {length} needs {pages} full pages, "
                             f"the block table has {mp}")
        for j, page_id in enumerate(table[i, :pages].tolist()):
            if not 0 <= page_id < cache.num_pages:
                raise ValueError(f"block_table[{i}, {j}] = {page_id} is outside the pool of "
                                 f"{cache.num_pages} pages (sequence {i} reads it)")

