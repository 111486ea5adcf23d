"""docs/FORMAT.md in PyTorch on the GPU: BPQ quantization (stage 1, stage 2 with
lsb_first packing) and dequantization, for the benchmark's large shapes, where
the CPU artifact's single-threaded `quantize` takes about a minute per case.

Written from FORMAT.md and meant to be bit-exact with it: run.py checks the
quantizer against the CPU artifact (qattn's executable specification) on the
small xcheck cases, and quantizer and dequantizer against python/qattn/format.py
on a slice of every timed case. Covers what the benchmark uses: f32 stage-1
scales with one scale per block, bit widths 2 and 4 (uniform or per head),
lsb_first; token counts need not be multiples of the block or group.

Two traps of PyTorch arithmetic that FORMAT.md's "true division" rules out:
dividing a CUDA tensor by a Python scalar multiplies by its reciprocal (so the
divisor is always a tensor here), and torch.round rounds halfway cases to even.
"""
import math

import torch

F32 = torch.float32


def cdiv(a, b):
    return -(-a // b)


def round_half_away(x):
    """C's roundf: nearest integer, halfway cases away from zero (exact in f32)."""
    t = torch.trunc(x)
    return t + torch.where((x - t).abs() >= 0.5, torch.sign(x), torch.zeros_like(x))


def round_div(a, b):
    """round(a / b), halfway away from zero, for integer tensors a and b > 0."""
    return torch.sign(a) * torch.div(2 * a.abs() + b, 2 * b, rounding_mode="floor")


def head_bits(bits, h):
    hb = list(bits) * h if len(bits) == 1 else list(bits)
    if len(hb) != h:
        raise ValueError(f"bits {bits} do not cover {h} heads")
    if any(b not in (2, 4) for b in hb):
        raise NotImplementedError(f"bits {bits}: only 2 and 4 are implemented here")
    return hb


def stage1_quantize(x, block):
    """x [B, H, N, d] f32 -> (q8 int8 [B, H, N, d], s1 f32 [B, H, ceil(N / block)])."""
    b, h, n, d = x.shape
    nb = cdiv(n, block)
    xp = torch.nn.functional.pad(x, (0, 0, 0, nb * block - n)).view(b, h, nb, block, d)
    m = xp.abs().amax(dim=(3, 4))
    s1 = m / torch.full_like(m, 127.0)  # a tensor divisor: IEEE division
    s = s1[:, :, :, None, None]
    q = round_half_away(xp / s).clamp_(-127, 127)
    q = torch.where(s == 0, torch.zeros_like(q), q)
    return q.view(b, h, nb * block, d)[:, :, :n].to(torch.int8), s1


def stage2_quantize(q8, bits, group):
    """q8 int8 [B, H, N, d] -> (packed uint8 [B, N, R], s2 uint8 [B, H, G, d],
    z2 int8 [B, H, G, d]); per (batch, head, group, channel), FORMAT.md stage 2."""
    b, h, n, d = q8.shape
    hb = head_bits(bits, h)
    g = cdiv(n, group)
    q = q8.to(torch.int32)
    if g * group > n:  # repeat the last token: min and max stay the same
        q = torch.cat([q, q[:, :, -1:].expand(b, h, g * group - n, d)], 2)
    q = q.view(b, h, g, group, d)
    mn, mx = q.amin(3), q.amax(3)
    levels = torch.tensor([2**x - 1 for x in hb], dtype=torch.int32, device=q8.device)
    levels = levels.view(1, h, 1, 1)
    s2 = torch.clamp_min(torch.div(mx - mn + levels - 1, levels, rounding_mode="floor"), 1)
    z2 = round_div(-mn, s2)
    floor = lambda a: torch.div(torch.full_like(s2, a), s2, rounding_mode="floor")
    lo = torch.clamp_min(z2 - floor(128), 0)  # ceil(-128 / s2) = -floor(128 / s2)
    hi = torch.minimum(levels, z2 + floor(127))
    codes = round_div(q, s2[:, :, :, None]) + z2[:, :, :, None]
    codes = torch.maximum(torch.minimum(codes, hi[:, :, :, None]), lo[:, :, :, None])
    codes = codes.view(b, h, g * group, d)[:, :, :n].to(torch.uint8)
    return pack(codes, hb), s2.to(torch.uint8), z2.to(torch.int8)


def pack(codes, hb):
    """codes uint8 [B, H, N, d] -> token-major rows uint8 [B, N, R], lsb_first:
    byte j of a b-bit head holds its codes k*j .. k*j + k - 1 (k = 8 / b), code
    k*j + i in bits b*i .. b*i + b - 1."""
    parts = []
    for head, bw in enumerate(hb):
        k = 8 // bw
        c = codes[:, head].reshape(codes.shape[0], codes.shape[2], -1, k)  # [B, N, d/k, k]
        byte = c[..., 0].clone()
        for i in range(1, k):
            byte |= c[..., i] << (bw * i)
        parts.append(byte)
    return torch.cat(parts, -1) if len(parts) > 1 else parts[0]


def unpack(packed, h, d, bits):
    """Inverse of pack, into the token-major layout: uint8 codes [B, N, H, d]."""
    hb = head_bits(bits, h)
    bsz, n, _ = packed.shape
    if len(set(hb)) == 1:  # one bit width: all heads in one step
        bw = hb[0]
        shifts = torch.arange(0, 8, bw, dtype=torch.uint8, device=packed.device)
        c = (packed.view(bsz, n, h, d * bw // 8)[..., None] >> shifts) & (2**bw - 1)
        return c.view(bsz, n, h, d)
    heads, off = [], 0
    for bw in hb:
        shifts = torch.arange(0, 8, bw, dtype=torch.uint8, device=packed.device)
        seg = packed[:, :, off:off + d * bw // 8]
        heads.append(((seg[..., None] >> shifts) & (2**bw - 1)).reshape(bsz, n, d))
        off += d * bw // 8
    return torch.stack(heads, 2)


def dequantize_kv(packed, s1, s2, z2, bits, block, group, dtype=F32):
    """K' or V' per FORMAT.md: q8' = (q - z2) * s2 in integers, then f32(q8') * s1
    (one f32 product, rounded to DTYPE afterwards if it is not f32). Returns a
    [B, H, N, d] view of a token-major [B, N, H, d] tensor (the layout of the
    codes; SDPA reads it as it is)."""
    bsz, h, g, d = s2.shape
    n = packed.shape[1]
    unit = block * group // math.gcd(block, group)
    npad = cdiv(n, unit) * unit
    codes = unpack(packed, h, d, bits)
    if npad > n:
        codes = torch.nn.functional.pad(codes, (0, 0, 0, 0, 0, npad - n))
    s2t = s2.permute(0, 2, 1, 3)[:, :, None].to(torch.int16)  # [B, G, 1, H, d]
    z2t = z2.permute(0, 2, 1, 3)[:, :, None].to(torch.int16)
    gp, nbp = npad // group, npad // block
    if s2t.shape[1] < gp:  # padded tokens: any scale, they are cut off
        s2t = torch.nn.functional.pad(s2t, (0, 0, 0, 0, 0, 0, 0, gp - s2t.shape[1]))
        z2t = torch.nn.functional.pad(z2t, (0, 0, 0, 0, 0, 0, 0, gp - z2t.shape[1]))
    q = (codes.view(bsz, gp, group, h, d).to(torch.int16) - z2t) * s2t
    s1t = s1.permute(0, 2, 1)[:, :, None, :, None]  # [B, NB, 1, H, 1]
    if s1t.shape[1] < nbp:
        s1t = torch.nn.functional.pad(s1t, (0, 0, 0, 0, 0, 0, 0, nbp - s1t.shape[1]))
    x = q.view(bsz, nbp, block, h, d).to(F32) * s1t
    if dtype != F32:
        x = x.to(dtype)
    return x.view(bsz, npad, h, d)[:, :n].transpose(1, 2)


def dequantize_q(q8, s1, block, dtype=F32):
    """Q' = f32(q8) * s1 per block of tokens, [B, H, N, d]."""
    bsz, h, n, _ = q8.shape
    nb = s1.shape[2]  # (expand, not repeat_interleave: no host synchronization)
    s = s1[:, :, :, None].expand(bsz, h, nb, block).reshape(bsz, h, nb * block)[:, :, :n, None]
    x = q8.to(F32) * s
    return x if dtype == F32 else x.to(dtype)
