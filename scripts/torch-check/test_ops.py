#!/usr/bin/env python3
"""The PyTorch side of qattn on the GPU machine: qattn.torch_quant on CUDA tensors bit-exact
against qattn.format; the custom ops torch.ops.qattn.decode_attention / prefill_attention
against float64 attention of the operands qattn.format dequantizes; input validation; a side
stream; torch.compile (fullgraph) and torch.library.opcheck; the quantized KV cache on CUDA.

The artifacts come from `python3 scripts/torch-check/prepare.py ART` on the MLIR machine.
Prints PASS/FAIL/SKIP per test (INFO lines are not counted) and "N passed, N failed"; exit 1 if
any failed. With --device cpu (artifacts from prepare.py --target cpu) the same tests run on
CPU tensors over the reference lowering, those that need CUDA or torch.compile skipped: a check
of this script itself on a machine without a GPU.

Every test draws fresh random data: its seed comes from a base seed (os.urandom, or
QATTN_TORCH_SEED) and the test's name, and is printed as an INFO line; QATTN_TORCH_SEED=N reruns
with the same data. Results are compared with float64 attention of the dequantized operands
(side stream and torch.compile included), and the memory the op's output is allocated from is
filled with NaN first (see poison), so an output the kernel leaves unwritten shows.

usage: test_ops.py [ART] [--device cuda|cpu]     (default artifacts/torch-check, cuda)
"""
import argparse
import json
import os
import sys
import time
import traceback
import zlib

import numpy as np
import torch

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
from qattn import format as F  # noqa: E402
from qattn import torch_ops  # noqa: E402,F401  (registers torch.ops.qattn.*)
from qattn import torch_quant as TQ  # noqa: E402
from qattn.kv_cache import KVCacheOverflow, QuantizedKVCache  # noqa: E402

_ap = argparse.ArgumentParser()
_ap.add_argument("art", nargs="?", default=os.path.join(ROOT, "artifacts", "torch-check"))
_ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
_args = _ap.parse_args()
ART = _args.art
OPS = os.path.join(ART, "ops")
CONF = json.load(open(os.path.join(OPS, "cases.json")))
BLOCK, GROUP = CONF["block"], CONF["group"]
CASES = {c["name"]: c for c in CONF["cases"]}
DEV = (torch.device("cuda", torch.cuda.current_device()) if _args.device == "cuda"
       else torch.device("cpu"))
CUSTOM_OP = hasattr(torch.library, "custom_op")
# |out - ref| / max|ref| allowed: f32 accumulation order plus half an ulp of the output; the
# tensor-core kernels (prefill, decode) round P and V' (decode: also float Q) to f16 (2^-11
# relative).
TOL = {"f32": 2e-4, "f16": 2e-3, "bf16": 1e-2}
MMA_TOL = 1e-3
BASE_SEED = int(os.environ.get("QATTN_TORCH_SEED", int.from_bytes(os.urandom(4), "little")))


def seed_for(label):
    """A fresh seed per test (and label within it), printed so that a failure can be repeated:
    QATTN_TORCH_SEED=<base> gives every test the same data again."""
    seed = (BASE_SEED * 1000003 + zlib.crc32(label.encode())) % 2**32
    info(f"seed {label}: {seed} (base QATTN_TORCH_SEED={BASE_SEED})")
    return seed


def uses_f16_operands(name):
    """Whether function NAME of the ops artifact launches a tensor-core kernel (mma.sync, wgmma
    or the decode kernel: f16 P and V operands)."""
    manifest = json.load(open(os.path.join(OPS, "manifest.json")))
    fn = next(f for f in manifest["functions"] if f["name"] == name)
    return any(l["kernel"].endswith(("_mma", "_wgmma", "_decode")) for l in fn["launches"])

passed, failed, skipped, tests = [], [], [], []


class Skip(Exception):
    pass


def need_cuda():
    if DEV.type != "cuda":
        raise Skip("needs CUDA")


def need_custom_op():
    if not CUSTOM_OP or not hasattr(torch, "compile"):
        raise Skip(f"needs torch.library.custom_op and torch.compile (torch {torch.__version__})")


def sync():
    if DEV.type == "cuda":
        torch.cuda.synchronize()


def test(fn):
    tests.append(fn)
    return fn


def info(msg):
    print(f"INFO {msg}", flush=True)


def to_dev(a):
    return torch.from_numpy(np.ascontiguousarray(a)).to(DEV)


def out_f32(t):
    return t.float().cpu().numpy()


def rel_err(out, ref):
    return float(np.abs(out.astype(np.float64) - ref).max() / np.abs(ref).max())


def poison(shape, dtype):
    """Fills the memory the next allocation of SHAPE x DTYPE on DEV will most likely get with NaN.
    The ops allocate their output themselves (torch.empty in qattn.torch_ops._run) and take no
    output buffer; the caching allocator hands a freed block of the same size back first, so an
    element the kernel does not write stays NaN instead of holding an earlier call's result."""
    t = torch.full(shape, float("nan"), dtype=dtype, device=DEV)
    del t


def out_dtype(c):
    return {"f32": torch.float32, "bf16": torch.bfloat16}[c["out"]]


def case_tol(name, c):
    """The relative tolerance of ops case NAME (see TOL, MMA_TOL)."""
    tol = TOL[c["out"]]
    if DEV.type == "cuda" and uses_f16_operands(name):
        tol = max(tol, MMA_TOL)
    return tol


def check_ref(out, ref, name, c, what="", scale=1.0, extra=0.0):
    """Asserts |out / scale - ref| <= (tol + extra) max|ref| (out a tensor) and returns the
    relative error."""
    o = out_f32(out).astype(np.float64) / scale
    tol = case_tol(name, c) + extra
    err = rel_err(o, ref)
    assert np.isfinite(o).all(), f"{what}: non-finite output ({int((~np.isfinite(o)).sum())})"
    assert err <= tol, f"{what}: error {err:.2e} > {tol:.1e} against float64 attention"
    return err


# --------------------------------------------------------------------------------------------
# Operands from FORMAT.md (qattn.format on the host), and their float64 reference
# --------------------------------------------------------------------------------------------


def kv_operands(rng, c, dist_outlier=False):
    """K or V cache operands for case c (host numpy) and their dequantized float32 values."""
    b, h, n, d = c["batch"], c["hkv"], c["nk"], c["d"]
    x = rng.normal(size=(b, h, n, d)).astype(np.float32)
    if dist_outlier:
        x[..., 3] = 10 * x[..., 3] + 4
    q8, s1 = F.stage1_quantize(x, BLOCK)
    if not c["bits"]:
        return [q8, s1], F.stage1_dequantize(q8, s1, BLOCK)
    p, g, z = F.stage2_quantize(q8, c["bits"], GROUP)
    deq = F.dequantized_kv(s1, BLOCK, packed=p, s2=g, z2=z, bits=c["bits"], group=GROUP)
    return [p.view(np.int8), s1, g.view(np.int8), z], deq


def case_inputs(name, label=None):
    """(op kwargs on the GPU, float64 reference output, case) for an ops case, on fresh random
    data (seed from seed_for(label or name))."""
    kw, ref, c, _ = case_operands(name, label)
    return kw, ref, c


def case_operands(name, label=None):
    """case_inputs and the dequantized (q, k, v) the reference was computed from."""
    c = CASES[name]
    rng = np.random.default_rng(seed_for(label or name))
    kops, kd = kv_operands(rng, c, dist_outlier=True)
    vops, vd = kv_operands(rng, c)
    b, hq, hkv, nq, d = c["batch"], c["hq"], c["hkv"], c["nq"], c["d"]
    kw = dict(k=[to_dev(a) for a in kops], v=[to_dev(a) for a in vops])
    if c["kind"] == "prefill":
        q8, qs = F.stage1_quantize(rng.normal(size=(b, hq, nq, d)).astype(np.float32), BLOCK)
        kw.update(q8=to_dev(q8), q_scales=to_dev(qs))
        qd = F.stage1_dequantize(q8, qs, BLOCK)
    else:
        qf = torch.from_numpy(rng.normal(size=(b, hq, nq, d)).astype(np.float32))
        q = qf.to({"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}[c["q"]])
        kw["q"] = q.to(DEV)
        qd = q.float().numpy()
    if c["buffer"]:
        nb = c["buffer"]
        scales = []
        for x, dst in (("k", kd), ("v", vd)):
            s = (np.abs(rng.normal(size=(b, hkv))) * 0.02 + 0.02).astype(np.float32)
            buf = F.buffer_quantize(rng.normal(size=(b, hkv, nb, d)), s)
            kw[f"{x}_buffer"], kw[f"{x}_buffer_scale"] = to_dev(buf), to_dev(s)
            scales.append(np.concatenate([dst, buf.astype(np.float32) * s[:, :, None, None]], 2))
        kd, vd = scales
    ref = F.attention(qd, kd, vd, 1 / np.sqrt(d), c.get("causal", False))
    return kw, ref, c, (qd, kd, vd)


def call(name, kw):
    """Through torch.ops.qattn.* where the ops are registered (torch 2.4+), else the same
    functions in qattn.torch_ops."""
    ns = torch.ops.qattn if CUSTOM_OP else torch_ops
    if CASES[name]["kind"] == "prefill":
        return ns.prefill_attention(OPS, name, kw["q8"], kw["q_scales"], kw["k"], kw["v"])
    return ns.decode_attention(OPS, name, kw["q"], kw["k"], kw["v"], kw.get("k_buffer"),
                               kw.get("k_buffer_scale"), kw.get("v_buffer"),
                               kw.get("v_buffer_scale"))


# --------------------------------------------------------------------------------------------
# Tests
# --------------------------------------------------------------------------------------------


@test
def quantize_bitexact():
    rng = np.random.default_rng(seed_for("quantize_bitexact"))
    x = rng.normal(size=(2, 8, 1000, 128)).astype(np.float32)
    x[..., 7] = 30 * x[..., 7] + 5
    x[1, 3, :64] = 0
    xt = to_dev(x)
    n = 0
    for block in (64, 32, 48):
        q8, s1 = F.stage1_quantize(x, block)
        tq8, ts1 = TQ.stage1_quantize(xt, block)
        assert np.array_equal(q8, tq8.cpu().numpy()), f"stage 1 q8, block {block}"
        assert np.array_equal(s1, ts1.cpu().numpy()), f"stage 1 s1, block {block}"
        for bits, group in (([4], 16), ([2], 16), ([3], 8), ([4, 2] * 4, 16), ([4], 12)):
            for order in ("lsb_first", "msb_first"):
                p, g, z = F.stage2_quantize(q8, bits, group, order)
                tp, tg, tz = TQ.stage2_quantize(tq8, bits, group, order)
                assert np.array_equal(p.view(np.int8), tp.cpu().numpy()), (bits, group, order)
                assert np.array_equal(g.view(np.int8), tg.cpu().numpy()), (bits, group, order)
                assert np.array_equal(z, tz.cpu().numpy()), (bits, group, order)
                n += 1
    xb = xt.to(torch.bfloat16)
    q8, s1 = F.stage1_quantize(xb.float().cpu().numpy(), 64)
    tq8, ts1 = TQ.stage1_quantize(xb, 64)
    assert np.array_equal(q8, tq8.cpu().numpy()) and np.array_equal(s1, ts1.cpu().numpy())
    s = (np.abs(rng.normal(size=(2, 8))) * 0.02).astype(np.float32)
    s[0, 0] = 0
    assert np.array_equal(F.buffer_quantize(x[:, :, :40], s),
                          TQ.buffer_quantize(xt[:, :, :40], to_dev(s)).cpu().numpy())
    return f"{n} stage-2 cases, stage 1 (f32, bf16 input), buffer: bit-exact on {DEV}"


def _op_case(name):
    def run():
        kw, ref, c = case_inputs(name)
        poison(ref.shape, out_dtype(c))
        out = call(name, kw)
        sync()
        assert out.dtype == out_dtype(c)
        assert tuple(out.shape) == (c["batch"], c["hq"], c["nq"], c["d"])
        err = check_ref(out, ref, name, c)
        return f"max err {err:.2e} (tol {case_tol(name, c):.0e})"
    run.__name__ = f"op_{name}"
    return run


for _name in CASES:
    test(_op_case(_name))


@test
def validation_errors():
    name = "decode_4bit_buf_f32"
    kw, ref, c = case_inputs(name, "validation_errors")
    q = kw["q"]
    bad = {
        "wrong dtype": (TypeError, dict(kw, q=q.double())),
        "wrong shape": (ValueError, dict(kw, q=q[:, :4].contiguous())),
        "non-contiguous": (ValueError, dict(kw, k=[kw["k"][0], kw["k"][1],
                                                   kw["k"][2].transpose(2, 3).contiguous()
                                                   .transpose(2, 3), kw["k"][3]])),
        "misaligned": (ValueError, dict(kw, k=[torch.empty(kw["k"][0].numel() + 1,
                                                           dtype=torch.int8, device=DEV)[1:]
                                               .view(kw["k"][0].shape)] + kw["k"][1:])),
        "missing operand": (ValueError, dict(kw, k=kw["k"][:3])),
        "half the buffers": (ValueError, dict(kw, v_buffer=None)),
    }
    if DEV.type == "cuda":
        bad["cpu tensor"] = (ValueError, dict(kw, q=q.cpu()))
    lines = []
    for what, (exc, args) in bad.items():
        try:
            call(name, args)
            sync()
        except exc as e:
            lines.append(f"{what}: {type(e).__name__}: {e}")
            continue
        raise AssertionError(f"{what}: no {exc.__name__}")
    try:
        torch_ops.decode_attention(OPS, "no_such_function", q, kw["k"], kw["v"])
    except ValueError as e:
        lines.append(f"unknown function: {e}")
    else:
        raise AssertionError("unknown function: no ValueError")
    for line in lines:
        info(line)
    # The op still works after all that.
    poison(ref.shape, out_dtype(c))
    out = call(name, kw)
    sync()
    err = check_ref(out, ref, name, c, "after the bad calls")
    return f"{len(lines)} bad calls rejected with clear messages; then err {err:.2e}"


@test
def side_stream():
    need_cuda()
    name = "decode_4bit_buf_bf16"
    kw, ref, c = case_inputs(name, "side_stream")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        poison(ref.shape, out_dtype(c))  # on s: the block the op's output comes from on s
        out = call(name, kw)
        for t in (out,):
            t.record_stream(s)
    s.synchronize()
    err = check_ref(out, ref, name, c, "side stream")
    return f"side stream: err {err:.2e} against float64 attention"


@test
def torch_compile_fullgraph():
    need_custom_op()
    name = "decode_4bit_buf_f32"
    kw, ref, c = case_inputs(name, "torch_compile_fullgraph")

    def f(q, k0, k1, k2, k3, v0, v1, v2, v3, kb, kbs, vb, vbs):
        o = torch.ops.qattn.decode_attention(OPS, name, q * 1.0, [k0, k1, k2, k3],
                                             [v0, v1, v2, v3], kb, kbs, vb, vbs)
        return o * 2.0 + 1.0

    args = (kw["q"], *kw["k"], *kw["v"], kw["k_buffer"], kw["k_buffer_scale"], kw["v_buffer"],
            kw["v_buffer_scale"])
    torch._dynamo.reset()
    poison(ref.shape, out_dtype(c))
    out = torch.compile(f, fullgraph=True, backend="aot_eager")(*args)
    sync()
    # out = 2 o + 1 in f32: undoing it costs at most an ulp of 1 relative to 2 max|ref|.
    err = check_ref(out - 1.0, ref, name, c, "aot_eager", scale=2.0,
                    extra=2.0 ** -22 / np.abs(ref).max())
    return f"torch.compile(fullgraph=True, backend='aot_eager'): err {err:.2e} against float64"


@test
def torch_compile_inductor():
    need_custom_op()
    name = "decode_mixed_nobuf"
    kw, _, c, (_, kd, vd) = case_operands(name, "torch_compile_inductor")

    def f(q, k, v):
        return torch.ops.qattn.decode_attention(OPS, name, torch.nn.functional.gelu(q), k, v) * 3

    # The reference on eager's gelu(q); inductor may round gelu differently, by up to an ulp of
    # q's type (relative eps). Scores then move by d_s <= eps scale max_j sum |q| |k_j|, the
    # weights by |dw_j| <= w_j (e^(2 d_s) - 1), the output by <= (e^(2 d_s) - 1) max|v|: added
    # below relative to max|ref|.
    gq = torch.nn.functional.gelu(kw["q"])
    qd = gq.float().cpu().numpy()
    scale = 1 / np.sqrt(c["d"])
    ref = F.attention(qd, kd, vd, scale, c.get("causal", False))
    eps = {torch.float32: 2.0 ** -20, torch.bfloat16: 2.0 ** -7,
           torch.float16: 2.0 ** -10}[kw["q"].dtype]
    kk = np.repeat(np.abs(kd), c["hq"] // c["hkv"], axis=1)
    ds = eps * scale * float(np.matmul(np.abs(qd), np.swapaxes(kk, -1, -2)).max())
    extra = float(np.expm1(2 * ds)) * float(np.abs(vd).max()) / float(np.abs(ref).max())
    torch._dynamo.reset()
    poison(ref.shape, out_dtype(c))
    out = torch.compile(f, fullgraph=True)(kw["q"], kw["k"], kw["v"])
    sync()
    err = check_ref(out, ref, name, c, "inductor", scale=3.0, extra=extra)
    return (f"torch.compile(fullgraph=True) (inductor): err {err:.2e} against float64 "
            f"(tol {case_tol(name, c) + extra:.1e}, gelu rounding allowance {extra:.1e})")


@test
def torch_compile_prefill_with_quantization():
    """Quantization (qattn.torch_quant) and the prefill op in one compiled graph."""
    need_custom_op()
    name = "prefill_4bit_causal"
    kw, _, c, (_, kd, vd) = case_operands(name, "torch_compile_prefill_with_quantization")
    rng = np.random.default_rng(seed_for("torch_compile_prefill_with_quantization/q"))
    qn = rng.normal(size=(c["batch"], c["hq"], c["nq"], c["d"])).astype(np.float32)
    qf = to_dev(qn)
    # The reference quantizes the queries with qattn.format (eager TQ is bit-exact with it).
    ref = F.attention(F.stage1_dequantize(*F.stage1_quantize(qn, BLOCK), BLOCK), kd, vd,
                      1 / np.sqrt(c["d"]), c.get("causal", False))

    def f(qf, k, v):
        q8, qs = TQ.stage1_quantize(qf, BLOCK)
        return torch.ops.qattn.prefill_attention(OPS, name, q8, qs, k, v)

    eager = f(qf, kw["k"], kw["v"])
    torch._dynamo.reset()
    poison(ref.shape, out_dtype(c))
    aot = torch.compile(f, fullgraph=True, backend="aot_eager")(qf, kw["k"], kw["v"])
    sync()
    err = check_ref(aot, ref, name, c, "aot_eager")
    try:
        torch._dynamo.reset()
        ind = torch.compile(f, fullgraph=True)(qf, kw["k"], kw["v"])
        sync()
        q8, qs = torch.compile(lambda x: TQ.stage1_quantize(x, BLOCK), fullgraph=True)(qf)
        e8, es = TQ.stage1_quantize(qf, BLOCK)
        info(f"inductor: quantization + prefill vs eager max |diff| "
             f"{(ind - eager).abs().max().item():.3e}, vs float64 {rel_err(out_f32(ind), ref):.2e}; "
             f"stage-1 codes differing "
             f"{int((q8 != e8).sum())} of {q8.numel()}, scales {int((qs != es).sum())} "
             "(inductor may compile f32 divisions differently; eager is the bit-exact path)")
    except Exception as e:  # noqa: BLE001
        info(f"inductor on quantization + prefill failed: {type(e).__name__}: {e}")
    return ("quantization + prefill under torch.compile(fullgraph=True, backend='aot_eager'): "
            f"err {err:.2e} against float64")


@test
def opcheck():
    need_custom_op()
    done = []
    for name in ("decode_4bit_buf_f32", "prefill_4bit_causal"):
        kw, _, c = case_inputs(name, f"opcheck/{name}")
        if c["kind"] == "prefill":
            op = torch.ops.qattn.prefill_attention.default
            args = (OPS, name, kw["q8"], kw["q_scales"], kw["k"], kw["v"])
        else:
            op = torch.ops.qattn.decode_attention.default
            args = (OPS, name, kw["q"], kw["k"], kw["v"], kw["k_buffer"], kw["k_buffer_scale"],
                    kw["v_buffer"], kw["v_buffer_scale"])
        result = torch.library.opcheck(op, args)
        bad = {k: v for k, v in result.items() if v != "SUCCESS"}
        assert not bad, f"{name}: {bad}"
        done.append(name)
    return "torch.library.opcheck passes for " + ", ".join(done)


@test
def kv_cache_torch():
    """The cache on the device (torch backend) holds what the NumPy backend holds; the decode op over
    its operands matches float64 attention of what it holds."""
    name = "decode_4bit_buf_f32"
    c = CASES[name]
    b, hkv, d = c["batch"], c["hkv"], c["d"]
    rng = np.random.default_rng(seed_for("kv_cache_torch"))
    k = rng.normal(size=(b, hkv, 160, d)).astype(np.float32)
    v = rng.normal(size=(b, hkv, 160, d)).astype(np.float32)
    k[..., 5] *= 15
    caches = [QuantizedKVCache(layers=1, batch=b, kv_heads=hkv, head_dim=d, capacity=160,
                               bits=c["bits"], block=BLOCK, group=GROUP, buffer_tokens=BLOCK,
                               backend=be, device=dev)
              for be, dev in (("numpy", None), ("torch", DEV))]
    for cache, conv in zip(caches, (lambda a: a, to_dev)):
        cache[0].prefill(conv(k[:, :, :96]), conv(v[:, :, :96]))
        for pos in range(96, 96 + 37):  # one flush at 128, 5 buffered
            cache[0].append(conv(k[:, :, pos : pos + 1]), conv(v[:, :, pos : pos + 1]))
    layer = caches[1][0]
    assert (layer.length, layer.buffered) == (c["nk"], c["buffer"]), (layer.length,
                                                                      layer.buffered)
    for which in "kv":
        (na, nb), (ta, tb) = caches[0][0].operands(which), layer.operands(which)
        for a, t in zip(na + nb, ta + tb):
            assert t.device == DEV and t.is_contiguous() and np.array_equal(a, t.cpu().numpy())
    q = to_dev(rng.normal(size=(b, c["hq"], 1, d)).astype(np.float32))
    kd, vd = layer.dequantized("k"), layer.dequantized("v")
    scale = 1 / np.sqrt(d)
    ref = F.attention(q.cpu().numpy(), kd, vd, scale, False)
    poison(ref.shape, torch.float32)
    out = torch_ops.decode_attention(OPS, name, q, **torch_ops.cache_operands(layer))
    o = out_f32(out).astype(np.float64)
    assert np.isfinite(o).all(), "non-finite output"
    err = rel_err(o, ref)
    if DEV.type == "cuda" and uses_f16_operands(name):
        # f16 operands (the decode kernel): Q, P and V' each rounded to f16, u = 2^-11 relative,
        # f32 accumulation. Per element, with w the softmax weights of the row:
        #   P and V' rounding: |p~ v~ - p v| <= (2u + u^2) p |v|  ->  (2u + u^2) sum_j w_j |v_j|;
        #   Q rounding moves scores by d_s <= u scale max_j sum_c |q_c| |k_jc|, weights by
        #   |dw_j| <= w_j (e^(2 d_s) - 1) (numerator and row sum)  ->  (e^(2 d_s) - 1) sum_j w_j |v_j|;
        #   together (1 + u)^2 e^(2 d_s) - 1 of sum_j w_j |v_j|; f32 sums over Nk keys:
        #   Nk 2^-23 sum_j w_j |v_j|; the f32 output: 2^-24 |ref|.
        u = 2.0 ** -11
        w = F.attention_weights(q.cpu().numpy(), kd, scale, False)
        r = c["hq"] // hkv
        wv = np.matmul(w, np.repeat(np.abs(vd).astype(np.float64), r, axis=1))
        kk = np.repeat(np.abs(kd).astype(np.float64), r, axis=1)
        qa = np.abs(q.cpu().numpy()).astype(np.float64)
        ds = u * scale * np.matmul(qa, np.swapaxes(kk, -1, -2)).max(axis=3, keepdims=True)
        bound = (((1 + u) ** 2 * np.exp(2 * ds) - 1 + kd.shape[2] * 2.0 ** -23) * wv
                 + 2.0 ** -24 * np.abs(ref))
        worst = float((np.abs(o - ref) / bound).max())
        assert worst <= 1, f"error {err:.2e}: {worst:.2f}x the f16-operand bound"
        tol_text = (f"within {worst:.2f} of the f16-operand bound, at most "
                    f"{bound.max() / np.abs(ref).max():.1e} of max|ref|")
    else:
        assert err <= TOL["f32"], f"error {err:.2e}"
        tol_text = f"tol {TOL['f32']:.0e}"
    try:
        layer.append(to_dev(k[:, :, :28]), to_dev(v[:, :, :28]))
    except KVCacheOverflow:
        pass
    else:
        raise AssertionError("no KVCacheOverflow")
    return (f"bit-exact with the NumPy cache; decode over it err {err:.2e} ({tol_text}); "
            "overflow raised")


@test
def decode_op_timing():
    need_cuda()
    name = "decode_4bit_buf_bf16"
    kw, ref, c = case_inputs(name, "decode_op_timing")
    for _ in range(3):
        call(name, kw)
    sync()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    poison(ref.shape, out_dtype(c))
    start.record()
    for _ in range(100):
        out = call(name, kw)  # as before: each result freed by the next call, so timed alike
    end.record()
    sync()
    us = start.elapsed_time(end) * 10
    assert np.isfinite(us) and us > 0, f"elapsed time {us} us per call"
    err = check_ref(out, ref, name, c, "last timed call")
    return (f"{us:.1f} us per call incl. Python and launch overhead; the last timed output "
            f"within {err:.2e} of float64")


def main():
    where = torch.cuda.get_device_name(DEV) if DEV.type == "cuda" else "CPU"
    print(f"torch {torch.__version__} (CUDA {torch.version.cuda}), {where}, artifacts {ART}, "
          f"seed base {BASE_SEED} (QATTN_TORCH_SEED={BASE_SEED} repeats this run's data)",
          flush=True)
    for fn in tests:
        t0 = time.time()
        try:
            msg = fn()
            passed.append(fn.__name__)
            print(f"PASS {fn.__name__}: {msg} ({time.time() - t0:.1f} s)", flush=True)
        except Skip as e:
            skipped.append(fn.__name__)
            print(f"SKIP {fn.__name__}: {e}", flush=True)
        except Exception as e:  # noqa: BLE001
            failed.append(fn.__name__)
            print(f"FAIL {fn.__name__}: {type(e).__name__}: {e}", flush=True)
            traceback.print_exc(limit=4)
    print(f"torch-check ops: {len(passed)} passed, {len(failed)} failed, {len(skipped)} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
