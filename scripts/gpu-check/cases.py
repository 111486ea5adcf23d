#!/usr/bin/env python3
"""The GPU correctness matrix: generates, for every case, a CPU module (a
`quantize` function from float Q/K/V to the quantized operands, and the same
`attention` as the reference) and a GPU module (`attention` alone), then
compiles both with qattn-compile. Run on the CPU machine; the folder it
writes travels to the GPU machine, where check.py runs the cases.

usage: cases.py OUT_DIR [--qattn-compile PATH] [--only NAME_SUBSTRING]
"""
import argparse
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


def matrix():
    cases = []
    # Decode (Nq 1..16) over ragged caches: GQA 1/4/8, 4/2-bit, d 64/128.
    for d in (64, 128):
        for hq, hkv in ((8, 8), (32, 8), (32, 4)):
            for bits in ([4], [2]):
                cases.append(Case(f"decode_b2_h{hq}x{hkv}_d{d}_n1000_{bits[0]}bit",
                                  2, hq, hkv, 1, 1000, d, bits))
    cases += [
        Case("decode_nq4_causal_d128_3bit", 1, 32, 8, 4, 777, 128, [3]),
        # The tensor-core decode kernel: speculative queries, other bit
        # orders and group sizes, GQA 8 (half a row tile).
        Case("decode_nq4_causal_d128_4bit", 1, 32, 8, 4, 777, 128, [4]),
        Case("decode_msb_d64_2bit", 2, 16, 4, 1, 700, 64, [2], order="msb_first"),
        Case("decode_msb_d128_4bit_group32", 1, 16, 2, 3, 1111, 128, [4],
             group=32, order="msb_first", causal=False),
        Case("decode_nq16_noncausal_d64", 3, 16, 4, 16, 555, 64, [4], causal=False),
        Case("decode_mixed_2_4", 2, 16, 4, 2, 900, 128, [4, 2, 2, 4]),
        Case("decode_int8_kv", 2, 16, 4, 1, 1000, 128, []),
        Case("decode_float_q_f16_out", 2, 16, 4, 1, 1000, 128, [4], q_int8=False, out="f16"),
        Case("decode_bf16_out_outlier_k", 1, 8, 2, 1, 1500, 128, [4], out="bf16", dist="outlier"),
        Case("decode_with_buffer", 2, 16, 4, 1, 960, 128, [4], buffer=40),
        Case("decode_long_split", 1, 32, 8, 1, 16000, 128, [4], cpu_reference=False),
        Case("decode_sas_d128", 2, 16, 4, 1, 1000, 128, [4], softmax="sas"),
        Case("prefill_sas_n300_d64", 1, 8, 2, 300, 300, 64, [4], softmax="sas"),
        # The reference decode shape of docs (DESIGN.md): B8 Hq32 Hkv8 N32K d128.
        Case("decode_b8_h32x8_n32768_d128_4bit", 8, 32, 8, 1, 32768, 128, [4],
             causal=False, cpu_reference=False),
        # Prefill (Nq = Nk), causal and not, ragged lengths.
        Case("prefill_n300_causal_d64", 1, 8, 2, 300, 300, 64, [4]),
        Case("prefill_n257_noncausal_d128", 2, 4, 4, 257, 257, 128, [2], causal=False),
        Case("prefill_n1100_causal_d128_gqa8", 1, 16, 2, 1100, 1100, 128, [4],
             cpu_reference=False),
        Case("prefill_n4100_causal_d64", 1, 8, 8, 4100, 4100, 64, [4], cpu_reference=False),
        Case("prefill_n8192_causal_d128", 1, 8, 2, 8192, 8192, 128, [4], cpu_reference=False),
        # The prefill shape of the design brief: B4 H32 N4096 d128, non-causal.
        Case("prefill_b4_h32_n4096_d128_noncausal", 4, 32, 32, 4096, 4096, 128, [4],
             causal=False, cpu_reference=False),
    ]
    return cases


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
                   f"order = {c.order}>"
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


def attention_func(c, o):
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--qattn-compile", default=os.path.join(
        os.path.dirname(__file__), "..", "..", "build", "bin", "qattn-compile"))
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    done = []
    for c in matrix():
        if args.only not in c.name:
            continue
        o = Operands(c)
        folder = os.path.join(args.out, c.name)
        os.makedirs(folder, exist_ok=True)
        cpu, gpu = os.path.join(folder, "cpu.mlir"), os.path.join(folder, "gpu.mlir")
        with open(cpu, "w") as f:
            f.write(quantize_func(c, o) + "\n" + attention_func(c, o))
        with open(gpu, "w") as f:
            f.write(attention_func(c, o))
        for src, target in ((cpu, "cpu"), (gpu, "cuda")):
            r = subprocess.run([args.qattn_compile, src, "-o", os.path.join(folder, target),
                                f"--target={target}"], capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit(f"{c.name}: qattn-compile --target={target} failed:\n{r.stderr}")
        print(f"compiled {c.name}")
        done.append(asdict(c) | {"operands": [n for n, _ in o.all()]})
    with open(os.path.join(args.out, "cases.json"), "w") as f:
        json.dump(done, f, indent=1)
    print(f"{len(done)} cases in {args.out}")


if __name__ == "__main__":
    main()
