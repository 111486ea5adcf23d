"""``PagedKVCache.append`` on CUDA in one Triton launch per K or V side of a layer.

The torch-ops form in ``qattn.paged`` is the definition (it is checked bit-exact against the NumPy
model of docs/FORMAT.md on the CPU); this kernel computes the same bytes: the same f32 divisions
(``div_rn``, IEEE), the same halfway-away rounding, the same integer stage-2 fit. It needs Triton
(shipped with CUDA builds of PyTorch); without it, or with ``QATTN_PAGED_APPEND=torch``, the cache
uses the torch ops.

One program per (sequence, KV head, window page): window page ``w`` is the sequence's logical
page ``seq_lens // P + w``, as in ``paged._Plan``. A page that fills is quantized whole (the old
tail rows and the new tokens) and written to the physical page of the block table: stage-1
scales and stage-2 codes, scales and zero points (or int8 data). A page that stays open is the
new tail: only its new rows are quantized and written (a decode step's one token is a [1, d]
tile), and its scale and the amax state set. The tail page is program 0's when the old tail
holds rows (it reads them), so that every read of a row's tail state happens in the program
that writes it. Tail rows past a sequence's length are left as they were (the torch form writes
zeros there); the format never reads them.
"""

import os

try:
    import triton
    import triton.language as tl
except ImportError:  # CPU-only installs: the cache uses the torch ops
    triton = None

from qattn import format as F

ENV = "QATTN_PAGED_APPEND"

# _stage2 writes the mse fit's candidates out in this order.
assert F.MSE_SCALE_OFFSETS == (0, 1, 2) and F.MSE_ZERO_OFFSETS == (0, -1, 1)


def available(device):
    """Whether appends on ``device`` run this kernel."""
    return (triton is not None and device.type == "cuda"
            and os.environ.get(ENV, "triton") != "torch")


if triton is not None:

    @triton.jit
    def _floor_div(a, s):
        """Python's ``a // s`` for ``s > 0`` (Triton's integer ``//`` truncates)."""
        q = a // s
        return q - ((q * s != a) & (a < 0)).to(tl.int32)

    @triton.jit
    def _round_div(a, s):
        """``round(a / s)``, halfway away from zero, for integers, ``s > 0``."""
        m = (2 * tl.abs(a) + s) // (2 * s)
        return tl.where(a < 0, -m, m)

    @triton.jit
    def _quantize(x, s):
        """``clamp(round(x / s), -127, 127)``, 0 where ``s == 0`` (torch_quant's buffer form)."""
        s = tl.zeros_like(x) + s  # div_rn takes operands of one shape
        r = tl.math.div_rn(x, tl.where(s == 0, 1.0, s))
        r = tl.minimum(tl.maximum(r, -256.0), 256.0)
        t = r.to(tl.int32).to(tl.float32)  # truncation
        frac = r - t
        step = tl.where(tl.abs(frac) >= 0.5, tl.where(r < 0, -1.0, 1.0), 0.0)
        q = tl.minimum(tl.maximum(t + step, -127.0), 127.0)
        return tl.where(s == 0, 0.0, q).to(tl.int32)

    @triton.jit
    def _zero(mn, s, ANCHOR_MIN: tl.constexpr):
        if ANCHOR_MIN:
            return mn
        else:
            return _round_div(-mn, s)

    @triton.jit
    def _bounds(s, z, lv, ANCHOR_MIN: tl.constexpr):
        if ANCHOR_MIN:
            return tl.zeros_like(z), tl.minimum(lv, _floor_div(127 - z, s))
        else:
            return (tl.maximum(z - 128 // s, 0), tl.minimum(lv, z + 127 // s))

    @triton.jit
    def _encode(q, s, z, lo, hi, ANCHOR_MIN: tl.constexpr):
        if ANCHOR_MIN:
            raw = _round_div(q - z, s)
        else:
            raw = _round_div(q, s) + z
        return tl.maximum(tl.minimum(raw, hi), lo)

    @triton.jit
    def _sse(q, s, z, lo, hi, ANCHOR_MIN: tl.constexpr):
        """Per (group, channel): the squared error of the candidate's dequantized codes."""
        s3, z3 = tl.expand_dims(s, 1), tl.expand_dims(z, 1)
        c = _encode(q, s3, z3, tl.expand_dims(lo, 1), tl.expand_dims(hi, 1), ANCHOR_MIN)
        if ANCHOR_MIN:
            e = z3 + c * s3 - q
        else:
            e = (c - z3) * s3 - q
        return tl.sum(e * e, axis=1)

    # Triton would make an int argument equal to 1 a constant (T = 1 in every decode step); that
    # variant crashes Triton 3.6's coalescing pass, and nothing here gains from it.
    @triton.jit(do_not_specialize=["sx_b", "sx_h", "sx_t", "s_table", "max_pages", "row_bytes",
                                   "num_tokens", "num_pages", "heads"])
    def _append_kernel(
        x_ptr, sx_b, sx_h, sx_t,
        lens_ptr, n_ptr, table_ptr, s_table, max_pages,
        tail_ptr, tail_scale_ptr, amax_ptr, err_ptr,
        s1_ptr, codes_ptr, s2_ptr, z2_ptr, bits_ptr, offset_ptr, row_bytes,
        num_tokens, num_pages, heads, headroom,
        P: tl.constexpr, D: tl.constexpr, G: tl.constexpr, BLOCK: tl.constexpr,
        STAGE2: tl.constexpr, ANCHOR_MIN: tl.constexpr, MSE: tl.constexpr, MSB: tl.constexpr,
        MAX_BITS: tl.constexpr, HAS_N: tl.constexpr, ROWS: tl.constexpr,
    ):
        b = tl.program_id(0)
        h = tl.program_id(1)
        w = tl.program_id(2)
        NG: tl.constexpr = P // G
        GPB: tl.constexpr = BLOCK // G  # groups per stage-1 block

        raw_length = tl.load(lens_ptr + b)
        length = tl.maximum(raw_length, 0)
        if HAS_N:
            raw_n = tl.load(n_ptr + b)
            n = tl.minimum(tl.maximum(raw_n, 0), num_tokens)
        else:
            raw_n = num_tokens
            n = num_tokens
        fill = length % P
        first = length // P
        end = length + n
        # paged.ERROR_BAD_LENGTH (4) and ERROR_PAST_TABLE (2), once per row; ERROR_BAD_PAGE (1)
        # where a page fills.
        flags = tl.where((raw_length < 0) | (raw_n < 0) | (raw_n > num_tokens), 4, 0) \
            + tl.where((n > 0) & (end > max_pages * P), 2, 0)
        if (h == 0) & (w == 0) & (flags != 0):
            tl.atomic_or(err_ptr, flags)
        last = tl.maximum((end - 1) // P - first, 0)
        # Program w takes page w (w < last) and the tail page when the old tail is empty;
        # program 0 takes page 0 and then the tail page when the old tail holds rows.
        tail_here = (fill == 0) | (last == 0)
        mine = (n > 0) & ((w < last) | ((w == last) & tail_here))
        extra = (n > 0) & (w == 0) & ~tail_here
        count = mine.to(tl.int32) + extra.to(tl.int32)

        ig = tl.arange(0, NG)
        ir = tl.arange(0, G)
        ic = tl.arange(0, D)
        t3 = tl.expand_dims(tl.expand_dims(ig, 1), 2) * G + tl.expand_dims(tl.expand_dims(ir, 0), 2)
        c3 = tl.expand_dims(tl.expand_dims(ic, 0), 0)  # [1, 1, D]
        r2 = tl.expand_dims(tl.arange(0, ROWS), 1)  # the open tail's rows: [ROWS, 1] and [1, D]
        c2 = tl.expand_dims(ic, 0)
        row = b * heads + h
        x_row = x_ptr + b.to(tl.int64) * sx_b + h.to(tl.int64) * sx_h
        tail_row = tail_ptr + row.to(tl.int64) * (P * D)
        old_amax = tl.load(amax_ptr + row)
        old_scale = tl.load(tail_scale_ptr + row)
        bits = tl.load(bits_ptr + h)
        lv = (1 << bits) - 1
        head_offset = tl.load(offset_ptr + h)

        for it in range(0, count):
            page = tl.where(mine & (it == 0), w, last)
            lp = first + page
            continued = (page == 0) & (fill > 0)
            if (lp + 1) * P <= end:
                # The page fills: all of it, the old tail rows and the new tokens, to the pool.
                tok = page * P + t3 - fill
                new = (tok >= 0) & (tok < n) & (c3 >= 0)
                x = tl.load(x_row + tok.to(tl.int64) * sx_t + c3, mask=new, other=0.0)
                x = x.to(tl.float32)
                amax_new = tl.max(tl.max(tl.abs(x), axis=2), axis=1)  # per group
                a_page = tl.max(amax_new, axis=0)
                a_prev = _prev_amax(x_row, sx_t, page, page == last, first, fill, n, old_amax,
                                    a_page, t3, c3, P)
                scale = _tail_scale(continued, old_scale, a_prev, a_page, headroom)
                q8 = _quantize(x, scale)
                old = (t3 < fill) & (page == 0) & (c3 >= 0)
                q8 = tl.where(old, tl.load(tail_row + t3 * D + c3, mask=old, other=0).to(tl.int32),
                              q8)
                column = tl.minimum(lp, max_pages - 1)
                page_id = tl.load(table_ptr + b.to(tl.int64) * s_table + column)
                if (lp < max_pages) & (page_id >= 0) & (page_id < num_pages):
                    q8p = q8
                    s1g = tl.zeros([NG], dtype=tl.float32) + scale
                    s1_page = s1_ptr + (page_id.to(tl.int64) * heads + h) * (P // BLOCK)
                    if continued:
                        for nb in tl.static_range(P // BLOCK):
                            tl.store(s1_page + nb, scale)
                    else:
                        # Wholly new: stage 1 from the float values, one scale per block.
                        blk = ig // GPB
                        for nb in tl.static_range(P // BLOCK):
                            m = tl.max(tl.where(blk == nb, amax_new, 0.0), axis=0)
                            s_nb = tl.math.div_rn(m, 127.0)
                            s1g = tl.where(blk == nb, s_nb, s1g)
                            tl.store(s1_page + nb, s_nb)
                        q8p = _quantize(x, tl.expand_dims(tl.expand_dims(s1g, 1), 2))
                    page_base = page_id.to(tl.int64) * heads + h
                    if STAGE2:
                        _stage2(q8p, lv, bits, page_id, page_base, h, head_offset, row_bytes,
                                codes_ptr, s2_ptr, z2_ptr, t3, c3, P, D, G, NG, ANCHOR_MIN, MSE,
                                MSB, MAX_BITS)
                    else:
                        tl.store(codes_ptr + page_base * (P * D) + t3 * D + c3, q8p.to(tl.int8))
                else:
                    tl.atomic_or(err_ptr, 1)
                if page == last:  # the tail is empty now; its page as the torch form leaves it
                    tl.store(tail_row + t3 * D + c3, q8.to(tl.int8))
                    tl.store(amax_ptr + row, tl.where(continued, tl.maximum(old_amax, a_page),
                                                      a_page))
            else:
                # The tail page (the last one), which stays open: only its new rows, at most
                # ROWS of them (min(T, P) rounded up), are quantized and written. The names
                # differ from the branch above: Triton gives a name one type across branches.
                prow = tl.where(page == 0, fill, 0) + r2
                tok_r = page * P + prow - fill
                new_r = (prow < P) & (tok_r >= 0) & (tok_r < n) & (c2 >= 0)
                x_r = tl.load(x_row + tok_r.to(tl.int64) * sx_t + c2, mask=new_r, other=0.0)
                x_r = x_r.to(tl.float32)
                a_page = tl.max(tl.max(tl.abs(x_r), axis=1), axis=0)
                prev_rows = tl.where(page == 1, fill, 0) + r2
                prev_rows = tl.where(prev_rows < P, prev_rows, -P)
                a_prev = _prev_amax(x_row, sx_t, page, page == last, first, fill, n, old_amax,
                                    a_page, prev_rows, c2, P)
                scale = _tail_scale(continued, old_scale, a_prev, a_page, headroom)
                tl.store(tail_row + prow * D + c2, _quantize(x_r, scale).to(tl.int8), mask=new_r)
                tl.store(tail_scale_ptr + row, scale)
                tl.store(amax_ptr + row, tl.where(continued, tl.maximum(old_amax, a_page),
                                                  a_page))

    @triton.jit
    def _prev_amax(x_row, sx_t, page, need, first, fill, n, old_amax, a_page, prow, c,
                   P: tl.constexpr):
        """``a_prev`` of a tail page (where ``need``): the largest |x| of the previous page (its
        new tokens at page rows ``prow``, with the old tail's when that page was the open tail),
        the old state when this call's first page is the tail, ``a_page`` for a sequence's first
        page."""
        a_prev = old_amax
        if need & (page >= 1):
            tok = (page - 1) * P + prow - fill
            new = (prow >= 0) & (tok >= 0) & (tok < n) & (c >= 0)
            px = tl.load(x_row + tok.to(tl.int64) * sx_t + c, mask=new, other=0.0)
            m = tl.max(tl.abs(px.to(tl.float32)))
            a_prev = tl.where((page == 1) & (fill > 0), tl.maximum(old_amax, m), m)
        return tl.where(first + page >= 1, a_prev, a_page)

    @triton.jit
    def _tail_scale(continued, old_scale, a_prev, a_page, headroom):
        """The scale of a page's new tokens: the open tail keeps its scale; a new tail page gets
        ``max(headroom a_prev, a_new) / 127``."""
        new_scale = tl.math.div_rn(tl.maximum(a_prev * headroom, a_page), 127.0)
        return tl.where(continued, old_scale, new_scale)

    @triton.jit
    def _candidate(q, mn, s0, ds: tl.constexpr, dz: tl.constexpr, lv, s, z, lo, hi, err,
                   ANCHOR_MIN: tl.constexpr):
        """The mse fit's candidate ``(s0 + ds, zero(s0 + ds) + dz)``, kept where it is valid and
        strictly better."""
        s_c = s0 + ds
        z_c = _zero(mn, s_c, ANCHOR_MIN) + dz
        lo_c, hi_c = _bounds(s_c, z_c, lv, ANCHOR_MIN)
        e = _sse(q, s_c, z_c, lo_c, hi_c, ANCHOR_MIN)
        better = (z_c >= -127) & (z_c <= 127) & (lo_c <= hi_c) & (e < err)
        return (tl.where(better, s_c, s), tl.where(better, z_c, z), tl.where(better, lo_c, lo),
                tl.where(better, hi_c, hi), tl.where(better, e, err))

    @triton.jit
    def _stage2(q, lv, bits, page_id, page_base, h, head_offset, row_bytes, codes_ptr, s2_ptr,
                z2_ptr, t3, c3, P: tl.constexpr, D: tl.constexpr, G: tl.constexpr,
                NG: tl.constexpr, ANCHOR_MIN: tl.constexpr, MSE: tl.constexpr,
                MSB: tl.constexpr, MAX_BITS: tl.constexpr):
        """Stage 2 of one head's page ``q [NG, G, D]`` (int32 stage-1 values): the fit, the
        group scales and zero points, and the packed codes."""
        mn = tl.min(q, axis=1)
        mx = tl.max(q, axis=1)
        s = tl.maximum((mx - mn + lv - 1) // lv, 1)
        z = _zero(mn, s, ANCHOR_MIN)
        lo, hi = _bounds(s, z, lv, ANCHOR_MIN)
        if MSE:
            # F.MSE_SCALE_OFFSETS x F.MSE_ZERO_OFFSETS in the model's order (checked below).
            err = _sse(q, s, z, lo, hi, ANCHOR_MIN)
            s0 = s
            s, z, lo, hi, err = _candidate(q, mn, s0, 0, -1, lv, s, z, lo, hi, err, ANCHOR_MIN)
            s, z, lo, hi, err = _candidate(q, mn, s0, 0, 1, lv, s, z, lo, hi, err, ANCHOR_MIN)
            for ds in tl.static_range(1, 3):
                s, z, lo, hi, err = _candidate(q, mn, s0, ds, 0, lv, s, z, lo, hi, err, ANCHOR_MIN)
                s, z, lo, hi, err = _candidate(q, mn, s0, ds, -1, lv, s, z, lo, hi, err,
                                               ANCHOR_MIN)
                s, z, lo, hi, err = _candidate(q, mn, s0, ds, 1, lv, s, z, lo, hi, err,
                                               ANCHOR_MIN)
        codes = _encode(q, tl.expand_dims(s, 1), tl.expand_dims(z, 1), tl.expand_dims(lo, 1),
                        tl.expand_dims(hi, 1), ANCHOR_MIN)

        ig = tl.arange(0, NG)
        ic = tl.arange(0, D)
        gc = (page_base * NG + tl.expand_dims(ig, 1)) * D + tl.expand_dims(ic, 0)  # [NG, D]
        tl.store(s2_ptr + gc, s.to(tl.uint8).to(tl.int8, bitcast=True))
        tl.store(z2_ptr + gc, z.to(tl.int8))

        _pack(codes, bits, page_id, row_bytes, head_offset, codes_ptr, P, D, G, NG, MSB, MAX_BITS)

    @triton.jit
    def _pack(codes, bits, page_id, row_bytes, head_offset, codes_ptr, P: tl.constexpr,
              D: tl.constexpr, G: tl.constexpr, NG: tl.constexpr, MSB: tl.constexpr,
              MAX_BITS: tl.constexpr):
        """The packed codes of one head's page into the token rows of FORMAT.md."""
        ig = tl.arange(0, NG)
        # Eight channels' codes make b whole bytes: a word of 8b bits, channel i at bits
        # i b (lsb_first) or (7 - i) b (msb_first, channel 0 at the top), byte j its bits
        # 8j .. 8j + 7 (lsb_first) or counted from the top (msb_first).
        c4 = tl.reshape(codes, [NG, G, D // 8, 8]).to(tl.uint32)
        i = tl.arange(0, 8)
        if MSB:
            shift = (7 - i) * bits
        else:
            shift = i * bits
        shift4 = tl.expand_dims(tl.expand_dims(tl.expand_dims(shift, 0), 0), 0).to(tl.uint32)
        word = tl.sum(c4 << shift4, axis=3)  # [NG, G, D / 8]
        ig3 = tl.expand_dims(tl.expand_dims(ig, 1), 2)
        ir3 = tl.expand_dims(tl.expand_dims(tl.arange(0, G), 0), 2)
        k3 = tl.expand_dims(tl.expand_dims(tl.arange(0, D // 8), 0), 0)
        token = ig3 * G + ir3
        base = codes_ptr + page_id.to(tl.int64) * P * row_bytes + token * row_bytes \
            + head_offset + k3 * bits
        for j in tl.static_range(MAX_BITS):
            if MSB:
                sh = 8 * bits - 8 - 8 * j
            else:
                sh = 8 * j
            byte = (word >> tl.maximum(sh, 0).to(tl.uint32)) & 255
            tl.store(base + j, byte.to(tl.uint8).to(tl.int8, bitcast=True),
                     mask=(k3 >= 0) & (j < bits))


def append(side, x, lens, n, table, headroom, errors):
    """Writes ``x [B, H, T, d]`` into ``side`` (a ``paged._Side``) at ``lens`` (int32 [B], the
    lengths before), ``n`` (int32 [B] new-token counts, or None for all T), ``table`` (int32
    [B, MP]); ors the ``paged.ERROR_*`` bits of what it drops or clamps into ``errors`` (int32
    [1]). The shapes are the caller's checked ones."""
    b, h, t, d = x.shape
    if x.stride(3) != 1:
        x = x.contiguous()
    s, p = side.scheme, side.page
    window = (t + p - 2) // p + 1
    stage2 = bool(s.bits)
    group = s.group if stage2 else s.block
    if stage2:
        codes, s1, s2, z2 = side.storage
    else:
        codes, s1 = side.storage
        s2 = z2 = codes  # unused
    _append_kernel[(b, h, window)](
        x, x.stride(0), x.stride(1), x.stride(2),
        lens, lens if n is None else n, table, table.stride(0), table.shape[1],
        side.tail, side.tail_scale, side.amax, errors,
        s1, codes, s2, z2, side.head_bits_t, side.head_offset_t, side.row_bytes,
        t, side.num_pages, h, float(headroom),
        P=p, D=d, G=group, BLOCK=s.block, STAGE2=stage2, ANCHOR_MIN=s.anchor == "min",
        MSE=s.fit == "mse", MSB=s.order == "msb_first", MAX_BITS=max(s.bits or (8,)),
        HAS_N=n is not None, ROWS=min(p, triton.next_power_of_2(t)), num_warps=_warps(p, d))


def _warps(page, d):
    """Warps of a program: 4 up to a 64 x 128 page, more for larger pages, so that a thread
    holds at most 64 values of a page tile (a 128 x 128 page at 4 warps kept ptxas busy for
    minutes on the H200 machine)."""
    return min(16, max(4, triton.next_power_of_2(page * d // 2048)))
