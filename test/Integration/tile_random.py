# RUN: rm -rf %t && %python %s --out %t --cases 6
# REQUIRES: numpy
"""Randomized cases of the serving form, each compiled twice -- the executable specification
(qattn-lower-reference of qattn.attention) and the tile layer (qattn-tile with a random split
count, qattn-pipeline with a random depth, then the tile ops' reference lowering) -- and both
checked against the NumPy model by check_paged.py's tight per-row bound (see its docstring).
A case draws heads and GQA group, queries per sequence, head dimension, each of K and V (int8,
or 2/3/4-bit, or per-head mixed widths; block or channel scales, f32 or f16; groups of 8, 16 or
32; either bit order and anchor), the query type (f32, f16, int8), paged (P = 64 or 128) or
contiguous, the int8 tail, causal, exact or SAS, and a batch of lengths with the edges (0, 1,
15, 16, 17, a block +- 1) among them. Fresh cases every run: the seed is printed (--seed
repeats a run). The loose float64 bounds (b) are not the point here; the model check (a) is.
"""

import argparse
import os
import random
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
INPUTS = os.path.join(HERE, "Inputs")

p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
p.add_argument("--out", required=True)
p.add_argument("--cases", type=int, default=6)
p.add_argument("--seed", type=int)
a = p.parse_args()
seed = a.seed if a.seed is not None else random.SystemRandom().randrange(1 << 31)
print(f"tile_random: seed {seed}", flush=True)
rng = random.Random(seed)
os.makedirs(a.out, exist_ok=True)


def kv_scheme(hkv):
    block = rng.choice([32, 64])
    parts = [f"block={block}"]
    if rng.random() < 0.3:
        parts.append("scale=f16")
    if rng.random() < 0.3:
        parts.append("gran=channel")
    if rng.random() < 0.25:
        return ",".join(parts), None
    if hkv > 1 and rng.random() < 0.3:
        bits = [rng.choice([2, 3, 4]) for _ in range(hkv)]
    else:
        bits = [rng.choice([2, 3, 4])]
    group = rng.choice([g for g in (8, 16, 32) if block % g == 0])
    parts += [f"bits={'-'.join(map(str, bits))}", f"group={group}"]
    order = rng.choice(["lsb", "msb"])
    anchor = rng.choice(["zero", "min"])
    if order == "msb":
        parts.append("order=msb")
    if anchor == "min":
        parts.append("anchor=min")
    return ",".join(parts), dict(block=block, bits=bits, group=group, order=order, anchor=anchor)


def stage_attrs(text):
    spec = dict(kv.split("=") for kv in text.split(","))
    s1 = f"block = {spec['block']}"
    if spec.get("scale") == "f16":
        s1 += ", scale = f16"
    if spec.get("gran") == "channel":
        s1 += ", granularity = channel"
    s2 = None
    if "bits" in spec:
        bits = ", ".join(spec["bits"].split("-"))
        s2 = f"bits = [{bits}], group = {spec['group']}"
        if spec.get("order") == "msb":
            s2 += ", order = msb_first"
        if spec.get("anchor") == "min":
            s2 += ", anchor = min"
    return f"#qattn.stage1<{s1}>", (f"#qattn.stage2<{s2}>" if s2 else None)


MLIR_TYPES = {np.dtype(np.int8): "i8", np.dtype(np.float32): "f32",
              np.dtype(np.float16): "f16", np.dtype(np.int32): "i32"}


def tensor_type(arr, dims):
    shape = ["?" if sym else str(n) for n, sym in zip(arr.shape, dims)]
    return f"tensor<{'x'.join(shape)}x{MLIR_TYPES[arr.dtype]}>"


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        print(r.stdout)
        print(f"tile_random: FAILED: {' '.join(cmd)}", flush=True)
        sys.exit(1)
    return r.stdout


failures = 0
for case in range(a.cases):
    d = rng.choice([16, 32, 64, 96])
    hkv = rng.choice([1, 2])
    hq = hkv * rng.choice([1, 2, 4])
    nq = rng.choice([1, 1, 2, 3, 5])
    ktext, k2 = kv_scheme(hkv)
    vtext, v2 = kv_scheme(hkv)
    blocks = [int(t.split(",")[0].split("=")[1]) for t in (ktext, vtext)]
    paged = rng.random() < 0.6
    page = rng.choice([64, 128]) if paged else 0
    buffer = rng.random() < 0.5
    causal = rng.random() < 0.5
    sas = rng.random() < 0.25
    qkind = rng.choice(["f32", "f16", "int8"])
    edges = [0, 1, 15, 16, 17, max(blocks) - 1, max(blocks) + 1, 64, 65, 127, 128, 129]
    lens = [rng.choice(edges + [rng.randrange(1, 400)]) for _ in range(rng.randrange(1, 5))]
    splits = rng.choice([1, 2, 5])
    stages = rng.choice([1, 2, 3, 4])
    name = f"c{case}"
    where = os.path.join(a.out, name)
    desc = (f"{name}: Hq={hq} Hkv={hkv} Nq={nq} d={d} q={qkind} K {ktext} V {vtext} "
            f"{'paged P=' + str(page) if paged else 'contiguous'}{' +tail' if buffer else ''}"
            f"{' causal' if causal else ''}{' sas' if sas else ''} lens={lens} "
            f"splits={splits} stages={stages}")
    print(desc, flush=True)

    gen = [sys.executable, os.path.join(INPUTS, "make_paged.py"), "--seed", str(rng.randrange(1 << 30)),
           "--batch-lens", ",".join(map(str, lens)), "--hq", str(hq), "--hkv", str(hkv),
           "--nq", str(nq), "--d", str(d), "--k", ktext, "--v", vtext, "--page", str(page),
           "--out", os.path.join(where, "in")]
    qspec = ""
    if qkind == "int8":
        qspec = "block=16"
        gen += ["--q", qspec]
    else:
        gen += ["--q-dtype", qkind]
    if buffer:
        gen += ["--buffer"] + ([] if paged else ["--buffer-size", "64"])
    run(gen)

    def arr(n):
        return np.load(os.path.join(where, "in", n + ".npy"))

    def kv_names(x, two):
        return ([f"{x}_codes", f"{x}_scales", f"{x}_group_scales", f"{x}_zeros"] if two
                else [f"{x}_data", f"{x}_scales"])

    names = ["q"] + (["q_scales"] if qkind == "int8" else [])
    names += kv_names("k", k2) + kv_names("v", v2)
    if buffer:
        names += ["k_buffer", "k_buffer_scale", "v_buffer", "v_buffer_scale"]
    names += ["kv_lens"] + (["page_table"] if paged else [])
    pool = {"k_codes", "k_scales", "k_group_scales", "k_zeros", "k_data",
            "v_codes", "v_scales", "v_group_scales", "v_zeros", "v_data"}
    args, types = [], []
    for n in names:
        x = arr(n)
        dims = [False] * x.ndim
        dims[0] = True  # B, or the pool's pages
        sym = ["NP" if (paged and n in pool) else "B"] + [""] * (x.ndim - 1)
        if n == "page_table":
            dims[1], sym[1] = True, "MP"
        t = tensor_type(x, dims)
        args.append(f'%{n}: {t} {{qattn.name = "{n}", qattn.dims = [{", ".join(chr(34) + s + chr(34) for s in sym)}]}}')
        types.append(t)
    q = arr("q")
    out_type = f"tensor<?x{hq}x{nq}x{d}x{'f16' if qkind == 'f16' else 'f32'}>"
    ks1, ks2 = stage_attrs(ktext)
    vs1, vs2 = stage_attrs(vtext)
    attrs = [f"k_stage1 = {ks1}", f"v_stage1 = {vs1}"]
    if ks2:
        attrs.append(f"k_stage2 = {ks2}")
    if vs2:
        attrs.append(f"v_stage2 = {vs2}")
    if qkind == "int8":
        attrs.append("q_stage1 = #qattn.stage1<block = 16>")
    if causal:
        attrs.append("causal")
    if sas:
        attrs.append("softmax = #qattn.softmax<sas, threshold = -6.0, degree = 2>")
    kops = ", ".join("%" + n for n in kv_names("k", k2))
    vops = ", ".join("%" + n for n in kv_names("v", v2))
    qop = "%q [%q_scales]" if qkind == "int8" else "%q"
    extra = " buffers(%k_buffer, %k_buffer_scale, %v_buffer, %v_buffer_scale)" if buffer else ""
    extra += " lengths(%kv_lens)" + (" pages(%page_table)" if paged else "")
    module = (
        f"func.func @{name}({', '.join(args)})\n"
        f"    -> ({out_type} {{qattn.name = \"o\", qattn.dims = [\"B\", \"\", \"\", \"\"]}}) {{\n"
        f"  %o = qattn.attention {qop} keys({kops}) values({vops}){extra}\n"
        f"      {{{', '.join(attrs)}}}\n"
        f"      : ({', '.join(types)}) -> {out_type}\n"
        f"  return %o : {out_type}\n}}\n")
    src = os.path.join(where, "case.mlir")
    with open(src, "w") as f:
        f.write(module)
    tiled = os.path.join(where, "tiled.mlir")
    run(["qattn-opt", src, f"--qattn-tile=splits={splits}",
         f"--qattn-pipeline=num-stages={stages}", "-o", tiled])
    for kind, mlir in (("spec", src), ("tiled", tiled)):
        art = os.path.join(where, "art-" + kind)
        run(["qattn-compile", mlir, "-o", art])
        inputs = []
        for n in names:
            inputs += ["--input", f"{n}={os.path.join(where, 'in', n + '.npy')}"]
        outd = os.path.join(where, "out-" + kind)
        run(["qattn-run", art, "--function", name] + inputs + ["--output-dir", outd])
        check = [sys.executable, os.path.join(INPUTS, "check_paged.py"), "--case", f"{name}-{kind}",
                 "--art", art, "--function", name, "--in", os.path.join(where, "in"),
                 "--out", outd, "--q", qspec, "--k", ktext, "--v", vtext,
                 "--max-rel-fro", "4", "--min-sqnr", "-40"]
        if causal:
            check.append("--causal")
        if sas:
            check += ["--softmax", "sas:-6.0:2"]
        r = subprocess.run(check, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        sys.stdout.write(r.stdout)
        if r.returncode != 0:
            failures += 1
            print(f"tile_random: {name}-{kind} FAILED (seed {seed})", flush=True)

print(f"tile_random: {a.cases} cases, {failures} failed (seed {seed})")
sys.exit(1 if failures else 0)
