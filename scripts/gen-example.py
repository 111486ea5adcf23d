#!/usr/bin/env python3
"""Writes examples/attention.mlir, the built-in example of the README's first
command. The types of a quantized attention are long and follow from a few
sizes, so they are derived here instead of typed by hand."""
import os

B, HQ, HKV, NQ, NK, D, BLOCK, GROUP = 1, 8, 2, 16, 1000, 64, 64, 16
# Stage 2 as qattn.paged's default scheme, the best measured one (docs/ACCURACY.md): the grid at
# each group's minimum, the constants chosen by the mse fit.
ANCHOR, FIT = "min", "#qattn.fit<mse>"


def stage2(bits):
    return (f"#qattn.stage2<bits = [{', '.join(map(str, bits))}], group = {GROUP}, "
            f"anchor = {ANCHOR}>")


def tensor(*shape, elt):
    return "tensor<" + "x".join(map(str, shape)) + "x" + elt + ">"


def ceil_div(a, b):
    return -(-a // b)


def function(name, bits, comment):
    """Causal GQA attention with BPQ int8 queries; K/V at `bits` (None: int8)."""
    s1 = f"#qattn.stage1<block = {BLOCK}>"
    qf, kf = tensor(B, HQ, NQ, D, elt="f32"), tensor(B, HKV, NK, D, elt="f32")
    q8, k8 = tensor(B, HQ, NQ, D, elt="i8"), tensor(B, HKV, NK, D, elt="i8")
    qs = tensor(B, HQ, ceil_div(NQ, BLOCK), elt="f32")
    ks = tensor(B, HKV, ceil_div(NK, BLOCK), elt="f32")
    lines = [
        f"// {comment}",
        f'func.func @{name}(%q: {qf} {{qattn.name = "q"}}, %k: {kf} {{qattn.name = "k"}},',
        f'    %v: {kf} {{qattn.name = "v"}}) -> ({qf} {{qattn.name = "out"}}) {{',
        f"  // Stage 1: int8 per block of {BLOCK} tokens x {D} channels.",
        f"  %q8, %qs = qattn.quantize %q {{scheme = {s1}}} : {qf} -> {q8}, {qs}",
        f"  %k8, %ks = qattn.quantize %k {{scheme = {s1}}} : {kf} -> {k8}, {ks}",
        f"  %v8, %vs = qattn.quantize %v {{scheme = {s1}}} : {kf} -> {k8}, {ks}",
    ]
    attrs = f"q_stage1 = {s1}, k_stage1 = {s1}, v_stage1 = {s1}"
    if bits is None:
        keys, values = "keys(%k8, %ks)", "values(%v8, %vs)"
        types = f"{q8}, {qs}, {k8}, {ks}, {k8}, {ks}"
    else:
        s2 = stage2(bits)
        row = D * sum(bits) // 8 if len(bits) > 1 else HKV * D * bits[0] // 8
        packed = tensor(B, NK, row, elt="i8")
        groups = tensor(B, HKV, ceil_div(NK, GROUP), D, elt="i8")
        lines += [
            f"  // Stage 2: the KV cache's packed codes, per channel in groups of {GROUP} tokens.",
            f"  %kp, %ks2, %kz2 = qattn.progressive_quantize %k8 {{scheme = {s2}, fit = {FIT}}}",
            f"      : {k8} -> {packed}, {groups}, {groups}",
            f"  %vp, %vs2, %vz2 = qattn.progressive_quantize %v8 {{scheme = {s2}, fit = {FIT}}}",
            f"      : {k8} -> {packed}, {groups}, {groups}",
        ]
        keys, values = "keys(%kp, %ks, %ks2, %kz2)", "values(%vp, %vs, %vs2, %vz2)"
        attrs += f", k_stage2 = {s2}, v_stage2 = {s2}"
        types = f"{q8}, {qs}, {packed}, {ks}, {groups}, {groups}, {packed}, {ks}, {groups}, {groups}"
    lines += [
        "  // Fused attention over the quantized operands.",
        f"  %o = qattn.attention %q8 [%qs] {keys} {values}",
        f"      {{{attrs}, causal}}",
        f"      : ({types}) -> {qf}",
        f"  return %o : {qf}",
        "}",
    ]
    return "\n".join(lines) + "\n"


def gpu_functions():
    """The 4-bit example split at the cache: `quantize_int4` (CPU) produces the
    quantized operands, `attention_int4` (GPU) attends over them."""
    s1 = f"#qattn.stage1<block = {BLOCK}>"
    s2 = stage2([4])
    qf, kf = tensor(B, HQ, NQ, D, elt="f32"), tensor(B, HKV, NK, D, elt="f32")
    q8, k8 = tensor(B, HQ, NQ, D, elt="i8"), tensor(B, HKV, NK, D, elt="i8")
    qs = tensor(B, HQ, ceil_div(NQ, BLOCK), elt="f32")
    ks = tensor(B, HKV, ceil_div(NK, BLOCK), elt="f32")
    packed = tensor(B, NK, HKV * D // 2, elt="i8")
    groups = tensor(B, HKV, ceil_div(NK, GROUP), D, elt="i8")
    ops = [("q8", q8), ("qs", qs), ("kp", packed), ("ks", ks), ("kg", groups), ("kz", groups),
           ("vp", packed), ("vs", ks), ("vg", groups), ("vz", groups)]
    named = ", ".join(f'{t} {{qattn.name = "{n}"}}' for n, t in ops)
    quantize = "\n".join([
        "// The quantized operands of attention_int4 (run on the CPU).",
        f'func.func @quantize_int4(%q: {qf} {{qattn.name = "q"}}, %k: {kf} {{qattn.name = "k"}},',
        f'    %v: {kf} {{qattn.name = "v"}}) -> ({named}) {{',
        f"  %q8, %qs = qattn.quantize %q {{scheme = {s1}}} : {qf} -> {q8}, {qs}",
        f"  %k8, %ks = qattn.quantize %k {{scheme = {s1}}} : {kf} -> {k8}, {ks}",
        f"  %v8, %vs = qattn.quantize %v {{scheme = {s1}}} : {kf} -> {k8}, {ks}",
        f"  %kp, %kg, %kz = qattn.progressive_quantize %k8 {{scheme = {s2}, fit = {FIT}}}"
        f" : {k8} -> {packed}, {groups}, {groups}",
        f"  %vp, %vg, %vz = qattn.progressive_quantize %v8 {{scheme = {s2}, fit = {FIT}}}"
        f" : {k8} -> {packed}, {groups}, {groups}",
        f"  return {', '.join('%' + n for n, _ in ops)} : {', '.join(t for _, t in ops)}",
        "}", ""])
    args = ", ".join(f'%{n}: {t} {{qattn.name = "{n}"}}' for n, t in ops)
    attention = "\n".join([
        "// The same attention as attention_int4 in attention.mlir, over quantized",
        "// operands: what the GPU pipeline compiles.",
        f'func.func @attention_int4({args}) -> ({qf} {{qattn.name = "out"}}) {{',
        "  %o = qattn.attention %q8 [%qs] keys(%kp, %ks, %kg, %kz) values(%vp, %vs, %vg, %vz)",
        f"      {{q_stage1 = {s1}, k_stage1 = {s1}, v_stage1 = {s1}, k_stage2 = {s2}, v_stage2 = {s2}, causal}}",
        f"      : ({', '.join(t for _, t in ops)}) -> {qf}",
        f"  return %o : {qf}",
        "}", ""])
    return quantize, attention


HEADER = f"""// The built-in example of the README's first command: causal grouped-query
// attention (B={B}, Hq={HQ}, Hkv={HKV}, Nq={NQ} queries over Nk={NK} keys, d={D}; Nk is a
// multiple of neither the block nor the group) with BPQ int8 queries and a
// quantized KV cache. qattn-compile builds every function; qattn-run checks
// each against float64 attention on the unquantized inputs.
// Generated by scripts/gen-example.py.
"""

if __name__ == "__main__":
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    body = "\n".join([
        function("attention_int8", None, "Stage 1 only: int8 keys and values."),
        function("attention_int4", [4], "4-bit keys and values."),
        function("attention_mixed_2_4", [4, 2],
                 "Headwise mixed precision: KV head 0 at 4 bits, head 1 at 2 bits."),
    ])
    quantize, attention = gpu_functions()
    with open(os.path.join(root, "examples", "attention.mlir"), "w") as f:
        f.write(HEADER + "\n" + body + "\n" + quantize)
    with open(os.path.join(root, "examples", "attention_gpu.mlir"), "w") as f:
        f.write("// The GPU half of the built-in example (see attention.mlir).\n"
                "// Generated by scripts/gen-example.py.\n\n" + attention)
