#!/usr/bin/env python3
"""The benchmark's Pallas Mosaic GPU peer: JAX's FlashAttention-3-style kernel
(jax.experimental.pallas.ops.gpu.attention_mgpu) on the prefill shapes, in a
process of its own (bench/run.py starts it after its cases; JAX and PyTorch do
not share a process, and JAX runs with XLA_PYTHON_CLIENT_PREALLOCATE=false).

usage: jax_peer.py REQUEST.json RESULT.json

REQUEST (written by run.py):
  {"tolerance": 2e-2, "budget_s": 90, "l2_bytes": ..., "rotate_l2": 4,
   "calls_per_batch": 10,
   "cases": [{"name", "B", "H", "Hkv", "N", "d", "causal", "scale", "repeat",
              "warmup", "q", "k", "v", "ref"}]}
  q [B, H, N, d], k and v [B, Hkv, N, d]: float32 .npy files of the inputs the
  PyTorch peers were given (before their bf16 rounding); ref: float32 .npy of
  float64 attention on them, [B, H, N, d]. Nq = Nk = N.
RESULT: {"jax", "backend", "device", "api", "api_notes", "cases": {name: {...}}},
  rewritten after every case (a killed run keeps the cases it finished). Per
  case: ok, median_us, min_us, rel_fro (output vs ref, checked before timing:
  above the tolerance the case is not ok and not timed), dtype, config, copies,
  calls_per_batch, tried (every config attempted), error and reason (short)
  when not ok.

Per case: the float inputs go to the GPU, are transposed to the kernel's
[B, N, H, d] layout and rounded to bf16 (float16 when the kernel refuses or
miscomputes bf16: upstream's shared-memory buffers are declared float16). The
kernel has no softmax-scale argument (it computes softmax(Q K^T) V), so unless
the installed version has one, Q is multiplied by the scale in float32 before
the rounding, outside the timed call. TuningConfigs are tried in order and
checked against ref; the working ones are timed briefly and the fastest is
kept for the other cases of the same head dimension, causality and dtype.

Timing: JAX exposes no CUDA events, so this peer is timed by the host wall
clock. The jitted call is warmed up, then each of `repeat` samples dispatches
`calls_per_batch` calls back to back (asynchronously, the inputs rotating among
enough copies to exceed rotate_l2 L2s, as the PyTorch peers' do) and blocks
once on the last output; a sample is the batch's wall time over its calls.
Median and minimum of the samples. The block's latency and the first
dispatch of each batch are included, so this is slightly pessimistic next to
the CUDA-event times of the other peers.

Never raises for a case: anything that fails is recorded and the next case
runs. Exit status 0 unless the request cannot be read.
"""
import dataclasses
import inspect
import json
import math
import os
import statistics
import sys
import time
import types

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import numpy as np  # noqa: E402

# (block_q, block_kv, max_concurrent_steps), in order of preference: upstream's
# benchmark takes the first of block_kv 256, 128, 64 at block_q 64 and 2 steps
# that fits in shared memory; its tests also run (128, 64).
CANDIDATES = ((64, 128, 2), (64, 256, 2), (128, 64, 2), (64, 128, 3), (64, 64, 2))
TUNE_S = 25  # past this many seconds of tuning per class, stop once a config works
SCALE_PARAMS = ("sm_scale", "softmax_scale", "scale")


def short(e, n=200):
    lines = [l for l in str(e).splitlines() if l.strip()]
    return f"{type(e).__name__}: {lines[0][:n] if lines else ''}"


def write_json(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1)
    os.replace(tmp, path)


# ------------------------------------------------------------------------------------------
# The API
# ------------------------------------------------------------------------------------------


def import_api(notes):
    """(jax, jnp, attention_mgpu). The module imports jax._src.test_util without
    using it, which needs absl-py (a test dependency of JAX): without absl, an
    empty stand-in for test_util is installed and the import retried."""
    import jax
    import jax.numpy as jnp
    try:
        from jax.experimental.pallas.ops.gpu import attention_mgpu
    except ModuleNotFoundError as e:
        if not (e.name or "").startswith("absl"):
            raise
        sys.modules["jax._src.test_util"] = types.ModuleType("jax._src.test_util")
        notes.append(f"{short(e)}: jax._src.test_util replaced by an empty module")
        from jax.experimental.pallas.ops.gpu import attention_mgpu
    return jax, jnp, attention_mgpu


def parameters(fn):
    try:
        return set(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return set()


class Api:
    """What the installed attention_mgpu takes: TuningConfig fields, whether
    causality is a config field or an argument, a softmax-scale argument."""

    def __init__(self, mod, notes):
        self.mod = mod
        if not hasattr(mod, "attention") or not hasattr(mod, "TuningConfig"):
            raise RuntimeError("attention_mgpu has no attention or no TuningConfig")
        try:
            self.fields = {f.name for f in dataclasses.fields(mod.TuningConfig)}
        except TypeError:
            self.fields = parameters(mod.TuningConfig)
        self.args = parameters(mod.attention)
        self.scale_arg = next((p for p in SCALE_PARAMS if p in self.args), None)
        self.causal_where = ("config" if "causal" in self.fields
                             else "argument" if "causal" in self.args else None)
        notes.append(f"attention{tuple(sorted(self.args))}, TuningConfig fields "
                     f"{sorted(self.fields)}; softmax scale "
                     f"{'argument ' + self.scale_arg if self.scale_arg else 'folded into Q'}")

    def call(self, cfg, causal, scale):
        """A jitted (q, k, v) -> out for config CFG = (block_q, block_kv, steps)."""
        import jax
        block_q, block_kv, steps = cfg
        kw = {"block_q": block_q, "block_kv": block_kv, "max_concurrent_steps": steps}
        if self.causal_where == "config":
            kw["causal"] = causal
        config = self.mod.TuningConfig(**{k: v for k, v in kw.items() if k in self.fields})
        extra = {}
        if self.causal_where == "argument":
            extra["causal"] = causal
        if self.scale_arg:
            extra[self.scale_arg] = scale
        attention = self.mod.attention  # (q, k, v, config, save_residuals=False) upstream
        return jax.jit(lambda q, k, v: attention(q, k, v, config, **extra))


# ------------------------------------------------------------------------------------------
# One case
# ------------------------------------------------------------------------------------------


def wall_times(fn, inputs, warmup, samples, per_batch):
    """(median, min) microseconds per call; see the module docstring."""
    out = None
    for i in range(max(1, warmup)):
        out = fn(*inputs[i % len(inputs)])
    out.block_until_ready()
    us = []
    for _ in range(samples):
        start = time.perf_counter()
        for i in range(per_batch):
            out = fn(*inputs[i % len(inputs)])
        out.block_until_ready()
        us.append((time.perf_counter() - start) / per_batch * 1e6)
    return statistics.median(us), min(us)


def shape_reason(c, api):
    if c["d"] % 64:
        return f"head dim {c['d']} is not a multiple of 64"
    if c["causal"] and api.causal_where is None:
        return "this attention_mgpu has no causal option"
    if c["H"] % c["Hkv"]:
        return f"H {c['H']} is not a multiple of Hkv {c['Hkv']}"
    return None


def fits(cfg, n):
    """The kernel's shape rules: a CTA covers 2 block_q queries, keys go by block_kv."""
    return n % (2 * cfg[0]) == 0 and n % cfg[1] == 0


def run_case(c, req, api, jax, jnp, best, deadline):
    res = {"ok": False, "tried": []}
    why = shape_reason(c, api)
    if why:
        return {**res, "error": why, "reason": why}
    cands = [cfg for cfg in CANDIDATES if fits(cfg, c["N"])]
    if not cands:
        why = f"N {c['N']} is not a multiple of the blocks tried ({CANDIDATES})"
        return {**res, "error": why, "reason": f"N {c['N']} fits no block size"}

    tol = req["tolerance"]
    bnhd = lambda path: jnp.transpose(jax.device_put(np.load(path)), (0, 2, 1, 3))
    qf, kf, vf, ref = (bnhd(c[x]) for x in ("q", "k", "v", "ref"))
    ref_norm = float(jnp.linalg.norm(ref.ravel()))
    if not api.scale_arg:
        qf = qf * np.float32(c["scale"])
    b, h, hkv, n, d = c["B"], c["H"], c["Hkv"], c["N"], c["d"]
    nbytes = 2 * (2 * b * h * n * d + 2 * b * hkv * n * d)  # 2-byte Q, K, V, O
    copies = max(1, min(64, math.ceil(req["rotate_l2"] * req["l2_bytes"] / nbytes)))
    per_batch = copies * math.ceil(req["calls_per_batch"] / copies)
    res.update(copies=copies, calls_per_batch=per_batch)

    for dtype, jdtype in (("bfloat16", jnp.bfloat16), ("float16", jnp.float16)):
        key = f"d{d} {'causal' if c['causal'] else 'full'} {dtype}"
        if best.get(key, ()) is None:  # no config worked for this class and dtype
            res["tried"].append({"dtype": dtype, "error": "failed on an earlier case"})
            continue
        q, k, v = (x.astype(jdtype) for x in (qf, kf, vf))
        inputs = [(q, k, v)] + [tuple(jnp.copy(x) for x in (q, k, v)) for _ in range(copies - 1)]
        order = cands
        if best.get(key) in cands:  # tuned on an earlier case: try that first, alone if it works
            order = [best[key]] + [x for x in cands if x != best[key]]
        tune_start, working = time.time(), []
        for cfg in order:
            if time.time() > deadline:
                res["tried"].append({"dtype": dtype, "config": cfg, "error": "time budget spent"})
                break
            if working and (key in best or time.time() - tune_start > TUNE_S):
                break
            t = {"dtype": dtype, "config": cfg}
            res["tried"].append(t)
            try:
                start = time.time()
                fn = api.call(cfg, c["causal"], c["scale"])
                out = fn(q, k, v)
                out.block_until_ready()
                t["compile_s"] = round(time.time() - start, 2)
                err = float(jnp.linalg.norm((out.astype(jnp.float32) - ref).ravel())) / ref_norm
                del out
                t["rel_fro"] = err
                if not err <= tol:  # NaN fails too
                    t["error"] = f"output check failed: rel_fro {err:.2e} > {tol}"
                    if dtype == "bfloat16":
                        break  # most likely bf16 read as float16: go to float16 at once
                    continue
                t["quick_us"] = wall_times(fn, inputs, 1, 3, per_batch)[0]
                working.append((t["quick_us"], cfg, fn, err))
            except Exception as e:  # unsupported config, shared memory, lowering
                t["error"] = short(e)
        if working:
            _, cfg, fn, err = min(working, key=lambda w: w[0])
            best[key] = cfg
            med, mn = wall_times(fn, inputs, c["warmup"], c["repeat"], per_batch)
            res.update(ok=True, median_us=med, min_us=mn, rel_fro=err, dtype=dtype,
                       config=dict(zip(("block_q", "block_kv", "max_concurrent_steps"), cfg)),
                       launch=f"jit, host wall clock over batches of {per_batch} calls")
            return res
        if time.time() <= deadline:
            best[key] = None
        del inputs, q, k, v
    errors = [t["error"] for t in res["tried"] if "error" in t]
    res["error"] = "no config worked: " + "; ".join(
        f"{t['dtype']} {t.get('config', '')}: {t.get('error', '?')}" for t in res["tried"])
    res["reason"] = errors[-1][:60] if errors else "no config tried"
    return res


# ------------------------------------------------------------------------------------------
# Driver
# ------------------------------------------------------------------------------------------


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.split("\n\n")[1])
    req = json.load(open(sys.argv[1]))
    result_path = sys.argv[2]
    start = time.time()
    deadline = start + req.get("budget_s", 90)
    out = {"api_notes": [], "cases": {}}

    def fail_all(why, reason):
        for c in req["cases"]:
            out["cases"][c["name"]] = {"ok": False, "error": why, "reason": reason}
        write_json(result_path, out)

    try:
        jax, jnp, mod = import_api(out["api_notes"])
        out["jax"] = jax.__version__
        out["backend"] = jax.default_backend()
        out["device"] = str(jax.devices()[0].device_kind)
        out["api"] = f"{mod.__name__}.attention"
        api = Api(mod, out["api_notes"])
    except Exception as e:
        why = f"JAX or attention_mgpu not usable: {short(e)}"
        fail_all(why, "JAX not installed" if isinstance(e, ModuleNotFoundError)
                 and (e.name or "").split(".")[0] == "jax" else why[:60])
        print(why)
        return
    if out["backend"] != "gpu":
        fail_all(f"JAX's backend is {out['backend']}, not gpu", "JAX sees no GPU")
        print(f"jax_peer: JAX {out['jax']} has no GPU backend")
        return
    print(f"jax_peer: JAX {out['jax']} on {out['device']}; " + "; ".join(out["api_notes"]),
          flush=True)

    best = {}
    for c in req["cases"]:
        c.setdefault("Hkv", c["H"])
        if time.time() > deadline:
            r = {"ok": False, "reason": "time budget spent",
                 "error": f"not run: the peer's time budget of {req.get('budget_s')} s was spent"}
        else:
            stamp = time.time()
            try:
                r = run_case(c, req, api, jax, jnp, best, deadline)
            except Exception as e:  # loading, transposing, memory
                r = {"ok": False, "error": short(e), "reason": short(e, 40)}
            r["wall_s"] = round(time.time() - stamp, 1)
        out["cases"][c["name"]] = r
        write_json(result_path, out)
        print(f"jax_peer: {c['name']}: " + (
            f"{r['median_us']:.1f} us ({r['dtype']}, {r['config']}, rel_fro {r['rel_fro']:.1e})"
            if r["ok"] else f"n/a: {r['error']}"), flush=True)
    print(f"jax_peer: {time.time() - start:.0f} s", flush=True)


if __name__ == "__main__":
    main()
