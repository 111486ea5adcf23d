"""A quantized KV cache in the BPQ format of docs/FORMAT.md, preallocated per layer.

Per layer and for K and V alike:

* the **cache**: stage-2 packed codes ``[B, N, R]``, stage-1 block scales ``[B, H, N/block]``
  (f32), stage-2 group scales and zero points ``[B, H, N/group, d]`` (int8), for ``N`` tokens
  (a multiple of the block) out of ``capacity``;
* the **decode buffer**: ``n_b`` int8 tokens ``[B, H, n_b, d]`` with one fixed f32 scale per
  batch and head (the stage-1 scale of the prompt's last block). New tokens are quantized into it;
  when it is full and another token comes, its ``n_b`` tokens are compressed to stage 2 (their
  stage-1 scales are the buffer's scale) and appended to the cache at a block-aligned offset.

``prefill`` fills an empty layer from the prompt: whole blocks to stage 2, the ragged rest (less
than a block) into the buffer. ``append`` adds decode tokens. Going past ``capacity`` tokens
raises ``KVCacheOverflow``. Bit widths may differ per KV head (``bits=[4, 2, ...]``) and per
layer (a list of such lists).

Storage is preallocated once. The attention kernels read dense row-major operands of the
current length, so every stage-2 array lives in a flat buffer whose first elements are the
current tensor (contiguous by construction); a flush re-lays the live part out for the new
length (``O(N)`` bytes once every ``n_b`` tokens; nothing moves for the codes when ``B == 1``).

Two backends with the same layout and results: ``"numpy"`` (``qattn.format``; host arrays) and
``"torch"`` (``qattn.torch_quant``; tensors on any device, e.g. CUDA for ``qattn.torch_ops``).
Both are bit-exact implementations of FORMAT.md.
"""

import math

import numpy as np

from qattn import format as F

__all__ = ["KVCacheOverflow", "QuantizedKVCache", "LayerCache", "kv_bytes_per_token"]


class KVCacheOverflow(RuntimeError):
    """More tokens than the cache was allocated for."""


def _cdiv(a, b):
    return -(-a // b)


def kv_bytes_per_token(heads, d, bits, block, group):
    """Bytes that one token of K and V together takes in the stage-2 cache of one layer:
    packed codes ``d * sum(bits) / 8`` each, plus its share of the f32 block scales
    (``4 H / block``) and of the int8 group scales and zero points (``2 H d / group``)."""
    hb = F.head_bits(bits, heads)
    one = d * sum(hb) / 8 + 4 * heads / block + 2 * heads * d / group
    return 2 * one


# --------------------------------------------------------------------------------------------
# Backends: the same operations on NumPy arrays and on torch tensors
# --------------------------------------------------------------------------------------------


class _NumpyBackend:
    name = "numpy"
    i8, f32 = np.int8, np.float32

    def zeros(self, n, dtype):
        return np.zeros(n, dtype)

    def reshape(self, flat, n, shape):
        return flat[:n].reshape(shape)

    def clone(self, x):
        return x.copy()

    def contiguous(self, x):
        return np.ascontiguousarray(x)

    def nbytes(self, x):
        return x.nbytes

    def check_input(self, x, name):
        x = np.asarray(x)
        if not np.issubdtype(x.dtype, np.floating):
            raise TypeError(f"{name}: expected a float array, got {x.dtype}")
        return x

    def stage1(self, x, block):
        return F.stage1_quantize(x, block)

    def stage2(self, q8, bits, group, order):
        packed, s2, z2 = F.stage2_quantize(q8, bits, group, order)
        return packed.view(np.int8), s2.view(np.int8), z2

    def buffer_quantize(self, x, scale):
        return F.buffer_quantize(x, scale)

    def to_numpy(self, x):
        return x


class _TorchBackend:
    name = "torch"

    def __init__(self, device):
        import torch

        from qattn import torch_quant

        self.torch, self.tq = torch, torch_quant
        dev = torch.device(device if device is not None else "cpu")
        if dev.type == "cuda" and dev.index is None:
            dev = torch.device("cuda", torch.cuda.current_device())
        self.device = dev
        self.i8, self.f32 = torch.int8, torch.float32

    def zeros(self, n, dtype):
        return self.torch.zeros(n, dtype=dtype, device=self.device)

    def reshape(self, flat, n, shape):
        return flat[:n].view(shape)

    def clone(self, x):
        return x.clone()

    def contiguous(self, x):
        return x.contiguous()

    def nbytes(self, x):
        return x.numel() * x.element_size()

    def check_input(self, x, name):
        if not isinstance(x, self.torch.Tensor):
            raise TypeError(f"{name}: expected a torch.Tensor, got {type(x).__name__}")
        if not x.is_floating_point():
            raise TypeError(f"{name}: expected a float tensor, got {x.dtype}")
        if x.device != self.device:
            raise ValueError(f"{name}: expected a tensor on {self.device}, got {x.device}")
        return x

    def stage1(self, x, block):
        return self.tq.stage1_quantize(x, block)

    def stage2(self, q8, bits, group, order):
        return self.tq.stage2_quantize(q8, bits, group, order)

    def buffer_quantize(self, x, scale):
        return self.tq.buffer_quantize(x, scale)

    def to_numpy(self, x):
        return x.detach().cpu().numpy()


def _backend(name, device):
    if name == "numpy":
        if device not in (None, "cpu"):
            raise ValueError("the numpy backend keeps host arrays; device must be None")
        return _NumpyBackend()
    if name == "torch":
        return _TorchBackend(device)
    raise ValueError(f"backend must be 'numpy' or 'torch', got {name!r}")


# --------------------------------------------------------------------------------------------
# One layer
# --------------------------------------------------------------------------------------------


class _Growable:
    """A flat preallocated buffer whose prefix is a dense tensor of ``shape_of(n)`` for the
    current token count ``n``; ``axis`` is the token axis, one entry per ``unit`` tokens."""

    def __init__(self, be, dtype, shape_of, axis, unit, capacity):
        self.be, self.shape_of, self.axis, self.unit = be, shape_of, axis, unit
        self.flat = be.zeros(math.prod(shape_of(capacity)), dtype)
        self.n = 0

    def view(self, n=None):
        shape = self.shape_of(self.n if n is None else n)
        return self.be.reshape(self.flat, math.prod(shape), shape)

    def append(self, part, count):
        """Appends ``part`` (``count`` tokens) after the current ones."""
        old_shape = self.shape_of(self.n)
        # Nothing before the axis but size-1 dims: the old prefix is already in place.
        moves = self.n > 0 and math.prod(old_shape[: self.axis]) > 1
        old = self.be.clone(self.view()) if moves else None
        new = self.view(self.n + count)
        index = [slice(None)] * len(old_shape)
        u = self.unit
        if moves:
            index[self.axis] = slice(0, self.n // u)
            new[tuple(index)] = old
        index[self.axis] = slice(self.n // u, (self.n + count) // u)
        new[tuple(index)] = part
        self.n += count

    def nbytes(self):
        return self.be.nbytes(self.flat)


class _Side:
    """K or V of one layer: the stage-2 cache and the decode buffer."""

    def __init__(self, be, batch, heads, d, capacity, bits, block, group, n_b, order):
        self.be, self.bits, self.block, self.group, self.order = be, bits, block, group, order
        r = d * sum(bits) // 8
        self.codes = _Growable(be, be.i8, lambda n: (batch, n, r), 1, 1, capacity)
        self.s1 = _Growable(be, be.f32, lambda n: (batch, heads, n // block), 2, block, capacity)
        self.s2 = _Growable(be, be.i8, lambda n: (batch, heads, n // group, d), 2, group, capacity)
        self.z2 = _Growable(be, be.i8, lambda n: (batch, heads, n // group, d), 2, group, capacity)
        n = batch * heads * n_b * d
        self.buffer = be.reshape(be.zeros(n, be.i8), n, (batch, heads, n_b, d))
        self.scale = be.reshape(be.zeros(batch * heads, be.f32), batch * heads, (batch, heads))

    def write_stage2(self, q8, s1_blocks):
        """Appends stage-1 data ``q8 [B, H, n, d]`` (n a multiple of the block) with block
        scales ``s1_blocks [B, H, n/block]`` as stage 2."""
        n = q8.shape[2]
        packed, s2, z2 = self.be.stage2(q8, self.bits, self.group, self.order)
        for storage, part in ((self.codes, packed), (self.s1, s1_blocks), (self.s2, s2),
                              (self.z2, z2)):
            storage.append(part, n)

    def nbytes(self):
        return (self.codes.nbytes() + self.s1.nbytes() + self.s2.nbytes() + self.z2.nbytes()
                + self.be.nbytes(self.buffer) + self.be.nbytes(self.scale))


class LayerCache:
    """The K and V of one layer. ``length``: tokens in stage 2; ``buffered``: tokens in the
    decode buffer; ``tokens = length + buffered``."""

    def __init__(self, be, *, batch, heads, head_dim, capacity, bits, v_bits, block, group,
                 buffer_tokens, order):
        self.be = be
        self.batch, self.heads, self.head_dim = batch, heads, head_dim
        self.capacity, self.block, self.group, self.buffer_tokens = (capacity, block, group,
                                                                     buffer_tokens)
        self.bits, self.v_bits, self.order = bits, v_bits, order
        args = (be, batch, heads, head_dim, capacity)
        self.k = _Side(*args, bits, block, group, buffer_tokens, order)
        self.v = _Side(*args, v_bits, block, group, buffer_tokens, order)
        self.length = 0
        self.buffered = 0
        self.flushes = 0

    @property
    def tokens(self):
        return self.length + self.buffered

    def _check(self, x, name, n=None):
        x = self.be.check_input(x, name)
        want = (self.batch, self.heads, x.shape[2] if n is None else n, self.head_dim)
        if x.ndim != 4 or tuple(x.shape) != want:
            raise ValueError(f"{name}: expected shape [B, Hkv, n, d] = {list(want)}, "
                             f"got {list(x.shape)}")
        return x

    def prefill(self, k, v):
        """Fills the empty layer with the prompt's K and V (``[B, Hkv, P, d]`` floats): its
        whole blocks to stage 2, the ragged rest into the decode buffer, whose scale becomes the
        stage-1 scale of the prompt's last (possibly short) block."""
        k, v = self._check(k, "k"), self._check(v, "v", k.shape[2])
        p = k.shape[2]
        if self.tokens:
            raise RuntimeError("prefill needs an empty layer cache (call reset() first)")
        if p == 0:
            raise ValueError("prefill needs at least one token")
        if p > self.capacity:
            raise KVCacheOverflow(f"the prompt has {p} tokens, the cache holds {self.capacity}")
        whole = p // self.block * self.block
        for side, x in ((self.k, k), (self.v, v)):
            q8, s1 = self.be.stage1(x, self.block)
            side.scale[...] = s1[:, :, -1]
            if whole:
                side.write_stage2(self.be.contiguous(q8[:, :, :whole]),
                                  self.be.contiguous(s1[:, :, : whole // self.block]))
            if p > whole:
                side.buffer[:, :, : p - whole] = q8[:, :, whole:]
        self.length, self.buffered = whole, p - whole

    def append(self, k, v):
        """Appends decode tokens (``[B, Hkv, n, d]`` floats, usually n = 1), quantized into the
        decode buffer with its fixed scale; a full buffer is flushed to stage 2 first. Raises
        KVCacheOverflow, before changing anything, if the tokens do not fit."""
        k, v = self._check(k, "k"), self._check(v, "v", k.shape[2])
        n = k.shape[2]
        if self.tokens == 0:
            raise RuntimeError("append needs a prefilled layer cache (the buffer's scale comes "
                               "from the prompt)")
        if self.tokens + n > self.capacity:
            raise KVCacheOverflow(f"{self.tokens} + {n} tokens exceed the capacity of "
                                  f"{self.capacity} tokens")
        for i in range(n):
            if self.buffered == self.buffer_tokens:
                self.flush()
            t = self.buffered
            for side, x in ((self.k, k), (self.v, v)):
                side.buffer[:, :, t : t + 1] = self.be.buffer_quantize(x[:, :, i : i + 1],
                                                                       side.scale)
            self.buffered += 1

    def flush(self):
        """Compresses the full decode buffer to stage 2 and appends it to the cache."""
        if self.buffered != self.buffer_tokens:
            raise RuntimeError(f"flush needs a full buffer ({self.buffered} of "
                               f"{self.buffer_tokens} tokens)")
        for side in (self.k, self.v):
            reps = self.buffer_tokens // self.block
            s1 = side.scale[:, :, None]
            s1 = s1.repeat(reps, axis=2) if self.be.name == "numpy" else s1.repeat(1, 1, reps)
            side.write_stage2(self.be.contiguous(side.buffer), self.be.contiguous(s1))
        self.length += self.buffer_tokens
        self.buffered = 0
        self.flushes += 1

    def reset(self):
        for side in (self.k, self.v):
            for g in (side.codes, side.s1, side.s2, side.z2):
                g.n = 0
        self.length = self.buffered = 0

    def operands(self, which):
        """The attention operands of K (``which='k'``) or V as dense tensors, in op order:
        ``(packed, s1, s2, z2)`` for the cache, then ``(buffer, buffer_scale)`` if tokens are
        buffered (the buffer cut to ``buffered`` tokens; a copy) or ``None``."""
        side = self.k if which == "k" else self.v
        cache = (side.codes.view(), side.s1.view(), side.s2.view(), side.z2.view())
        if not self.buffered:
            return cache, None
        return cache, (self.be.contiguous(side.buffer[:, :, : self.buffered]), side.scale)

    def dequantized(self, which):
        """K or V as the attention sees it (float32 NumPy ``[B, Hkv, tokens, d]``), through
        ``qattn.format``: a check of the cache's content against FORMAT.md."""
        (packed, s1, s2, z2), buf = self.operands(which)
        side = self.k if which == "k" else self.v
        np_ = self.be.to_numpy
        parts = []
        if self.length:
            parts.append(F.dequantized_kv(np_(s1), self.block, packed=np_(packed), s2=np_(s2),
                                          z2=np_(z2), bits=side.bits, group=self.group,
                                          order=self.order))
        if buf is not None:
            parts.append(np_(buf[0]).astype(np.float32) * np_(buf[1])[:, :, None, None])
        return np.concatenate(parts, axis=2)

    def nbytes(self):
        return self.k.nbytes() + self.v.nbytes()


# --------------------------------------------------------------------------------------------
# The cache of a model
# --------------------------------------------------------------------------------------------


class QuantizedKVCache:
    """The quantized K/V of every layer of a model, preallocated.

    ``bits``: bit width of every KV head (an int, a list per head, or a list of such lists per
    layer); ``v_bits`` the same for V (default: ``bits``). ``block``: stage-1 block; ``group``:
    stage-2 group (divides the block); ``buffer_tokens`` (``n_b``): decode-buffer size, a
    multiple of the block; ``capacity``: the most tokens per layer, a multiple of the block.
    ``backend``: 'numpy' or 'torch' (with ``device``).
    """

    def __init__(self, *, layers, batch, kv_heads, head_dim, capacity, bits=4, v_bits=None,
                 block=64, group=16, buffer_tokens=None, order="lsb_first", backend="numpy",
                 device=None):
        buffer_tokens = block if buffer_tokens is None else buffer_tokens
        if block <= 0 or group <= 0 or block % group:
            raise ValueError(f"the group ({group}) must divide the block ({block})")
        if buffer_tokens <= 0 or buffer_tokens % block:
            raise ValueError(f"buffer_tokens ({buffer_tokens}) must be a positive multiple of "
                             f"the block ({block})")
        if capacity <= 0 or capacity % block:
            raise ValueError(f"capacity ({capacity}) must be a positive multiple of the block "
                             f"({block})")
        if head_dim % 8:
            raise ValueError(f"head_dim must be a multiple of 8, got {head_dim}")

        def per_layer(b):
            if isinstance(b, (list, tuple)) and b and isinstance(b[0], (list, tuple)):
                if len(b) != layers:
                    raise ValueError(f"per-layer bits list {len(b)} layers, the model has "
                                     f"{layers}")
                return [F.head_bits(x, kv_heads) for x in b]
            return [F.head_bits(b, kv_heads)] * layers

        self.bits = per_layer(bits)
        self.v_bits = per_layer(bits if v_bits is None else v_bits)
        self.backend = _backend(backend, device)
        self.layers_count, self.batch, self.kv_heads, self.head_dim = (layers, batch, kv_heads,
                                                                       head_dim)
        self.capacity, self.block, self.group, self.buffer_tokens = (capacity, block, group,
                                                                     buffer_tokens)
        self.layers = [
            LayerCache(self.backend, batch=batch, heads=kv_heads, head_dim=head_dim,
                       capacity=capacity, bits=self.bits[i], v_bits=self.v_bits[i], block=block,
                       group=group, buffer_tokens=buffer_tokens, order=order)
            for i in range(layers)
        ]

    def __getitem__(self, layer):
        return self.layers[layer]

    def __len__(self):
        return len(self.layers)

    @property
    def tokens(self):
        return self.layers[0].tokens

    def reset(self):
        for layer in self.layers:
            layer.reset()

    # -- memory accounting ----------------------------------------------------------------------

    def bytes_per_token(self):
        """Stage-2 bytes per token of K and V over all layers (codes + scales + zero points),
        not counting the fixed decode buffers."""
        return sum((kv_bytes_per_token(self.kv_heads, self.head_dim, kb, self.block, self.group)
                    + kv_bytes_per_token(self.kv_heads, self.head_dim, vb, self.block,
                                         self.group)) / 2
                   for kb, vb in zip(self.bits, self.v_bits))

    def bf16_bytes_per_token(self):
        """Bytes per token of the same K and V in bf16: ``2 * Hkv * d * 2`` per layer."""
        return self.layers_count * 2 * self.kv_heads * self.head_dim * 2

    def compression(self):
        """bf16 bytes per token over stage-2 bytes per token."""
        return self.bf16_bytes_per_token() / self.bytes_per_token()

    def buffer_bytes(self):
        """The decode buffers and their scales, all layers: ``2 * (B H n_b d + 4 B H)`` each."""
        per = self.batch * self.kv_heads * (self.buffer_tokens * self.head_dim + 4)
        return self.layers_count * 2 * per

    def allocated_bytes(self):
        """Every byte the cache allocated (stage-2 storage at capacity plus the buffers)."""
        return sum(layer.nbytes() for layer in self.layers)

    def used_bytes(self):
        """Bytes holding the current tokens: the stage-2 part of ``length`` tokens plus the
        buffers (allocated whole)."""
        return self.batch * self.layers[0].length * self.bytes_per_token() + self.buffer_bytes()

    def bf16_bytes(self, tokens=None):
        """What a bf16 cache of ``tokens`` (default: the current count) would take."""
        tokens = self.tokens if tokens is None else tokens
        return self.batch * tokens * self.bf16_bytes_per_token()

    def describe(self):
        bits = sorted({tuple(b) for b in self.bits + self.v_bits})
        return (f"{self.layers_count} layers x {self.kv_heads} KV heads x d {self.head_dim}, "
                f"bits {[list(b) for b in bits]}, block {self.block}, group {self.group}, "
                f"buffer {self.buffer_tokens}: {self.bytes_per_token():.1f} B/token vs "
                f"{self.bf16_bytes_per_token()} B/token bf16 ({self.compression():.2f}x)")
