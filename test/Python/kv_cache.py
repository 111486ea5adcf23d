# RUN: %python %s | FileCheck %s
# REQUIRES: numpy
"""qattn.kv_cache with the NumPy backend: prefill (whole blocks to stage 2, ragged rest to the
decode buffer), appends, flushes of the full buffer, per-head and per-layer bit widths, the
dense operands, memory accounting and overflow, all against docs/FORMAT.md as qattn.format
implements it (bit-exact)."""

import numpy as np

from qattn import format as F
from qattn.kv_cache import KVCacheOverflow, QuantizedKVCache, kv_bytes_per_token

rng = np.random.default_rng(5)
B, H, D, BLOCK, GROUP, NB = 2, 3, 16, 8, 4, 16


def expected_side(x, prompt, bits, order="lsb_first"):
    """What the cache must hold for tokens x[:, :, :T] (prompt tokens first), from FORMAT.md:
    stage 1 of the prompt; the buffer's scale = the prompt's last block's stage-1 scale; later
    tokens buffer-quantized with it; every flushed/whole block as stage 2 of its int8 data."""
    q8p, s1p = F.stage1_quantize(x[:, :, :prompt], BLOCK)
    scale = s1p[:, :, -1]
    later = F.buffer_quantize(x[:, :, prompt:], scale)
    q8 = np.concatenate([q8p, later], axis=2)
    whole = prompt // BLOCK * BLOCK
    nblocks = q8.shape[2] // BLOCK
    s1 = np.concatenate([s1p[:, :, : whole // BLOCK],
                         np.repeat(scale[:, :, None], nblocks - whole // BLOCK, axis=2)], axis=2)
    return q8, s1, scale


def check(cache, layer, k, v, prompt, tag):
    lc = cache[layer]
    t = lc.tokens
    for which, x, bits in (("k", k, cache.bits[layer]), ("v", v, cache.v_bits[layer])):
        q8, s1, scale = expected_side(x[:, :, :t], prompt, bits)
        n = lc.length
        (packed, s1c, s2c, z2c), buf = lc.operands(which)
        assert packed.shape == (B, n, D * sum(bits) // 8) and packed.flags.c_contiguous
        assert s1c.shape == (B, H, n // BLOCK) and s1c.flags.c_contiguous
        assert s2c.shape == z2c.shape == (B, H, n // GROUP, D)
        ep, es2, ez2 = F.stage2_quantize(q8[:, :, :n], bits, GROUP)
        assert np.array_equal(packed.view(np.uint8), ep), (tag, which, "codes")
        assert np.array_equal(s1c, s1[:, :, : n // BLOCK]), (tag, which, "s1")
        assert np.array_equal(s2c.view(np.uint8), es2) and np.array_equal(z2c, ez2), tag
        if lc.buffered:
            assert buf[0].shape == (B, H, lc.buffered, D) and buf[0].flags.c_contiguous
            assert np.array_equal(buf[0], q8[:, :, n:t]), (tag, which, "buffer")
            assert np.array_equal(buf[1], scale), (tag, which, "buffer scale")
        else:
            assert buf is None
        deq = F.dequantized_kv(s1[:, :, : n // BLOCK], BLOCK, packed=ep, s2=es2, z2=ez2,
                               bits=bits, group=GROUP,
                               buffer=q8[:, :, n:t] if t > n else None,
                               buffer_scale=scale if t > n else None) if n else \
            q8[:, :, :t].astype(np.float32) * scale[:, :, None, None]
        assert np.array_equal(lc.dequantized(which), deq), (tag, which, "dequantized")


# Two layers: layer 0 mixed 4/2/3 bits for K and 2 bits for V, layer 1 4 bits.
k = [rng.normal(size=(B, H, 80, D)).astype(np.float32) * (1 + 4 * (l == 1)) for l in range(2)]
v = [rng.normal(size=(B, H, 80, D)).astype(np.float32) for _ in range(2)]
k[0][:, :, :, 3] *= 20  # an outlier channel

for prompt in (16, 21, 5):
    cache = QuantizedKVCache(layers=2, batch=B, kv_heads=H, head_dim=D, capacity=80,
                             bits=[[4, 2, 3], [4]], v_bits=[[2], [4, 4, 4]], block=BLOCK,
                             group=GROUP, buffer_tokens=NB)
    for l in range(2):
        cache[l].prefill(k[l][:, :, :prompt], v[l][:, :, :prompt])
        check(cache, l, k[l], v[l], prompt, f"prompt {prompt} layer {l} prefill")
    flushes = 0
    for pos in range(prompt, 80):
        for l in range(2):
            cache[l].append(k[l][:, :, pos : pos + 1], v[l][:, :, pos : pos + 1])
            check(cache, l, k[l], v[l], prompt, f"prompt {prompt} layer {l} pos {pos}")
        assert cache.tokens == pos + 1
        assert 1 <= cache[0].buffered <= NB
    print(f"prompt {prompt}: {cache[0].length} tokens in stage 2 after {cache[0].flushes} "
          f"flushes, {cache[0].buffered} buffered: OK")
    try:
        cache[0].append(k[0][:, :, :1], v[0][:, :, :1])
    except KVCacheOverflow as e:
        print(f"overflow: {e}")
    else:
        raise AssertionError("no overflow")
    assert cache.tokens == 80  # nothing changed

# CHECK: prompt 16: 64 tokens in stage 2 after 3 flushes, 16 buffered: OK
# CHECK: overflow: 80 + 1 tokens exceed the capacity of 80 tokens
# CHECK: prompt 21: 64 tokens in stage 2 after 3 flushes, 16 buffered: OK
# CHECK: prompt 5: 64 tokens in stage 2 after 4 flushes, 16 buffered: OK

# Several tokens in one append, crossing a flush, equal token-by-token appends.
a = QuantizedKVCache(layers=1, batch=B, kv_heads=H, head_dim=D, capacity=64, bits=[4, 2, 4],
                     block=BLOCK, group=GROUP, buffer_tokens=NB)
b = QuantizedKVCache(layers=1, batch=B, kv_heads=H, head_dim=D, capacity=64, bits=[4, 2, 4],
                     block=BLOCK, group=GROUP, buffer_tokens=NB)
for c in (a, b):
    c[0].prefill(k[0][:, :, :8], v[0][:, :, :8])
a[0].append(k[0][:, :, 8:40], v[0][:, :, 8:40])
for pos in range(8, 40):
    b[0].append(k[0][:, :, pos : pos + 1], v[0][:, :, pos : pos + 1])
for which in "kv":
    assert np.array_equal(a[0].dequantized(which), b[0].dequantized(which))
print(f"multi-token append: {a[0].length} + {a[0].buffered} tokens OK")
# CHECK: multi-token append: 24 + 16 tokens OK

# Memory accounting: 4-bit K/V, 3 heads, d 16, block 8, group 4, per token and layer, each of
# K and V: codes 3*16*4/8 = 24 B, block scales 4*3/8 = 1.5 B, group scales + zeros
# 2*3*16/4 = 24 B. With group 16 the scales and zero points cost 1 bit per value, so 4-bit
# codes take 5 bits: 3.2x less than bf16.
assert kv_bytes_per_token(3, 16, 4, 8, 4) == 2 * (24 + 1.5 + 24)
c4 = QuantizedKVCache(layers=4, batch=1, kv_heads=8, head_dim=128, capacity=4096, bits=4,
                      block=64, group=16, buffer_tokens=64)
per = c4.bytes_per_token()
print(f"4-bit: {per:.1f} B/token vs {c4.bf16_bytes_per_token()} bf16, "
      f"{c4.compression():.2f}x")
# CHECK: 4-bit: 5124.0 B/token vs 16384 bf16, 3.20x
mixed = QuantizedKVCache(layers=4, batch=1, kv_heads=8, head_dim=128, capacity=4096,
                         bits=[4, 2, 4, 2, 4, 2, 4, 2], block=64, group=16, buffer_tokens=64)
print(f"mixed: {mixed.bytes_per_token():.1f} B/token, {mixed.compression():.2f}x")
# CHECK: mixed: 4100.0 B/token, 4.00x
alloc = c4.allocated_bytes()
assert alloc == 4096 * per + c4.buffer_bytes(), (alloc, 4096 * per + c4.buffer_bytes())
assert c4.used_bytes() == c4.buffer_bytes()
print(f"allocated {alloc} B for 4096 tokens")
# CHECK: allocated 21512448 B for 4096 tokens

# Bad input: wrong shapes, types, append before prefill, prefill twice, bad configuration.
c = QuantizedKVCache(layers=1, batch=B, kv_heads=H, head_dim=D, capacity=32, block=BLOCK,
                     group=GROUP, buffer_tokens=NB)
errors = []
for call in (
    lambda: c[0].append(k[0][:, :, :1], v[0][:, :, :1]),
    lambda: c[0].prefill(k[0][:, :2, :4], v[0][:, :2, :4]),
    lambda: c[0].prefill(k[0][:, :, :4].astype(np.int32), v[0][:, :, :4]),
    lambda: c[0].prefill(k[0][:, :, :40], v[0][:, :, :40]),
    lambda: QuantizedKVCache(layers=1, batch=1, kv_heads=2, head_dim=16, capacity=30, block=8),
    lambda: QuantizedKVCache(layers=1, batch=1, kv_heads=2, head_dim=16, capacity=32, block=8,
                             group=3),
    lambda: QuantizedKVCache(layers=1, batch=1, kv_heads=2, head_dim=16, capacity=32, block=8,
                             group=4, buffer_tokens=12),
    lambda: QuantizedKVCache(layers=1, batch=1, kv_heads=2, head_dim=16, capacity=32, block=8,
                             group=4, bits=[4, 5]),
    lambda: QuantizedKVCache(layers=2, batch=1, kv_heads=2, head_dim=16, capacity=32, block=8,
                             group=4, bits=[[4, 4]]),
):
    try:
        call()
    except (ValueError, TypeError, RuntimeError) as e:
        errors.append(type(e).__name__)
    else:
        raise AssertionError("expected an error")
print("errors:", " ".join(errors))
# CHECK: errors: RuntimeError ValueError TypeError KVCacheOverflow ValueError ValueError ValueError ValueError ValueError
c[0].prefill(k[0][:, :, :4], v[0][:, :, :4])
try:
    c[0].prefill(k[0][:, :, :4], v[0][:, :, :4])
except RuntimeError as e:
    print("prefill twice:", e)
# CHECK: prefill twice: prefill needs an empty layer cache
