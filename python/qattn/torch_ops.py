"""PyTorch custom ops running qattn's compiled CUDA attention kernels on torch tensors.

A cuda artifact (``qattn-compile --target=cuda``; ``qattn.ir`` + ``qattn.compiler`` build one)
holds attention functions of fixed shapes. The ops name the artifact folder and the function,
take the quantized operands (docs/FORMAT.md; ``qattn.torch_quant`` or ``qattn.kv_cache`` make
them) and return the output, launched on the current CUDA stream:

* ``torch.ops.qattn.decode_attention(artifact, function, q, k, v, k_buffer, k_buffer_scale,
  v_buffer, v_buffer_scale)``: float ``q`` ``[B, Hq, Nq, d]``; ``k``/``v`` the cache operands
  as a list (stage 2: packed codes, block scales, group scales, zero points; stage 1: int8 data,
  block scales); the optional int8 decode buffers ``[B, Hkv, Nb, d]`` with ``[B, Hkv]`` f32
  scales.
* ``torch.ops.qattn.prefill_attention(artifact, function, q8, q_scales, k, v)``: BPQ int8
  queries with their block scales, the cache operands as above.

Both are ``torch.library.custom_op``s with a fake (meta) implementation that reads the output's
shape and dtype from the artifact's manifest, so ``torch.compile`` traces them
(``fullgraph=True`` works); ``qattn.torch_ops.decode_attention`` is the same op. They also run a
cpu artifact (the reference lowering) on CPU tensors, synchronously: slow, but the same
semantics, for tests without a GPU. With a PyTorch older than 2.4 (no ``custom_op``) they are
plain Python functions: eager only.

Inputs are checked against the manifest before anything runs: a wrong dtype raises TypeError;
a wrong device (CPU and CUDA tensors mixed, a cpu artifact for CUDA tensors or the reverse),
shape, count, a non-contiguous or misaligned tensor ValueError; each message names the operand
and the function. Runtime failures (a bad artifact,
a CUDA error) raise ``qattn.runtime.QAttnRuntimeError``.

Artifacts are loaded once per (folder, device) and kept. A function's scratch buffers are shared
by its calls, so one function must not run on two streams at the same time (``qattn.paged.decode``
takes a caller's ``workspace`` for that).
"""

import json
import os
import threading
from typing import List, Optional

import torch

from qattn.runtime import Artifact

__all__ = ["decode_attention", "prefill_attention", "load_artifact", "cache_operands",
           "TORCH_DTYPES"]

TORCH_DTYPES = {
    "f64": torch.float64, "f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16,
    "i64": torch.int64, "i32": torch.int32, "i8": torch.int8,
}

_lock = threading.Lock()
_artifacts = {}
_manifests = {}


def load_artifact(path, device=None):
    """The loaded artifact in folder ``path`` for ``device`` (a torch.device, a CUDA index, or
    None for the current CUDA device; ``torch.device('cpu')`` for a cpu artifact), loaded once,
    then cached."""
    if isinstance(device, torch.device) and device.type == "cpu":
        key = (os.path.realpath(path), "cpu")
    elif device is None or (isinstance(device, torch.device) and device.index is None):
        key = (os.path.realpath(path), torch.cuda.current_device())
    else:
        key = (os.path.realpath(path), device.index if isinstance(device, torch.device)
               else int(device))
    with _lock:
        art = _artifacts.get(key)
    if art is not None:
        return art
    # Check the target before loading: a cuda artifact would need a driver to load at all.
    target = _manifest(path).get("target")
    want = "cpu" if key[1] == "cpu" else "cuda"
    if target != want:
        raise ValueError(f"{path}: a {target} artifact, the tensors are on "
                         f"{'the CPU' if want == 'cpu' else 'a CUDA device'}: compile it with "
                         f"--target={want}")
    if want == "cuda":
        torch.cuda.init()  # the runtime uses the primary context PyTorch made current
    with _lock:
        art = _artifacts.get(key)
        if art is None:
            art = Artifact(path) if want == "cpu" else Artifact(path, device=key[1])
            _artifacts[key] = art
    return art


def _manifest(path):
    """The artifact's manifest.json, parsed (cached)."""
    real = os.path.realpath(path)
    with _lock:
        manifest = _manifests.get(real)
    if manifest is None:
        try:
            with open(os.path.join(real, "manifest.json")) as f:
                manifest = json.load(f)
        except OSError as e:
            raise ValueError(f"{path}: not an artifact folder ({e})") from None
        with _lock:
            _manifests[real] = manifest
    return manifest


def _manifest_function(path, function):
    """The manifest entry of ``function`` (no CUDA involved: what the fake implementation
    needs)."""
    manifest = _manifest(path)
    for fn in manifest.get("functions", []):
        if fn["name"] == function:
            return fn
    names = ", ".join(f["name"] for f in manifest.get("functions", []))
    raise ValueError(f"{path}: no function {function!r} (functions: {names or 'none'})")


def _operands(op, q, k, v, buffers):
    ops = [q, *k, *v]
    present = [b is not None for b in buffers]
    if any(present) and not all(present):
        raise ValueError(f"qattn.{op}: give all four of k_buffer, k_buffer_scale, v_buffer, "
                         "v_buffer_scale, or none")
    if all(present):
        ops += list(buffers)
    return ops


def _check(op, fn, operands):
    """Checks torch tensors against the function's arguments; returns the device."""
    where = f"qattn.{op}, function {fn.name!r}"
    if len(operands) != len(fn.args):
        names = ", ".join(a.name for a in fn.args)
        raise ValueError(f"{where}: expected {len(fn.args)} operands ({names}), got "
                         f"{len(operands)}")
    device = None
    for i, (spec, t) in enumerate(zip(fn.args, operands)):
        what = f"{where}: operand {i} ({spec.name!r})"
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{what}: expected a torch.Tensor, got {type(t).__name__}")
        if device is None:
            device = t.device
        elif t.device != device:
            raise ValueError(f"{what}: on {t.device}, the other operands are on {device}")
        want = TORCH_DTYPES[spec.dtype]
        if t.dtype != want:
            raise TypeError(f"{what}: expected dtype {want}, got {t.dtype}")
        if tuple(t.shape) != spec.shape:
            raise ValueError(f"{what}: expected shape {list(spec.shape)}, got {list(t.shape)}")
        if not t.is_contiguous():
            raise ValueError(f"{what}: the tensor is not contiguous (call .contiguous())")
        if t.data_ptr() % 16:
            raise ValueError(f"{what}: data pointer {t.data_ptr():#x} is not 16-byte aligned "
                             "(a view at an offset? call .clone())")
    return device


def _run(op, artifact, function, operands):
    if not operands:
        raise ValueError(f"qattn.{op}: no operands")
    device = operands[0].device if isinstance(operands[0], torch.Tensor) else None
    if device is None or device.type not in ("cuda", "cpu"):
        raise ValueError(f"qattn.{op}: expected CUDA (or CPU) tensors, got {device}")
    art = load_artifact(artifact, device)
    if function not in art:
        raise ValueError(f"qattn.{op}: {artifact}: no function {function!r} (functions: "
                         f"{', '.join(art.functions) or 'none'})")
    fn = art[function]
    _check(op, fn, operands)
    (res,) = fn.results
    out = torch.empty(res.shape, dtype=TORCH_DTYPES[res.dtype], device=device)
    # cpu: the call runs synchronously on host pointers (no stream).
    stream = torch.cuda.current_stream(device).cuda_stream if device.type == "cuda" else 0
    fn.launch([(t.data_ptr(), s.dtype, s.shape) for s, t in zip(fn.args, operands)],
              [(out.data_ptr(), res.dtype, res.shape)], stream)
    return out


def _fake(op, artifact, function, operands):
    fn = _manifest_function(artifact, function)
    if len(fn["results"]) != 1:
        raise ValueError(f"qattn.{op}: function {function!r} has {len(fn['results'])} results")
    if len(operands) != len(fn["args"]):
        raise ValueError(f"qattn.{op}, function {function!r}: expected {len(fn['args'])} "
                         f"operands, got {len(operands)}")
    res = fn["results"][0]
    return operands[0].new_empty(res["shape"], dtype=TORCH_DTYPES[res["dtype"]])


def _custom_op(name, mutates_args=()):
    """torch.library.custom_op where PyTorch has it (2.4 and later); before that the function
    stays a plain Python function (eager only, no torch.compile), with a no-op register_fake."""
    if hasattr(torch.library, "custom_op"):
        return torch.library.custom_op(name, mutates_args=mutates_args)

    def wrap(fn):
        fn.register_fake = lambda fake: fake
        return fn

    return wrap


@_custom_op("qattn::decode_attention")
def decode_attention(artifact: str, function: str, q: torch.Tensor, k: List[torch.Tensor],
                     v: List[torch.Tensor], k_buffer: Optional[torch.Tensor] = None,
                     k_buffer_scale: Optional[torch.Tensor] = None,
                     v_buffer: Optional[torch.Tensor] = None,
                     v_buffer_scale: Optional[torch.Tensor] = None) -> torch.Tensor:
    """Attention of float queries over a quantized KV cache (and decode buffer)."""
    ops = _operands("decode_attention", q, k, v,
                    (k_buffer, k_buffer_scale, v_buffer, v_buffer_scale))
    return _run("decode_attention", artifact, function, ops)


@decode_attention.register_fake
def _decode_attention_fake(artifact, function, q, k, v, k_buffer=None, k_buffer_scale=None,
                           v_buffer=None, v_buffer_scale=None):
    ops = _operands("decode_attention", q, k, v,
                    (k_buffer, k_buffer_scale, v_buffer, v_buffer_scale))
    return _fake("decode_attention", artifact, function, ops)


@_custom_op("qattn::prefill_attention")
def prefill_attention(artifact: str, function: str, q8: torch.Tensor, q_scales: torch.Tensor,
                      k: List[torch.Tensor], v: List[torch.Tensor]) -> torch.Tensor:
    """Attention of BPQ int8 queries (block scales ``q_scales``) over quantized K and V."""
    return _run("prefill_attention", artifact, function, [q8, q_scales, *k, *v])


@prefill_attention.register_fake
def _prefill_attention_fake(artifact, function, q8, q_scales, k, v):
    return _fake("prefill_attention", artifact, function, [q8, q_scales, *k, *v])


def cache_operands(layer):
    """The operands of ``decode_attention`` for a ``qattn.kv_cache.LayerCache`` (torch
    backend): ``dict(k=[...], v=[...], k_buffer=..., k_buffer_scale=..., v_buffer=...,
    v_buffer_scale=...)``, the buffers None when nothing is buffered."""
    (kc, kb), (vc, vb) = layer.operands("k"), layer.operands("v")
    out = dict(k=list(kc), v=list(vc))
    if kb is not None:
        out.update(k_buffer=kb[0], k_buffer_scale=kb[1], v_buffer=vb[0], v_buffer_scale=vb[1])
    return out
