# RUN: rm -rf %t && %python %s %t | FileCheck %s
# REQUIRES: torch
"""qattn.torch_ops on CPU tensors over a cpu artifact (the reference lowering): the same entry
points and input checks as on CUDA (scripts/torch-check/test_ops.py runs those there), results
against float64 attention of the operands qattn.format dequantizes, operands straight from a
torch-backend qattn.kv_cache, and every bad call rejected with a clear message."""

import os
import sys

import numpy as np
import torch

from qattn import format as F
from qattn import ir, torch_ops
from qattn import torch_quant as TQ
from qattn.compiler import compile_module
from qattn.kv_cache import QuantizedKVCache

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
from testutil import expect  # noqa: E402

out = sys.argv[1]
B, HQ, HKV, D, BLOCK, GROUP = 1, 4, 2, 32, 16, 8
four = ir.Scheme(bits=(4,), group=GROUP, block=BLOCK)
mixed = ir.Scheme(bits=(4, 2), group=GROUP, block=BLOCK)
art = compile_module(ir.module(
    ir.attention_function("decode", batch=B, hq=HQ, hkv=HKV, nq=1, nk=48, d=D, kv=mixed,
                          q="f32", buffer=3, out="bf16"),
    ir.attention_function("prefill", batch=B, hq=HQ, hkv=HKV, nq=48, nk=48, d=D, kv=four,
                          q="int8", causal=True, out="f32")), os.path.join(out, "cpu"))
rng = np.random.default_rng(2)

# Decode over a torch-backend cache: prefill 40 tokens (32 to stage 2, 8 buffered), 11 more
# (a flush at 48 tokens, 3 buffered).
cache = QuantizedKVCache(layers=1, batch=B, kv_heads=HKV, head_dim=D, capacity=64, bits=[4, 2],
                         block=BLOCK, group=GROUP, buffer_tokens=BLOCK, backend="torch")
k = torch.from_numpy(rng.normal(size=(B, HKV, 51, D)).astype(np.float32)).to(torch.bfloat16)
v = torch.from_numpy(rng.normal(size=(B, HKV, 51, D)).astype(np.float32)).to(torch.bfloat16)
layer = cache[0]
layer.prefill(k[:, :, :40], v[:, :, :40])
layer.append(k[:, :, 40:], v[:, :, 40:])
print(f"cache {layer.length} + {layer.buffered}")
# CHECK: cache 48 + 3
q = torch.from_numpy(rng.normal(size=(B, HQ, 1, D)).astype(np.float32))
ops = torch_ops.cache_operands(layer)
o = torch_ops.decode_attention(art, "decode", q, **ops)
ref = F.attention(q.numpy(), layer.dequantized("k"), layer.dequantized("v"), 1 / np.sqrt(D),
                  False)
err = float(np.abs(o.float().numpy() - ref).max() / np.abs(ref).max())
assert o.dtype == torch.bfloat16 and err < 1e-2, err
print(f"decode over the cache: bf16 output, err {err:.0e}" if err > 0 else "exact")
# CHECK: decode over the cache: bf16 output

# Prefill: BPQ int8 queries quantized in torch, K/V from qattn.format.
x = rng.normal(size=(2, B, HKV, 48, D)).astype(np.float32)
kv = []
deq = []
for i in range(2):
    q8, s1 = F.stage1_quantize(x[i], BLOCK)
    p, g, z = F.stage2_quantize(q8, [4], GROUP)
    kv.append([torch.from_numpy(a) for a in (p.view(np.int8), s1, g.view(np.int8), z)])
    deq.append(F.dequantized_kv(s1, BLOCK, packed=p, s2=g, z2=z, bits=[4], group=GROUP))
qf = torch.from_numpy(rng.normal(size=(B, HQ, 48, D)).astype(np.float32))
q8, qs = TQ.stage1_quantize(qf, BLOCK)
o = torch_ops.prefill_attention(art, "prefill", q8, qs, kv[0], kv[1])
ref = F.attention(F.stage1_dequantize(q8.numpy(), qs.numpy(), BLOCK), deq[0], deq[1],
                  1 / np.sqrt(D), True)
err = float(np.abs(o.numpy() - ref).max() / np.abs(ref).max())
assert err < 1e-5, err
print("prefill: ok")
# CHECK: prefill: ok



dec = lambda **kw: torch_ops.decode_attention(art, "decode", **dict(dict(q=q, **ops), **kw))
expect(TypeError, lambda: dec(q=q.double()))
# CHECK: TypeError: qattn.decode_attention, function 'decode': operand 0 ('q'): expected dtype torch.float32, got torch.float64
expect(ValueError, lambda: dec(q=q[:, :2].contiguous()))
# CHECK: ValueError: qattn.decode_attention, function 'decode': operand 0 ('q'): expected shape [1, 4, 1, 32], got [1, 2, 1, 32]
kg = ops["k"][2]
expect(ValueError, lambda: dec(k=ops["k"][:2] + [kg.transpose(2, 3).contiguous().transpose(2, 3),
                                                 ops["k"][3]]))
# CHECK: ValueError: qattn.decode_attention, function 'decode': operand 3 ('kg'): the tensor is not contiguous (call .contiguous())
kp = ops["k"][0]
shifted = torch.empty(kp.numel() + 1, dtype=torch.int8)[1:].view(kp.shape)
expect(ValueError, lambda: dec(k=[shifted] + ops["k"][1:]))
# CHECK: ValueError: {{.*}} operand 1 ('kp'): data pointer {{.*}} is not 16-byte aligned
expect(ValueError, lambda: dec(k=ops["k"][:3]))
# CHECK: ValueError: qattn.decode_attention, function 'decode': expected 13 operands (q, kp, ks, kg, kz, vp, vs, vg, vz, kb, kbs, vb, vbs), got 12
expect(ValueError, lambda: dec(v_buffer=None))
# CHECK: ValueError: qattn.decode_attention: give all four of k_buffer, k_buffer_scale, v_buffer, v_buffer_scale, or none
expect(ValueError, lambda: torch_ops.decode_attention(art, "nope", q, ops["k"], ops["v"]))
# CHECK: ValueError: qattn.decode_attention: {{.*}}: no function 'nope' (functions: decode, prefill)
expect(TypeError, lambda: dec(k=[kp.numpy()] + ops["k"][1:]))
# CHECK: TypeError: {{.*}} operand 1 ('kp'): expected a torch.Tensor, got ndarray
cuda = compile_module(ir.module(ir.attention_function(
    "decode", batch=B, hq=HQ, hkv=HKV, nq=1, nk=48, d=D, kv=mixed, q="f32", buffer=3)),
    os.path.join(out, "cuda"), target="cuda")
expect(ValueError, lambda: torch_ops.decode_attention(cuda, "decode", q, **ops))
# CHECK: ValueError: {{.*}}cuda: a cuda artifact, the tensors are on the CPU: compile it with --target=cpu
