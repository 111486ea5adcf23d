"""Module generators shared by the GPU correctness matrix (cases.py here) and the
performance benchmark (bench/cases.py): a case's quantized operands, its
`attention` function (the GPU module), its `quantize` function (float Q/K/V to
the quantized operands; with `attention`, the CPU module), and the
qattn-compile step that turns both into artifacts.
"""
import json
import os
import subprocess
import sys
from dataclasses import asdict, dataclass, field


@dataclass
class Case:
    name: str
    batch: int
    hq: int
    hkv: int
    nq: int
    nk: int
    d: int
    bits: list = field(default_factory=lambda: [4])  # [] = int8 K/V (stage 1 only)
    causal: bool = True
    q_int8: bool = True
    block: int = 64
    group: int = 16
    out: str = "f32"
    buffer: int = 0  # decode-buffer tokens (int8, one scale per head)
    dist: str = "normal"
    cpu_reference: bool = True  # small enough for the single-threaded CPU spec
    softmax: str = "exact"  # or "sas" (threshold -6, degree 3)
    order: str = "lsb_first"  # stage-2 bit order
    anchor: str = "zero"  # stage-2 grid anchor (zero | min)
    # A #qattn.gpu_tiling for the GPU module's op (qattn-tile keeps it); ""
    # leaves the choice to qattn-tile.
    tiling: str = ""
    # More qattn-tile options for this case's GPU module (before write_case's
    # own), e.g. "tile-keys=16".
    tile_options: str = ""


def tensor(shape, elt):
    return "tensor<" + "x".join(map(str, shape)) + "x" + elt + ">"


def cdiv(a, b):
    return -(-a // b)


class Operands:
    """The quantized operands of a case: (name, type) pairs in op order."""

    def __init__(self, c):
        self.c = c
        s1 = f"#qattn.stage1<block = {c.block}>"
        self.s1 = s1
        self.s2 = (f"#qattn.stage2<bits = [{', '.join(map(str, c.bits))}], group = {c.group}, "
                   f"order = {c.order}{', anchor = min' if c.anchor == 'min' else ''}>"
                   if c.bits else None)
        kv = [c.batch, c.hkv, c.nk, c.d]
        self.qf = tensor([c.batch, c.hq, c.nq, c.d], "f32")
        self.kf = tensor(kv, "f32")
        self.q8 = tensor([c.batch, c.hq, c.nq, c.d], "i8")
        self.qs = tensor([c.batch, c.hq, cdiv(c.nq, c.block)], "f32")
        self.k8 = tensor(kv, "i8")
        self.ks = tensor([c.batch, c.hkv, cdiv(c.nk, c.block)], "f32")
        if c.bits:
            row = c.d * sum(c.bits) // 8 if len(c.bits) > 1 else c.hkv * c.d * c.bits[0] // 8
            self.packed = tensor([c.batch, c.nk, row], "i8")
            self.groups = tensor([c.batch, c.hkv, cdiv(c.nk, c.group), c.d], "i8")
        if c.buffer:
            self.bf = tensor([c.batch, c.hkv, c.buffer, c.d], "f32")
            self.b8 = tensor([c.batch, c.hkv, c.buffer, c.d], "i8")
            self.bs3 = tensor([c.batch, c.hkv, 1], "f32")
            self.bs = tensor([c.batch, c.hkv], "f32")

    def kv_names(self, x):
        return [x + "p", x + "s", x + "g", x + "z"] if self.c.bits else [x + "8", x + "s"]

    def kv_types(self):
        return [self.packed, self.ks, self.groups, self.groups] if self.c.bits else [self.k8, self.ks]

    def all(self):
        c = self.c
        ops = [("q8", self.q8), ("qs", self.qs)] if c.q_int8 else [("q", self.qf)]
        ops += list(zip(self.kv_names("k"), self.kv_types()))
        ops += list(zip(self.kv_names("v"), self.kv_types()))
        if c.buffer:
            ops += [("kb", self.b8), ("kbs", self.bs), ("vb", self.b8), ("vbs", self.bs)]
        return ops


def attention_func(c, o, gpu=False):
    ops = o.all()
    args = ", ".join(f'%{n}: {t} {{qattn.name = "{n}"}}' for n, t in ops)
    out = tensor([c.batch, c.hq, c.nq, c.d], c.out)
    q = "%q8 [%qs]" if c.q_int8 else "%q"
    keys = "keys(" + ", ".join("%" + n for n in o.kv_names("k")) + ")"
    values = "values(" + ", ".join("%" + n for n in o.kv_names("v")) + ")"
    bufs = " buffers(%kb, %kbs, %vb, %vbs)" if c.buffer else ""
    attrs = [f"k_stage1 = {o.s1}", f"v_stage1 = {o.s1}"]
    if c.q_int8:
        attrs.append(f"q_stage1 = {o.s1}")
    if o.s2:
        attrs += [f"k_stage2 = {o.s2}", f"v_stage2 = {o.s2}"]
    if c.causal:
        attrs.append("causal")
    if c.softmax == "sas":
        attrs.append("softmax = #qattn.softmax<sas, threshold = -6.0, degree = 3>")
    if gpu and c.tiling:
        attrs.append(f"gpu_tiling = {c.tiling}")
    types = ", ".join(t for _, t in ops)
    return (f'func.func @attention({args}) -> ({out} {{qattn.name = "out"}}) {{\n'
            f"  %o = qattn.attention {q} {keys} {values}{bufs} {{{', '.join(attrs)}}}\n"
            f"      : ({types}) -> {out}\n"
            f"  return %o : {out}\n}}\n")


def quantize_func(c, o):
    args = [f'%q: {o.qf} {{qattn.name = "q"}}', f'%k: {o.kf} {{qattn.name = "k"}}',
            f'%v: {o.kf} {{qattn.name = "v"}}']
    if c.buffer:
        args += [f'%kbf: {o.bf} {{qattn.name = "kbf"}}', f'%vbf: {o.bf} {{qattn.name = "vbf"}}']
    body = []
    if c.q_int8:
        body.append(f"  %q8, %qs = qattn.quantize %q {{scheme = {o.s1}}} : {o.qf} -> {o.q8}, {o.qs}")
    for x in "kv":
        body.append(f"  %{x}8, %{x}s = qattn.quantize %{x} {{scheme = {o.s1}}} : {o.kf} -> {o.k8}, {o.ks}")
        if c.bits:
            body.append(f"  %{x}p, %{x}g, %{x}z = qattn.progressive_quantize %{x}8 "
                        f"{{scheme = {o.s2}}} : {o.k8} -> {o.packed}, {o.groups}, {o.groups}")
    if c.buffer:
        # The buffer's fixed scale: stage 1 over the whole buffer (one block).
        s1b = f"#qattn.stage1<block = {c.buffer}>"
        for x in "kv":
            body.append(f"  %{x}b, %{x}bs3 = qattn.quantize %{x}bf {{scheme = {s1b}}} : {o.bf} -> {o.b8}, {o.bs3}")
            body.append(f"  %{x}bs = tensor.collapse_shape %{x}bs3 [[0], [1, 2]] : {o.bs3} into {o.bs}")
    # A float Q is an input of both functions, not a quantize result.
    results = [(n, t) for n, t in o.all() if n != "q"]
    names = ", ".join("%" + n for n, _ in results)
    rtypes = ", ".join(f'{t} {{qattn.name = "{n}"}}' for n, t in results)
    plain = ", ".join(t for _, t in results)
    return (f"func.func @quantize({', '.join(args)}) -> ({rtypes}) {{\n" + "\n".join(body) +
            f"\n  return {names} : {plain}\n}}\n")


def write_case(c, folder, qattn_compile, tile_options=""):
    """Writes FOLDER/cpu.mlir (`quantize` + `attention`) and FOLDER/gpu.mlir
    (`attention`), compiles them into FOLDER/cpu and FOLDER/cuda (the latter
    with qattn-compile --tile-options: the case's, then TILE_OPTIONS), and returns
    the case's cases.json entry. Exits with qattn-compile's message on failure."""
    o = Operands(c)
    os.makedirs(folder, exist_ok=True)
    cpu, gpu = os.path.join(folder, "cpu.mlir"), os.path.join(folder, "gpu.mlir")
    with open(cpu, "w") as f:
        f.write(quantize_func(c, o) + "\n" + attention_func(c, o))
    with open(gpu, "w") as f:
        f.write(attention_func(c, o, gpu=True))
    options = " ".join(opt for opt in (c.tile_options, tile_options) if opt)
    for src, target in ((cpu, "cpu"), (gpu, "cuda")):
        extra = [f"--tile-options={options}"] if target == "cuda" and options else []
        r = subprocess.run([qattn_compile, src, "-o", os.path.join(folder, target),
                            f"--target={target}"] + extra, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"{c.name}: qattn-compile --target={target} failed:\n{r.stderr}")
    return asdict(c) | {"operands": [n for n, _ in o.all()]}


def write_cases(cases, out, qattn_compile, only="", tile_options=""):
    """write_case for every case whose name contains ONLY (or one of its
    comma-separated substrings), into OUT/<name>, then OUT/cases.json listing
    them."""
    os.makedirs(out, exist_ok=True)
    done = []
    for c in cases:
        if not any(s in c.name for s in only.split(",")):
            continue
        done.append(write_case(c, os.path.join(out, c.name), qattn_compile, tile_options))
        print(f"compiled {c.name}", flush=True)
    with open(os.path.join(out, "cases.json"), "w") as f:
        json.dump(done, f, indent=1)
    print(f"{len(done)} cases in {out}")
    return done
