"""docs/FORMAT.md in PyTorch: stage-1 int8, stage-2 packed b-bit and decode-buffer quantization
of torch tensors (CPU or CUDA), bit-exact with ``qattn.format`` (the NumPy implementation that
the test suite checks against the compiler's reference lowering).

The GPU lowering has no quantize ops yet, so a PyTorch model quantizes its K/V (and BPQ
queries) here and hands the results to the attention kernels (``qattn.torch_ops``). What makes
it bit-exact:

* every division is tensor / tensor: PyTorch's CUDA kernel for a tensor divided by a Python
  scalar multiplies by the scalar's reciprocal, which is not FORMAT.md's true division;
* ``round`` is halfway-away-from-zero (``torch.round`` rounds halfway cases to even), done as
  ``trunc(x) + (|x - trunc(x)| >= 0.5) * sign(x)``, exact in f32;
* stage 2 is integer arithmetic throughout (int32).

Outputs use the dtypes the attention operands have: int8 codes/scales/zero points (packed codes
and stage-2 scales hold unsigned content in int8, as in FORMAT.md), f32 stage-1 scales.
"""

import torch

from qattn.format import head_bits

__all__ = [
    "round_half_away",
    "stage1_quantize",
    "stage2_quantize",
    "stage2_codes",
    "pack_codes",
    "buffer_quantize",
    "head_bits",
]


def _cdiv(a, b):
    return -(-a // b)


def round_half_away(x):
    """Round to nearest, halfway cases away from zero (C ``roundf``), exactly, in x's dtype."""
    t = torch.trunc(x)
    frac = x - t  # exact: |frac| < 1 shares x's ulp
    step = torch.where(frac.abs() >= 0.5, torch.sign(x), torch.zeros_like(x))
    return t + step


def _check_4d(name, x):
    if x.dim() != 4:
        raise ValueError(f"{name}: expected [B, H, N, d], got shape {list(x.shape)}")


def _quantize_symmetric(x, s):
    """``0`` where ``s == 0`` else ``clamp(round(x / s), -127, 127)``; x, s f32 (broadcast)."""
    r = x / s  # tensor / tensor: IEEE true division
    q = torch.clamp(round_half_away(r), -127, 127)
    q = torch.where(s == 0, torch.zeros_like(q), q)
    return q.to(torch.int8)


def stage1_quantize(x, block):
    """``#qattn.stage1<block = block>`` (f32 block scales): x ``[B, H, N, d]`` float ->
    ``(q8 int8 [B, H, N, d], s1 f32 [B, H, ceil(N / block)])``."""
    _check_4d("x", x)
    if not x.is_floating_point():
        raise TypeError(f"x: expected a float tensor, got {x.dtype}")
    x = x.float()
    b, h, n, d = x.shape
    nb = _cdiv(n, block)
    a = x.abs()
    if nb * block != n:  # |x| >= 0, so zero padding leaves every max alone
        a = torch.nn.functional.pad(a, (0, 0, 0, nb * block - n))
    m = a.reshape(b, h, nb, block * d).amax(dim=-1)
    s1 = m / torch.full_like(m, 127.0)
    s = s1.repeat_interleave(block, dim=2)[:, :, :n, None]
    return _quantize_symmetric(x, s), s1


def _round_div(a, b):
    """``round(a / b)``, halfway away from zero, for integer tensors, ``b > 0``, exactly."""
    return torch.sign(a) * torch.div(2 * a.abs() + b, 2 * b, rounding_mode="floor")


def stage2_codes(q8, bits, group):
    """Stage-2 codes of stage-1 data ``q8`` (int8 ``[B, H, N, d]`` in [-127, 127]), unpacked:
    ``(codes int32 [B, H, N, d], s2 int32 [B, H, G, d], z2 int32 [B, H, G, d])``."""
    _check_4d("q8", q8)
    if q8.dtype != torch.int8:
        raise TypeError(f"q8: expected int8, got {q8.dtype}")
    b, h, n, d = q8.shape
    hb = head_bits(bits, h)
    q = q8.to(torch.int32)
    g = _cdiv(n, group)
    pad = g * group - n
    # Pad a short last group with values that change neither its min nor its max.
    lo_pad = torch.nn.functional.pad(q, (0, 0, 0, pad), value=127) if pad else q
    hi_pad = torch.nn.functional.pad(q, (0, 0, 0, pad), value=-127) if pad else q
    mn = lo_pad.reshape(b, h, g, group, d).amin(dim=3)
    mx = hi_pad.reshape(b, h, g, group, d).amax(dim=3)
    levels = torch.tensor([(1 << x) - 1 for x in hb], dtype=torch.int32,
                          device=q8.device).reshape(1, h, 1, 1)
    s2 = torch.clamp(torch.div(mx - mn + levels - 1, levels, rounding_mode="floor"), min=1)
    z2 = _round_div(-mn, s2)
    lo = torch.clamp(z2 - torch.div(torch.full_like(s2, 128), s2, rounding_mode="floor"), min=0)
    hi = torch.minimum(levels.expand_as(z2),
                       z2 + torch.div(torch.full_like(s2, 127), s2, rounding_mode="floor"))

    def tok(a):
        return a.repeat_interleave(group, dim=2)[:, :, :n]

    codes = _round_div(q, tok(s2)) + tok(z2)
    codes = torch.maximum(torch.minimum(codes, tok(hi)), tok(lo))
    return codes, s2, z2


def pack_codes(codes, bits, order="lsb_first"):
    """Codes ``[B, H, N, d]`` (values < 2^b_h) to token-major packed rows ``[B, N, R]`` int8
    (unsigned content): head h at bytes ``[off_h, off_h + d*b_h/8)``, code c at bits
    ``c*b .. c*b+b-1`` of the head's bit string (FORMAT.md, ``order``)."""
    _check_4d("codes", codes)
    b, h, n, d = codes.shape
    if d % 8:
        raise ValueError(f"d must be a multiple of 8, got {d}")
    if order not in ("lsb_first", "msb_first"):
        raise ValueError(f"order must be 'lsb_first' or 'msb_first', got {order!r}")
    parts = []
    for head, nbits in enumerate(head_bits(bits, h)):
        c = codes[:, head].to(torch.int32)  # [B, N, d]
        which = list(range(nbits)) if order == "lsb_first" else list(range(nbits - 1, -1, -1))
        which = torch.tensor(which, device=c.device, dtype=torch.int32)
        string = torch.bitwise_and(torch.bitwise_right_shift(c[..., None], which), 1)
        string = string.reshape(b, n, d * nbits // 8, 8)
        weight = [1 << k for k in range(8)] if order == "lsb_first" else [1 << (7 - k) for k in range(8)]
        weight = torch.tensor(weight, device=c.device, dtype=torch.int32)
        parts.append((string * weight).sum(dim=-1, dtype=torch.int32))
    packed = torch.cat(parts, dim=-1).to(torch.uint8)
    return packed.view(torch.int8)


def stage2_quantize(q8, bits, group, order="lsb_first"):
    """``#qattn.stage2<bits, group, order>`` of stage-1 data: ``(packed int8 [B, N, R],
    s2 int8 [B, H, G, d] (unsigned content), z2 int8 [B, H, G, d])``."""
    codes, s2, z2 = stage2_codes(q8, bits, group)
    return (pack_codes(codes, bits, order), s2.to(torch.uint8).view(torch.int8),
            z2.to(torch.int8))


def buffer_quantize(x, scale):
    """Decode-buffer quantization: x ``[B, H, n, d]`` float, scale ``[B, H]`` f32 ->
    ``clamp(round(x / s), -127, 127)`` int8 (0 where ``s == 0``)."""
    _check_4d("x", x)
    if tuple(scale.shape) != tuple(x.shape[:2]):
        raise ValueError(f"scale must be [B, H] = {list(x.shape[:2])}, got {list(scale.shape)}")
    return _quantize_symmetric(x.float(), scale.float()[:, :, None, None])
