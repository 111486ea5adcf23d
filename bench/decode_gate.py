#!/usr/bin/env python3
"""The decode speed gate of issue 22: at every decode shape of bench/cases.py,
the shape-generic serving kernel (qattn.attention ... lengths() pages(),
lowered through the tile layer) against the static decode kernel, and one
varlen batch against SDPA cuDNN. The static kernel (DecodeKernel.cpp) was
deleted once the tile layer took the static shapes too: the static column
comes from a build of a tree that still has it (--static-compile; e.g.
scripts/build-rev.sh 434f776 builds that tree's qattn-compile), else from
this tree, whose static shapes now go through the tile layer themselves.

  prepare OUT        CPU machine, qattn-compile built. For each decode case of
                     bench/cases.py (family "decode"), the static GPU module
                     exactly as bench/cases.py writes it (casegen's
                     attention_func, qattn-compile --target=cuda; the CPU
                     module is not needed here and not built), into
                     OUT/static/<case>/cuda; for each scheme (Hq, Hkv, d,
                     bits, Nq, causal) one serving function, the paged form of
                     scripts/gpu-check/serving/cases.py (dynamic batch B, pool
                     NP and table width MP, kv_lens, page_table, int8
                     k_buffer / v_buffer of one page), with the static case's
                     quantization (int8 BPQ queries and stage-1 blocks of 64,
                     stage-2 groups of 16, f32 output), into
                     OUT/serving/<scheme>/cuda, compiled once for all the
                     shapes that share it. A scheme that qattn-compile refuses
                     is recorded as "unsupported: <first line of the
                     diagnostic>". The static modules are compiled by
                     --static-compile (default: --qattn-compile). With
                     --static-tiles also each static case compiled by
                     --qattn-compile (this tree: the static shape through
                     the tile layer, no lengths, pages or buffer, with
                     --tile-options and --pipeline-options) into
                     OUT/static-tiles/<case>/cuda. Then
                     OUT/plan.json. PTX, cubins and manifests only: the data
                     is made on the GPU machine.
  run OUT QATTN_RUN WORK
                     GPU machine (numpy, torch with CUDA, qattn-run). Per row,
                     random operands in each artifact's layout, made once and
                     written to WORK/<row>/ (removed after the row); qattn-run
                     --repeat --cold-l2 on the static then the serving
                     artifact (and the static shape through the tile layer,
                     on the static inputs, where prepared), alternating for
                     --rounds rounds (the medians' median is kept); then the
                     varlen batch and SDPA over the same sequences. Prints a table, writes WORK/gate.json.
                     --dry-run writes the inputs of the smallest selected row
                     (and of the varlen batch at 1/32 of its lengths), checks
                     them against the manifests, and asks `qattn-run
                     --plan-only` (no GPU) what it would launch.

Lengths. Every bench shape has N a multiple of the page (64): the serving row
gives each sequence N - 64 + TAIL keys, N/64 - 1 full pages through a shuffled
page table and TAIL (default 37) int8 buffer rows, so that the serving kernel
runs its tail path; the static case keeps the bench's N (it takes no
buffer). So the serving kernel sees 27 keys fewer, and moves about as many
bytes (a key and value row costs 2d bytes per head in int8, 1.25d in 4 bits
with its constants: within 0.3% of the static case's bytes at every bench
shape); both key counts and both byte counts are in gate.json. (For an N
that is not a multiple of 64, kv_lens = N and the tail is N mod 64.)

Operands: random bytes for the codes, stage-2 scales 1..16, zero points
0..15, int8 queries and buffer rows in [-16, 16), f32 scales uniform in
[0.001, 0.02): finite outputs, no meaning (only bytes and time matter).

usage: decode_gate.py prepare OUT [--only SUBSTR[,SUBSTR..]] [--qattn-compile PATH] [--tail T]
                                  [--tile-options 'splits=N ..'] [--pipeline-options 'num-stages=N']
                                  [--static-compile PATH] [--static-tiles]
       decode_gate.py run OUT QATTN_RUN WORK [--only SUBSTR[,..]] [--repeat N] [--rounds N]
                      [--warm-l2] [--keep] [--dry-run]
"""
import argparse
import datetime
import importlib.util
import json
import math
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
PAGE = 64  # tokens per page, and the rows of the int8 decode buffer
TAIL = 37  # buffer rows of a row whose N is a multiple of the page
HBM_TBPS = 4.8  # H200 HBM3e, the data sheet's figure
PASS_RATIO = 1.03  # serving / static at most
VARLEN = {"name": "varlen_b32_h32x8_d128", "batch": 32, "hq": 32, "hkv": 8, "d": 128,
          "lo": 1024, "hi": 32768, "seed": 22}


def load(name, path):
    """A module by its path: bench/cases.py, scripts/gpu-check/cases.py and the
    serving cases.py share one file name."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bench_cases = load("bench_cases", "bench/cases.py")  # puts scripts/gpu-check on sys.path
serving_cases = load("serving_cases", "scripts/gpu-check/serving/cases.py")
import casegen  # noqa: E402


def selected(name, only):
    return any(part in name for part in only.split(","))


def cdiv(a, b):
    return -(-a // b)


def first_line(text):
    return next((line.strip() for line in text.splitlines() if line.strip()), "(no message)")


# ------------------------------------------------------------------------------------------
# prepare
# ------------------------------------------------------------------------------------------


def scheme_key(c):
    """One serving function per distinct serving_function text: the shape's
    heads, head dim, widths and queries, and each quantization field that
    differs from the bench's default (stage-1 blocks of 64, groups of 16,
    lsb order, zero anchor, f32 output)."""
    bits = "b" + "".join(map(str, c.bits))
    key = f"h{c.hq}x{c.hkv}_d{c.d}_{bits}_nq{c.nq}" + ("_causal" if c.causal else "")
    key += f"_block{c.block}" if c.block != 64 else ""
    key += f"_group{c.group}" if c.group != 16 else ""
    key += "_msb" if c.order == "msb_first" else ""
    key += "_min" if c.anchor == "min" else ""
    return key + (f"_{c.out}" if c.out != "f32" else "")


def serving_function(c, name):
    """The serving form of case C's quantization: serving/cases.py's function()
    with the static case's block, group, bit order, int8 BPQ queries and output
    dtype, and the buffer. serving/cases.py spells one width; per-head widths
    take its 4-bit text with the widths and the codes' row put in."""
    spec = f"block={c.block},bits={c.bits[0] if len(c.bits) == 1 else 4},group={c.group}"
    spec += ",order=msb" if c.order == "msb_first" else ""
    spec += ",anchor=min" if c.anchor == "min" else ""
    text = serving_cases.function((name, c.hq, c.hkv, c.nq, c.d, spec, spec, PAGE, True,
                                   c.causal, f"i8:block={c.block}", c.out, []))
    if len(c.bits) > 1:
        uniform = f"tensor<?x{PAGE}x{c.hkv * c.d * 4 // 8}xi8>"
        assert "bits = [4]" in text and uniform in text, "serving/cases.py's text changed"
        text = text.replace("bits = [4]", f"bits = [{', '.join(map(str, c.bits))}]")
        text = text.replace(uniform, f"tensor<?x{PAGE}x{c.d * sum(c.bits) // 8}xi8>")
    return text


def compile_cuda(qattn_compile, src, out, tile_options="", pipeline_options=""):
    """casegen.write_case's qattn-compile call for the cuda target."""
    extra = [f"--tile-options={tile_options}"] if tile_options else []
    extra += [f"--pipeline-options={pipeline_options}"] if pipeline_options else []
    r = subprocess.run([qattn_compile, src, "-o", out, "--target=cuda"] + extra,
                       capture_output=True, text=True)
    return r.returncode, r.stderr


def shape_of(c):
    return {k: getattr(c, k) for k in ("batch", "hq", "hkv", "nq", "nk", "d", "bits", "causal",
                                       "block", "group", "out")}


def folder_bytes(path):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def prepare(a):
    if not shutil.which(a.qattn_compile):
        sys.exit(f"decode_gate.py: no qattn-compile at {a.qattn_compile} (--qattn-compile PATH)")
    a.static_compile = a.static_compile or a.qattn_compile
    if not shutil.which(a.static_compile):
        sys.exit(f"decode_gate.py: no qattn-compile at {a.static_compile} (--static-compile)")
    cases = [c for c in bench_cases.matrix() if c.family == "decode" and selected(c.name, a.only)]
    varlen = selected(VARLEN["name"], a.only)
    vcase = bench_cases.decode(VARLEN["batch"], VARLEN["hq"], VARLEN["hkv"], VARLEN["hi"],
                               VARLEN["d"])
    schemes = {}
    for c in cases + ([vcase] if varlen else []):
        schemes.setdefault(scheme_key(c), c)
    os.makedirs(a.out, exist_ok=True)
    t0 = time.time()

    compiled = {}
    for key, c in schemes.items():
        folder = os.path.join(a.out, "serving", key)
        os.makedirs(folder, exist_ok=True)
        src, fn = os.path.join(folder, "serving.mlir"), "serve_" + key
        with open(src, "w") as f:
            f.write(serving_function(c, fn))
        rc, err = compile_cuda(a.qattn_compile, src, os.path.join(folder, "cuda"),
                               a.tile_options, a.pipeline_options)
        if rc == 0:
            compiled[key] = {"artifact": f"serving/{key}/cuda", "function": fn}
            print(f"serving {key}: compiled", flush=True)
        else:
            why = first_line(err.replace(src, os.path.relpath(src, a.out)))
            compiled[key] = {"unsupported": why}
            print(f"serving {key}: unsupported: {why}", flush=True)

    rows = []
    for c in cases:
        folder = os.path.join(a.out, "static", c.name)
        os.makedirs(folder, exist_ok=True)
        src = os.path.join(folder, "gpu.mlir")
        with open(src, "w") as f:
            f.write(casegen.attention_func(c, casegen.Operands(c), gpu=True))
        rc, err = compile_cuda(a.static_compile, src, os.path.join(folder, "cuda"))
        if rc:
            sys.exit(f"{c.name}: {a.static_compile} --target=cuda failed:\n{err}")
        key = scheme_key(c)
        tail = c.nk % PAGE or a.tail
        row = {"name": c.name, "shape": shape_of(c), "scheme": key,
               "static": {"artifact": f"static/{c.name}/cuda", "function": "attention"}}
        if a.static_tiles:
            tiles = os.path.join(a.out, "static-tiles", c.name, "cuda")
            rc, err = compile_cuda(a.qattn_compile, src, tiles, a.tile_options,
                                   a.pipeline_options)
            if rc:
                sys.exit(f"{c.name}: qattn-compile --target=cuda (static tiles) failed:\n{err}")
            row["static_tiles"] = {"artifact": f"static-tiles/{c.name}/cuda",
                                   "function": "attention"}
        if "unsupported" in compiled[key]:
            row["serving"] = None
            row["unsupported"] = compiled[key]["unsupported"]
        else:
            row["serving"] = dict(compiled[key], kv_len=c.nk - (c.nk % PAGE or PAGE) + tail,
                                  tail=tail)
        rows.append(row)
        print(f"static {c.name}: compiled", flush=True)

    plan = {"page": PAGE, "tail": a.tail, "schemes": compiled, "rows": rows,
            "lengths": f"static: the bench's N; serving: kv_lens = N - {PAGE} + {a.tail} "
                       f"({a.tail} int8 buffer rows after the full pages) where N is a "
                       f"multiple of {PAGE}, else N (tail N mod {PAGE})",
            "qattn_compile": a.qattn_compile, "static_compile": a.static_compile,
            "tile_options": a.tile_options,
            "pipeline_options": a.pipeline_options}
    if varlen:
        rnd = random.Random(VARLEN["seed"])
        lengths = [rnd.randint(VARLEN["lo"], VARLEN["hi"]) for _ in range(VARLEN["batch"])]
        key = scheme_key(vcase)
        plan["varlen"] = dict(VARLEN, shape=shape_of(vcase) | {"nk": None}, scheme=key,
                              lengths=lengths, serving=compiled[key] or None)
    with open(os.path.join(a.out, "plan.json"), "w") as f:
        json.dump(plan, f, indent=1)
    size = folder_bytes(a.out)
    print(f"{len(rows)} rows, {sum(r['serving'] is None for r in rows)} unsupported, "
          f"{len(schemes)} serving schemes, {'a' if varlen else 'no'} varlen batch in {a.out}: "
          f"{size / 2**20:.1f} MiB, {time.time() - t0:.0f} s")
    if size > 40 * 2**20:
        print(f"warning: {a.out} is over 40 MiB", flush=True)


# ------------------------------------------------------------------------------------------
# Operands
# ------------------------------------------------------------------------------------------

# What an int8 operand holds, by name (the static names are casegen's, the
# serving ones serving/cases.py's).
INT8_KIND = {"q8": "small", "q": "small", "k_buffer": "small", "v_buffer": "small",
             "kp": "codes", "vp": "codes", "k_codes": "codes", "v_codes": "codes",
             "kg": "s2", "vg": "s2", "k_group_scales": "s2", "v_group_scales": "s2",
             "kz": "z2", "vz": "z2", "k_zeros": "z2", "v_zeros": "z2"}
BUFFERS = ("k_buffer", "v_buffer")


class Pool:
    """Random operands made fast: per kind of int8 operand one array of random
    bytes, made again only when an operand larger than it is asked for, of
    which every operand of that kind is a view (the content only has to be
    finite, its bytes only have to be there)."""

    # What the bytes of each kind become (as uint8, viewed as int8 after).
    KINDS = {"codes": lambda raw: raw, "s2": lambda raw: (raw & 15) + 1,
             "z2": lambda raw: raw & 15, "small": lambda raw: (raw & 31) - 16}

    def __init__(self, seed):
        import numpy as np
        self.np = np
        self.rng = np.random.default_rng(seed)
        self.kinds = {}

    def int8(self, kind, shape):
        np, n = self.np, math.prod(shape)
        if kind not in self.kinds or self.kinds[kind].size < n:
            raw = np.frombuffer(self.rng.bytes(n), np.uint8)
            self.kinds[kind] = self.KINDS[kind](raw).astype(np.uint8).view(np.int8)
        return self.kinds[kind][:n].reshape(shape)

    def scales(self, shape):
        return self.rng.uniform(0.001, 0.02, shape).astype(self.np.float32)

    def table(self, pages, width):
        """A shuffled page table: sequence b reads PAGES[b] distinct ids of a pool of
        sum(PAGES) pages; the entries past them hold -1."""
        np = self.np
        ids = self.rng.permutation(sum(pages)).astype(np.int32)
        t = np.full((len(pages), width), -1, np.int32)
        start = 0
        for b, p in enumerate(pages):
            t[b, :p] = ids[start:start + p]
            start += p
        return t


def static_arrays(pool, manifest_fn):
    """The static artifact's operands, one per manifest argument (all sizes static)."""
    arrays = {}
    for arg in manifest_fn["args"]:
        name, shape = arg["name"], tuple(arg["shape"])
        if arg["dtype"] == "f32":
            arrays[name] = pool.scales(shape)
        elif arg["dtype"] == "i8" and name in INT8_KIND:
            arrays[name] = pool.int8(INT8_KIND[name], shape)
        else:
            sys.exit(f"decode_gate.py: static argument {name} ({arg['dtype']}): not handled")
    return arrays


def serving_arrays(pool, shape, lens):
    """The serving function's operands for sequences of LENS keys, laid out as
    serving/cases.py declares them (stated here again, and checked against the
    manifest before use): the first L - L mod 64 keys of a sequence in full
    pages at shuffled ids of a pool of exactly the pages read, the rest in the
    buffer's first rows. Returns (arrays, tail rows per sequence)."""
    import numpy as np
    hq, hkv, nq, d, bits, block, group = (shape[k] for k in ("hq", "hkv", "nq", "d", "bits",
                                                             "block", "group"))
    b = len(lens)
    tails = [n % PAGE for n in lens]
    pages = [(n - t) // PAGE for n, t in zip(lens, tails)]
    npool, width = sum(pages), max(max(pages), 1)
    row = d * sum(bits) // 8 if len(bits) > 1 else hkv * d * bits[0] // 8
    arrays = {"q": pool.int8("small", (b, hq, nq, d)),
              "q_scales": pool.scales((b, hq, cdiv(nq, block)))}
    for p in "kv":
        arrays |= {f"{p}_codes": pool.int8("codes", (npool, PAGE, row)),
                   f"{p}_scales": pool.scales((npool, hkv, PAGE // block)),
                   f"{p}_group_scales": pool.int8("s2", (npool, hkv, PAGE // group, d)),
                   f"{p}_zeros": pool.int8("z2", (npool, hkv, PAGE // group, d))}
    for p in "kv":
        arrays |= {f"{p}_buffer": pool.int8("small", (b, hkv, PAGE, d)),
                   f"{p}_buffer_scale": pool.scales((b, hkv))}
    arrays["kv_lens"] = np.array(lens, np.int32)
    arrays["page_table"] = pool.table(pages, width)
    return arrays, tails


NPY_DTYPES = {"f32": ("float32",), "i32": ("int32",), "i8": ("int8", "uint8")}
ELT_BYTES = {"f32": 4, "f16": 2, "bf16": 2, "i32": 4, "i8": 1}


def check_manifest(art, fn, arrays):
    """Each argument of FN in ART's manifest gets an array of its dtype and
    shape, the symbols bound alike everywhere, and there are no others.
    Returns (the manifest's function, the bindings); exits naming the first
    mismatch."""
    with open(os.path.join(art, "manifest.json")) as f:
        spec = next(x for x in json.load(f)["functions"] if x["name"] == fn)
    names = [x["name"] for x in spec["args"]]
    if names != list(arrays):
        sys.exit(f"{art} {fn}: the manifest's arguments are {names}, the inputs {list(arrays)}")
    dims = {}
    for arg in spec["args"]:
        x = arrays[arg["name"]]
        if str(x.dtype) not in NPY_DTYPES[arg["dtype"]] or x.ndim != len(arg["shape"]):
            sys.exit(f"{art} {fn}: {arg['name']}: {x.dtype} {list(x.shape)} for "
                     f"{arg['dtype']} {arg['shape']}")
        for s, n in zip(arg["shape"], x.shape):
            if (dims.setdefault(s, n) if isinstance(s, str) else s) != n:
                sys.exit(f"{art} {fn}: {arg['name']}: {list(x.shape)} against {arg['shape']} "
                         f"with {dims}")
    return spec, dims


def result_bytes(spec, dims):
    return sum(math.prod(dims.get(s, s) for s in r["shape"]) * ELT_BYTES[r["dtype"]]
               for r in spec["results"])


def write_inputs(arrays, folder, prefix):
    """np.save each array to FOLDER/PREFIX<name>.npy; qattn-run's --input arguments."""
    import numpy as np
    os.makedirs(folder, exist_ok=True)
    args = []
    for name, x in arrays.items():
        path = os.path.join(folder, f"{prefix}{name}.npy")
        np.save(path, x)
        args += ["--input", f"{name}={path}"]
    return args


class Artifact:
    """One artifact's function with its operands written: the qattn-run
    arguments and the bytes it must move (every operand once, the buffers'
    unused rows left out, and the results)."""

    def __init__(self, out, ref, arrays, folder, prefix, tails=(), inputs=None):
        self.art, self.fn = os.path.join(out, ref["artifact"]), ref["function"]
        spec, self.dims = check_manifest(self.art, self.fn, arrays)
        self.bytes = result_bytes(spec, self.dims) + sum(
            x.nbytes * sum(tails) // (PAGE * len(tails)) if name in BUFFERS else x.nbytes
            for name, x in arrays.items())
        # `inputs`: another artifact's files of the same arrays.
        self.inputs = inputs or write_inputs(arrays, folder, prefix)

    def time(self, qattn_run, repeat, cold_l2):
        cmd = [qattn_run, self.art, "--function", self.fn, "--repeat", str(repeat), "--quiet"]
        r = subprocess.run(cmd + (["--cold-l2"] if cold_l2 else []) + self.inputs,
                           capture_output=True, text=True)
        m = re.search(r"time: median ([0-9.]+) us, min ([0-9.]+) us", r.stdout)
        if r.returncode or not m:
            raise RuntimeError(f"{' '.join(cmd)} ... exit {r.returncode}\n{r.stdout}{r.stderr}")
        return float(m.group(1)), float(m.group(2))

    def plan_only(self, qattn_run):
        r = subprocess.run([qattn_run, self.art, "--function", self.fn, "--plan-only"]
                           + self.inputs, capture_output=True, text=True)
        if r.returncode:
            sys.exit(f"qattn-run --plan-only {self.art} {self.fn}:\n{r.stdout}{r.stderr}")
        return r.stdout


def static_artifacts(out, row, pool, folder):
    """The static column's artifact and, where prepared, the static shape
    compiled by this tree (the tile layer), on the same operands (one
    signature)."""
    ref = row["static"]
    with open(os.path.join(out, ref["artifact"], "manifest.json")) as f:
        spec = next(x for x in json.load(f)["functions"] if x["name"] == ref["function"])
    arrays = static_arrays(pool, spec)
    arts = [Artifact(out, ref, arrays, folder, "static_")]
    if row.get("static_tiles"):
        arts.append(Artifact(out, row["static_tiles"], arrays, folder, "static_",
                             inputs=arts[0].inputs))
    return arts


def serving_artifact(out, ref, shape, lens, pool, folder):
    arrays, tails = serving_arrays(pool, shape, lens)
    return Artifact(out, ref, arrays, folder, "serving_", tails)


# ------------------------------------------------------------------------------------------
# run
# ------------------------------------------------------------------------------------------


def tbps(nbytes, us):
    return nbytes / us / 1e6


def timed_rounds(arts, a):
    """Each artifact timed once per round, in order: per artifact, the median
    and the minimum over the rounds' medians and minima."""
    times = [[] for _ in arts]
    for _ in range(a.rounds):
        for t, art in zip(times, arts):
            t.append(art.time(a.qattn_run, a.repeat, not a.warm_l2))
    return [(statistics.median(m for m, _ in t), min(n for _, n in t)) for t in times]


def gate_row(row, a, pool, k, n):
    t0 = time.time()
    folder = os.path.join(a.work, row["name"])
    shape, res = row["shape"], {"name": row["name"], "shape": row["shape"]}
    try:
        arts = static_artifacts(a.out, row, pool, folder)
        tiles = len(arts) > 1
        if row["serving"]:
            sv = row["serving"]
            arts.append(serving_artifact(a.out, sv, shape, [sv["kv_len"]] * shape["batch"],
                                         pool, folder))
        times = timed_rounds(arts, a)
    except RuntimeError as e:
        res["error"] = str(e)
        print(f"[{k}/{n}] {row['name']}: FAIL\n{e}", flush=True)
        return res
    finally:
        if not a.keep:
            shutil.rmtree(folder, ignore_errors=True)
    st = arts[0]
    res["static"] = {"median_us": times[0][0], "min_us": times[0][1], "bytes": st.bytes,
                     "keys": shape["nk"], "tbps": tbps(st.bytes, times[0][0])}
    line = f"[{k}/{n}] {row['name']}: static {times[0][0]:.1f} us"
    if tiles:
        us, mn = times[1]
        res["static_tiles"] = {"median_us": us, "min_us": mn, "ratio": us / times[0][0]}
        line += f", static shape on this tree's tile layer {us:.1f} us ({us / times[0][0]:.3f}x)"
    if row["serving"]:
        sv, (us, mn) = arts[-1], times[-1]
        ratio = us / times[0][0]
        res["serving"] = {"median_us": us, "min_us": mn, "bytes": sv.bytes,
                          "keys": row["serving"]["kv_len"], "tail": row["serving"]["tail"],
                          "tbps": tbps(sv.bytes, us), "hbm_fraction": tbps(sv.bytes, us) / HBM_TBPS,
                          "dims": sv.dims}
        res["ratio"], res["verdict"] = ratio, "PASS" if ratio <= PASS_RATIO else "MISS"
        line += (f", serving {us:.1f} us ({ratio:.3f}x, {tbps(sv.bytes, us):.2f} TB/s) "
                 f"{res['verdict']}")
    else:
        res["verdict"] = "unsupported"
        res["unsupported"] = row["unsupported"]
        line += f", serving unsupported: {row['unsupported']}"
    print(line + f" ({time.time() - t0:.0f} s)", flush=True)
    return res


def sdpa_varlen(lens, v, repeat):
    """SDPA in bf16 over the varlen batch, two ways: padded to the longest
    sequence with a boolean key mask (one call), and one call per sequence on
    its own K/V (no mask; the calls in one CUDA graph). cuDNN first; where it
    refuses or fails the output check (float32 attention of three sequences,
    run.py's peer tolerance), efficient, flash (per sequence only: it takes
    no mask), math. Grouped heads through enable_gqa, else K/V repeated to Hq
    heads. Inputs: torch.randn; K/V far larger than the L2, so not flushed."""
    import torch
    import torch.nn.functional as TF
    from torch.nn.attention import SDPBackend, sdpa_kernel
    br = load("bench_run", "bench/run.py")  # event_times, graphed, repeat_heads, rel_fro
    b, hq, hkv, d, lmax = len(lens), v["hq"], v["hkv"], v["d"], max(lens)
    gen = torch.Generator(device="cuda").manual_seed(0)
    q = torch.randn(b, hq, 1, d, device="cuda", dtype=torch.bfloat16, generator=gen)
    k = torch.randn(b, hkv, lmax, d, device="cuda", dtype=torch.bfloat16, generator=gen)
    val = torch.randn(b, hkv, lmax, d, device="cuda", dtype=torch.bfloat16, generator=gen)
    lt = torch.tensor(lens, device="cuda")
    mask = (torch.arange(lmax, device="cuda")[None, :] < lt[:, None])[:, None, None, :]
    scale = d ** -0.5

    def ref(i):  # float32 attention of sequence i
        kk = k[i, :, :lens[i]].float().repeat_interleave(hq // hkv, 0)
        vv = val[i, :, :lens[i]].float().repeat_interleave(hq // hkv, 0)
        return torch.softmax(q[i].float() @ kk.transpose(1, 2) * scale, -1) @ vv

    def attempt(kind, backend, gqa):
        kk, vv = (k, val) if gqa else (br.repeat_heads(x, hq // hkv) for x in (k, val))
        with sdpa_kernel([backend]):
            if kind == "padded":
                fn = lambda: TF.scaled_dot_product_attention(q, kk, vv, attn_mask=mask,
                                                             scale=scale, enable_gqa=gqa)
                out, launch = fn(), "eager, one call"
            else:
                # Each sequence's K/V a tensor of its own, as a server would hold them.
                seqs = [(kk[i:i + 1, :, :n].contiguous(), vv[i:i + 1, :, :n].contiguous())
                        for i, n in enumerate(lens)]
                calls = [lambda i=i, kv=kv: TF.scaled_dot_product_attention(
                    q[i:i + 1], *kv, scale=scale, enable_gqa=gqa) for i, kv in enumerate(seqs)]
                out = torch.cat([c() for c in calls])
                try:
                    fn, _ = br.graphed(calls)
                    launch = f"one CUDA graph of {b} calls"
                except Exception as e:  # eager: host overhead included
                    torch.cuda.synchronize()
                    fn = lambda: [c() for c in calls]
                    launch = f"eager {b} calls (graph capture failed: {br.first_line(e)})"
            torch.cuda.synchronize()
            err = max(br.rel_fro(out[i], ref(i)) for i in (0, b // 2, b - 1))
            if not err <= br.PEER_TOL:
                raise RuntimeError(f"output check failed: rel_fro {err:.2e} > {br.PEER_TOL}")
            med, mn = br.event_times([fn], 3, repeat)
        return {"median_us": med, "min_us": mn, "rel_fro": err, "launch": launch}

    backends = [("cudnn", SDPBackend.CUDNN_ATTENTION),
                ("efficient", SDPBackend.EFFICIENT_ATTENTION),
                ("flash", SDPBackend.FLASH_ATTENTION), ("math", SDPBackend.MATH)]
    needed = 2 * (2 * b * hq * d + 2 * hkv * d * sum(lens))  # bf16 Q, O and the real K/V
    results = {}
    for kind in ("padded", "per_sequence"):
        tried = []
        for bname, backend in backends:
            if kind == "padded" and bname == "flash":
                continue  # takes no mask
            for gqa in (True, False):
                try:
                    r = attempt(kind, backend, gqa)
                except Exception as e:
                    torch.cuda.synchronize()
                    tried.append(f"{bname}{'' if gqa else ' (K/V repeated)'}: {br.first_line(e)}")
                    continue
                r |= {"backend": bname, "gqa": "enable_gqa" if gqa else "repeat_heads",
                      "refused": tried, "bytes_needed": needed,
                      "tbps_needed": tbps(needed, r["median_us"])}
                results[kind] = r
                break
            if kind in results:
                break
        else:
            results[kind] = {"error": "; ".join(tried)}
        print(f"varlen SDPA {kind}: " + (f"{results[kind]['backend']} ({results[kind]['gqa']}, "
              f"{results[kind]['launch']}) {results[kind]['median_us']:.1f} us"
              if "median_us" in results[kind] else f"failed: {results[kind]['error']}"), flush=True)
    return results


def varlen_case(v, a, pool):
    lens = v["lengths"]
    res = {"name": v["name"], "lengths": lens, "keys": sum(lens), "min_len": min(lens),
           "max_len": max(lens)}
    if not v["serving"] or "unsupported" in v["serving"]:
        res["serving"] = v["serving"]
        print(f"varlen: serving {v['serving']}", flush=True)
    else:
        folder = os.path.join(a.work, v["name"])
        try:
            art = serving_artifact(a.out, v["serving"], v["shape"], lens, pool, folder)
            (us, mn), = timed_rounds([art], a)
            res["serving"] = {"median_us": us, "min_us": mn, "bytes": art.bytes,
                              "tbps": tbps(art.bytes, us),
                              "hbm_fraction": tbps(art.bytes, us) / HBM_TBPS, "dims": art.dims}
            print(f"varlen {v['name']}: serving {us:.1f} us, {art.bytes / 1e6:.1f} MB, "
                  f"{tbps(art.bytes, us):.2f} TB/s", flush=True)
        except RuntimeError as e:
            res["serving"] = {"error": str(e)}
            print(f"varlen {v['name']}: FAIL\n{e}", flush=True)
        finally:
            if not a.keep:
                shutil.rmtree(folder, ignore_errors=True)
    try:
        res["sdpa"] = sdpa_varlen(lens, v, a.repeat)
    except Exception as e:  # no torch, no CUDA: the serving numbers still count
        res["sdpa"] = {"padded": {"error": f"{type(e).__name__}: {first_line(str(e))}"}}
        print(f"varlen SDPA: {res['sdpa']['padded']['error']}", flush=True)
    return res


def report(results, varlen, plan, l2):
    print(f"\nDecode gate (issue 22): static = the static shape compiled by "
          f"{plan.get('static_compile') or plan['qattn_compile']}, serving = the tile layer's "
          f"paged function; {plan['lengths']}; medians of qattn-run medians, {l2} L2; TB/s on "
          f"the bytes each must move")
    tiles = any("static_tiles" in r for r in results)
    print("| shape | static us | static TB/s | serving us | serving TB/s | of 4.8 TB/s "
          "| serving/static | gate |" + (" static shape, this tree us | its / static |"
                                          if tiles else ""))
    print("|---|---|---|---|---|---|---|---|" + ("---|---|" if tiles else ""))
    for r in results:
        if "error" in r:
            print(f"| {r['name']} | FAIL | | | | | | |" + (" | |" if tiles else ""))
            continue
        s = r["static"]
        cells = [r["name"], f"{s['median_us']:.1f}", f"{s['tbps']:.2f}"]
        if "serving" in r:
            sv = r["serving"]
            cells += [f"{sv['median_us']:.1f}", f"{sv['tbps']:.2f}", f"{sv['hbm_fraction']:.0%}",
                      f"{r['ratio']:.3f}", r["verdict"]]
        else:
            cells += ["unsupported", "", "", "", ""]
        if tiles:
            t = r.get("static_tiles")
            cells += [f"{t['median_us']:.1f}", f"{t['ratio']:.3f}"] if t else ["", ""]
        print("| " + " | ".join(cells) + " |")
    timed = [r for r in results if "ratio" in r]
    print(f"{sum(r['verdict'] == 'PASS' for r in timed)} of {len(results)} rows pass "
          f"(ratio <= {PASS_RATIO}); {sum('unsupported' in r for r in results)} unsupported, "
          f"{sum('error' in r for r in results)} failed")
    if varlen:
        sv = varlen["serving"]
        print(f"\nvarlen {varlen['name']}: B{len(varlen['lengths'])}, lengths "
              f"{varlen['min_len']}..{varlen['max_len']} ({varlen['keys']} keys)")
        if sv and "median_us" in sv:
            print(f"  serving: {sv['median_us']:.1f} us, {sv['bytes'] / 1e6:.1f} MB moved, "
                  f"{sv['tbps']:.2f} TB/s ({sv['hbm_fraction']:.0%} of 4.8)")
        for kind, p in varlen["sdpa"].items():
            if "median_us" in p:
                speed = (f", {p['median_us'] / sv['median_us']:.2f}x serving's time"
                         if sv and "median_us" in sv else "")
                print(f"  SDPA bf16 {kind.replace('_', ' ')} ({p['backend']}, {p['gqa']}, "
                      f"{p['launch']}): {p['median_us']:.1f} us, {p['tbps_needed']:.2f} TB/s on "
                      f"the real sequences' bf16 bytes{speed}"
                      + (f"; refused: {'; '.join(p['refused'])}" if p["refused"] else ""))
            else:
                print(f"  SDPA bf16 {kind}: {p['error']}")


def dry_run(plan, a, rows, pool):
    """The inputs of the smallest selected row and of the varlen batch at 1/32
    of its lengths (sequences of 32..1024 keys, some shorter than a page),
    checked against the manifests (Artifact does), then qattn-run --plan-only
    on them if QATTN_RUN runs here."""
    sets = []  # (label, folder, artifact)
    todo = [r for r in rows if r["serving"]]
    if todo:
        row = min(todo, key=lambda r: math.prod(r["shape"][k] for k in ("batch", "hkv", "nk", "d")))
        folder, sv = os.path.join(a.work, row["name"]), row["serving"]
        statics = static_artifacts(a.out, row, pool, folder)
        sets += [(row["name"] + label, folder, art)
                 for label, art in zip((" static", " static, this tree"), statics)]
        sets += [(row["name"] + " serving", folder, serving_artifact(
                     a.out, sv, row["shape"], [sv["kv_len"]] * row["shape"]["batch"], pool,
                     folder))]
    v = plan.get("varlen")
    if v and selected(v["name"], a.only) and v["serving"] and "unsupported" not in v["serving"]:
        folder, lens = os.path.join(a.work, v["name"]), [n // 32 for n in v["lengths"]]
        sets.append((v["name"] + " (lengths / 32)", folder,
                     serving_artifact(a.out, v["serving"], v["shape"], lens, pool, folder)))
    runs = shutil.which(a.qattn_run) is not None
    for label, folder, art in sets:
        dims = ", ".join(f"{s}={n}" for s, n in art.dims.items())
        print(f"dry-run {label}: {art.fn}, {len(art.inputs) // 2} inputs match the manifest"
              f"{' (' + dims + ')' if dims else ''}, {art.bytes} bytes to move", flush=True)
        if runs:
            print("\n".join("  " + ln for ln in art.plan_only(a.qattn_run).splitlines()
                            if ln.lstrip().startswith(("dims", "size", "launch"))), flush=True)
    for folder in {f for _, f, _ in sets} if not a.keep else ():
        shutil.rmtree(folder, ignore_errors=True)
    print(f"dry-run: {len(sets)} input sets ok"
          + ("" if runs else f" ({a.qattn_run} not found: no --plan-only)"))


def gpu():
    if not shutil.which("nvidia-smi"):
        return ""
    query = ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"]
    return subprocess.run(query, capture_output=True, text=True).stdout.strip()


def run(a):
    with open(os.path.join(a.out, "plan.json")) as f:
        plan = json.load(f)
    if plan["page"] != PAGE:
        sys.exit(f"plan.json: page {plan['page']}, this script's {PAGE}")
    rows = [r for r in plan["rows"] if selected(r["name"], a.only)]
    pool = Pool(a.seed)
    os.makedirs(a.work, exist_ok=True)
    if a.dry_run:
        return dry_run(plan, a, rows, pool)
    t0 = time.time()
    print(f"decode gate: {len(rows)} rows, --rounds {a.rounds} --repeat {a.repeat}, "
          f"{'warm' if a.warm_l2 else 'cold'} L2; {plan['lengths']}", flush=True)
    results = [gate_row(r, a, pool, i + 1, len(rows)) for i, r in enumerate(rows)]
    pool.kinds.clear()
    v = plan.get("varlen")
    varlen = varlen_case(v, a, pool) if v and selected(v["name"], a.only) else None
    report(results, varlen, plan, "warm" if a.warm_l2 else "cold")
    with open(os.path.join(a.work, "gate.json"), "w") as f:
        json.dump({"date": datetime.datetime.now().isoformat(timespec="seconds"), "gpu": gpu(),
                   "command": " ".join(sys.argv), "rounds": a.rounds, "repeat": a.repeat,
                   "l2": "warm" if a.warm_l2 else "cold", "page": PAGE, "tail": plan["tail"],
                   "lengths": plan["lengths"], "pass_ratio": PASS_RATIO, "hbm_tbps": HBM_TBPS,
                   "rows": results, "varlen": varlen}, f, indent=1)
    print(f"wrote {a.work}/gate.json ({time.time() - t0:.0f} s)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("out")
    p.add_argument("--only", default="", help="rows whose name contains one of these "
                   "(comma-separated); 'varlen' selects the varlen batch")
    p.add_argument("--qattn-compile", default=os.path.join(ROOT, "build", "bin", "qattn-compile"))
    p.add_argument("--tail", type=int, default=TAIL, help="int8 buffer rows, 1..63")
    p.add_argument("--tile-options", default="", help="more qattn-tile options for the serving "
                   "functions (qattn-compile --tile-options), e.g. 'splits=8': experiments with "
                   "the tiling heuristics (default none)")
    p.add_argument("--pipeline-options", default="", help="more qattn-pipeline options for "
                   "the serving functions (qattn-compile --pipeline-options), e.g. "
                   "'num-stages=3' (default none)")
    p.add_argument("--static-compile", help="the qattn-compile of the static column (default: "
                   "--qattn-compile): a build of a tree with the static decode kernel, e.g. "
                   "the path scripts/build-rev.sh 434f776 prints")
    p.add_argument("--static-tiles", action="store_true", help="also each static case compiled "
                   "by --qattn-compile (the tile layer, with --tile-options and "
                   "--pipeline-options), timed on the static inputs beside --static-compile's")
    r = sub.add_parser("run")
    r.add_argument("out")
    r.add_argument("qattn_run")
    r.add_argument("work")
    r.add_argument("--only", default="")
    r.add_argument("--repeat", type=int, default=20, help="timed calls per qattn-run")
    r.add_argument("--rounds", type=int, default=3)
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--warm-l2", action="store_true", help="no L2 flush before each timed call")
    r.add_argument("--keep", action="store_true", help="keep the operand files")
    r.add_argument("--dry-run", action="store_true")
    a = ap.parse_args()
    if a.cmd == "prepare":
        if not 1 <= a.tail < PAGE:
            sys.exit(f"--tail {a.tail}: 1..{PAGE - 1}")
        prepare(a)
    else:
        run(a)


if __name__ == "__main__":
    main()
