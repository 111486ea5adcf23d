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
(``fullgraph=True`` works). Inputs are checked against the manifest before anything runs: a
wrong dtype raises TypeError, a wrong device, shape, count, a non-contiguous or misaligned
tensor ValueError, each naming the operand and the function. Runtime failures (a bad artifact,
a CUDA error) raise ``qattn.runtime.QAttnRuntimeError``.

Artifacts are loaded once per (folder, device) and kept. A function's scratch buffers are shared
by its calls, so one function must not run on two streams at the same time.
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
    """The loaded cuda artifact in folder ``path`` on ``device`` (a torch.device, an index or
    None for the current device); loaded once, then cached."""
    if device is None or (isinstance(device, torch.device) and device.index is None):
        index = torch.cuda.current_device()
    else:
        index = device.index if isinstance(device, torch.device) else int(device)
    key = (os.path.realpath(path), index)
    with _lock:
        art = _artifacts.get(key)
        if art is None:
            torch.cuda.init()  # the runtime uses the primary context PyTorch made current
            art = Artifact(path, device=index)
            if art.target != "cuda":
                raise ValueError(f"{path}: a {art.target} artifact; the torch ops need target cuda")
            _artifacts[key] = art
    return art


def _manifest_function(path, function):
    """The manifest entry of ``function`` (no CUDA involved: what the fake implementation
    needs)."""
    real = os.path.realpath(path)
    with _lock:
        manifest = _manifests.get(real)
        if manifest is None:
            with open(os.path.join(real, "manifest.json")) as f:
                manifest = json.load(f)
            _manifests[real] = manifest
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
        if t.device.type != "cuda":
            raise ValueError(f"{what}: expected a CUDA tensor, got one on {t.device}")
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
    if device is None or device.type != "cuda":
        raise ValueError(f"qattn.{op}: expected CUDA tensors, got one on {device}")
    art = load_artifact(artifact, device)
    if function not in art:
        raise ValueError(f"qattn.{op}: {artifact}: no function {function!r} (functions: "
                         f"{', '.join(art.functions) or 'none'})")
    fn = art[function]
    _check(op, fn, operands)
    (res,) = fn.results
    out = torch.empty(res.shape, dtype=TORCH_DTYPES[res.dtype], device=device)
    stream = torch.cuda.current_stream(device).cuda_stream
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


@torch.library.custom_op("qattn::decode_attention", mutates_args=())
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


@torch.library.custom_op("qattn::prefill_attention", mutates_args=())
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
