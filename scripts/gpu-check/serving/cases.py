#!/usr/bin/env python3
"""The serving-form decode cases of the GPU check: one module of paged,
per-sequence-length attentions (qattn-tile puts them on the tile layer, whose
GPU lowering compiles them once for any batch, length and pool) and, per
case, the make_paged.py / check_paged.py arguments that make and check its
inputs (test/Integration/Inputs).

usage: cases.py mlir > decode.mlir     the module
       cases.py json > cases.json      the runs (serving.sh reads them)
"""
import json
import sys

# name, Hq, Hkv, Nq, d, K scheme, V scheme, page, buffer, causal, q dtype,
# out dtype, lengths (several batches of one compiled function)
CASES = [
    ("paged_int4_d64", 8, 2, 1, 64, "block=64,bits=4,group=16", "block=64,bits=4,group=16",
     64, True, False, "f32", "f32", ["1,15,16,17,1000,4097", "64,65,300", "41000"]),
    ("paged_int2_causal", 4, 1, 4, 64, "block=64,bits=2,group=16,order=msb,anchor=min",
     "block=64,bits=2,group=16,order=msb,anchor=min", 128, False, True, "f32", "f32",
     ["0,1,3,4,5,127,128,129,1000"]),
    ("llama_int4_d128", 32, 8, 1, 128, "block=64,bits=4,group=32", "block=64,bits=4,group=32",
     64, True, False, "f16", "f16", ["1,63,64,65,700,3000,8191,5", "40000"]),
    ("spec_int4_causal", 8, 2, 8, 128, "block=64,bits=4,group=16,order=msb,anchor=min",
     "block=128,bits=4,group=64", 128, True, True, "f32", "f32", ["8,9,100,2000", "300"]),
    ("paged_int8", 4, 2, 2, 64, "block=32", "block=32", 64, True, False, "f32", "f32",
     ["1,31,32,33,640,1111"]),
    ("mha_int2_d128", 4, 4, 1, 128, "block=64,bits=2,group=16", "block=64,bits=2,group=32",
     64, False, False, "f32", "bf16", ["2,100,4000"]),
    # SAS (one split, a max pass then the terms), with its own softmax.
    ("sas_int4", 8, 2, 1, 128, "block=64,bits=4,group=32", "block=64,bits=4,group=32",
     64, True, False, "f16", "f32", ["1,70,700,3000"], "sas:-6:3"),
    # Per-head code widths: one program per (K, V) width pair (2 and 4 pairs).
    ("mixed_heads_d128", 32, 8, 1, 128, "block=64,bits=2-4-2-4-2-4-2-4,group=16,anchor=min",
     "block=64,bits=4-2-4-2-4-2-4-2,group=32", 64, True, False, "f16", "f16",
     ["1,15,16,17,1000,4097", "300"]),
    ("mixed_heads_d64_causal", 8, 4, 2, 64, "block=64,bits=2-4-4-2,group=16,order=msb",
     "block=64,bits=4-4-2-2,group=16,order=msb,anchor=min", 64, True, True, "f32", "f32",
     ["1,2,63,64,65,500,2000"]),
    # BPQ int8 queries, one stage-1 scale per block of 4 queries and head.
    ("bpq_q_int4_causal", 8, 2, 8, 64, "block=64,bits=4,group=32", "block=64,bits=4,group=32",
     64, True, True, "i8:block=4", "f32", ["8,40,64,65,900"]),
    # Stage-1 scales per channel (KIVI's per-channel K): K and V of stage 2
    # (f16 scales for V), int8 queries with f16 scales per channel.
    ("channel_s1_int4_d128", 32, 8, 1, 128, "block=64,bits=4,group=16,gran=channel",
     "block=64,bits=4,group=32,scale=f16,gran=channel", 64, True, False,
     "i8:block=1,scale=f16,gran=channel", "f16", ["1,15,16,17,1000,4097", "300"]),
    # Stage-1-only int8 caches with scales per channel, d = 64 (V's 8-byte
    # pieces), and 2-bit V whose 2-byte pieces stay register loads.
    ("channel_s1_int8_d64_causal", 8, 2, 2, 64, "block=32,gran=channel",
     "block=32,scale=f16,gran=channel", 64, True, True, "f32", "f32", ["1,2,31,32,33,700"]),
    ("channel_s1_int2_d64", 8, 2, 1, 64, "block=64,bits=4,group=16,gran=channel",
     "block=64,bits=2,group=16,gran=channel", 64, False, False, "f16", "f32",
     ["1,63,64,65,2000"]),
    # 3-bit codes (widened to 4 bits as they are loaded): both orders and
    # anchors, and per-head widths with 3 among them.
    ("int3_d128", 32, 8, 1, 128, "block=64,bits=3,group=16",
     "block=64,bits=3,group=32,order=msb,anchor=min", 64, True, False, "f16", "f16",
     ["1,15,16,17,1000,4097", "300"]),
    ("int3_mixed_d64_causal", 8, 4, 2, 64, "block=64,bits=3-4-3-2,group=16,order=msb",
     "block=64,bits=3-3-4-4,group=16,anchor=min", 64, True, True, "f32", "f32",
     ["1,2,63,64,65,500,2000"]),
    # Stage-2 groups and stage-1 blocks of 8 keys: two of each in a 16-key
    # mma block, one per half (the lane's keys g and g + 8 of K, 2t, 2t + 1
    # and 2t + 8, 2t + 9 of V); pages of 16 keys; scales per channel.
    ("g8_int4_d128", 32, 8, 1, 128, "block=64,bits=4,group=8,anchor=min",
     "block=64,bits=2,group=8,order=msb", 64, True, False, "f16", "f16",
     ["1,7,8,9,15,16,17,1000,4097", "300"]),
    ("b8_int8_d64_causal", 8, 2, 2, 64, "block=8", "block=8,scale=f16", 64, True, True,
     "f32", "f32", ["1,2,7,8,9,16,17,700"]),
    ("b8_g8_page16_d64", 8, 4, 1, 64, "block=8,bits=4-3-2-4,group=8",
     "block=16,bits=3-4-4-2,group=8,anchor=min", 16, True, False, "f32", "f32",
     ["1,7,8,9,15,16,17,33,1500"]),
    ("b8_channel_int4_d128", 32, 8, 1, 128, "block=8,bits=4,group=8,gran=channel",
     "block=8,bits=4,group=8,scale=f16,gran=channel", 64, True, False,
     "i8:block=1", "f16", ["1,8,9,16,17,1000,3000"]),
    # Head dim 96 (2-, 4-bit and int8): a lane's 24 K channels and 12 V ones,
    # code pieces of 12 and 6 bytes (4-bit) or 24 and 12 (int8) through the
    # ring as unswizzled rows, 24-byte int8 query and 24-byte f16 scale pieces.
    ("d96_int4", 32, 8, 1, 96, "block=64,bits=4,group=16",
     "block=64,bits=4,group=32,order=msb", 64, True, False, "f16", "f16",
     ["1,15,16,17,1000,4097", "300"]),
    ("d96_int8_causal", 8, 2, 4, 96, "block=32,gran=channel", "block=32", 64, True, True,
     "i8:block=1", "f32", ["1,2,31,32,33,700"]),
    # 2-bit K at d = 96 ends a lane's codes in a half word (read spread).
    ("d96_int2_heads", 16, 4, 2, 96, "block=64,bits=2-4-2-2,group=16,order=msb",
     "block=64,bits=2,group=32,anchor=min", 64, True, True, "f16", "f32",
     ["1,2,15,16,17,1000,3000"]),
    # Head dim 80 (4-bit and int8): K's 10 code bytes a lane end in a half
    # word; a row's partials end in a store of 2, its combine in a half task.
    ("d80_int4", 32, 8, 1, 80, "block=64,bits=4,group=16", "block=64,bits=4,group=32",
     64, True, False, "f16", "bf16", ["1,15,16,17,1000,4097"]),
    ("d80_int8_causal", 8, 2, 2, 80, "block=32", "block=32,scale=f16,gran=channel", 64,
     True, True, "i8:block=1", "f32", ["1,2,31,32,33,700"]),
    # 2- and 3-bit at d 80: K's 2-bit codes end in a byte (5 a lane), V's
    # 3-bit ones start inside a group (10 a lane, read shifted), V's msb 2-bit
    # ones inside a byte (turned to lsb order, then shifted).
    ("d80_int2_int3", 16, 4, 1, 80, "block=64,bits=2,group=16",
     "block=64,bits=3,group=16,order=msb,anchor=min", 64, True, False, "f16", "f32",
     ["1,15,16,17,1000,3000"]),
    ("d80_int3_int2_causal", 8, 2, 2, 80, "block=64,bits=3,group=16,order=msb",
     "block=64,bits=2,group=32,order=msb", 64, True, True, "f32", "f32", ["1,2,63,64,65,900"]),
    ("d96_channel_g8", 16, 4, 1, 96, "block=64,bits=4,group=8,scale=f16,gran=channel",
     "block=8,bits=4,group=8,scale=f16,gran=channel", 64, True, False,
     "i8:block=1,scale=f16,gran=channel", "bf16", ["1,9,100,2000"]),
    # Head dim 256 (a lane's 64 K channels and 32 V ones; 238 registers at 8
    # warps an SM): 4-bit, int8 with scales per channel, 3-bit K beside
    # 2-bit V, and two row blocks (4 queries of 4 heads, causal).
    ("d256_int4", 16, 8, 1, 256, "block=64,bits=4,group=16", "block=64,bits=4,group=32",
     64, True, False, "f16", "bf16", ["1,15,16,17,1000,4097"]),
    ("d256_int8_causal", 8, 4, 2, 256, "block=32,gran=channel", "block=32", 64, True, True,
     "i8:block=1", "f32", ["1,2,31,32,33,700"]),
    ("d256_int3_int2", 8, 2, 1, 256, "block=64,bits=3,group=16",
     "block=64,bits=2,group=16,order=msb", 64, True, False, "f32", "f32", ["1,63,64,65,2000"]),
    ("d256_int4_nq4_causal", 8, 2, 4, 256, "block=64,bits=4,group=16,anchor=min",
     "block=64,bits=4,group=16", 128, True, True, "f16", "f16", ["4,5,127,128,129,1500"]),
    # The other multiples of 32 up to 256 (past 128 at 8 warps an SM): d 32
    # (8 K channels a lane, 2-bit V's 1-byte pieces), 160 (K's 2-bit codes
    # end in a half word), 192 (4-bit rows of 96 bytes), 224 (int8).
    ("d32_int2_causal", 8, 2, 2, 32, "block=64,bits=2,group=16", "block=64,bits=2,group=16",
     64, True, True, "f32", "f32", ["1,2,63,64,65,900"]),
    ("d160_int2_int4", 16, 8, 1, 160, "block=64,bits=2,group=16,order=msb",
     "block=64,bits=4,group=32", 64, True, False, "f16", "f16", ["1,15,16,17,1000,3000"]),
    ("d192_int4", 16, 8, 1, 192, "block=64,bits=4,group=16", "block=64,bits=4,group=32",
     64, True, False, "f16", "bf16", ["1,15,16,17,1000,4097"]),
    ("d224_int8_causal", 8, 4, 2, 224, "block=32", "block=32,gran=channel", 64, True, True,
     "i8:block=1", "f32", ["1,2,31,32,33,700"]),
    # 3-bit V at d 96 and 160: a lane's 12 or 20 channels end halfway into
    # a group of 8 codes (read whole, shifted down for odd lanes).
    ("d96_int3_heads", 16, 4, 2, 96, "block=64,bits=3,group=16,order=msb",
     "block=64,bits=3-4-3-2,group=16,order=msb,anchor=min", 64, True, True, "f16", "f32",
     ["1,2,15,16,17,1000,3000"]),
    ("d160_int3", 16, 8, 1, 160, "block=64,bits=3,group=16", "block=64,bits=3,group=32",
     64, True, False, "f16", "f16", ["1,15,16,17,1000,4097"]),
    # Stage-1 blocks under 8 keys (an int8 cache's scale per token): each
    # lane reads the scale of each of its keys, through the ring (f32) or as
    # register loads (f16 scales: no copy size).
    ("token_int8_d128", 32, 8, 1, 128, "block=1", "block=1", 64, True, False, "f16", "f16",
     ["1,2,15,16,17,1000,4097", "300"]),
    ("token_int8_causal", 8, 2, 2, 64, "block=2", "block=4,scale=f16", 16, True, True,
     "f32", "f32", ["1,2,3,4,5,15,16,17,33,700"]),
    # Stage-2 groups of 4 and 2 keys: each lane loads the constants of its
    # keys' groups (12 warps an SM).
    ("g4_int4_g2_int2_d128", 32, 8, 1, 128, "block=64,bits=4,group=4,anchor=min",
     "block=64,bits=2,group=2,order=msb", 64, True, False, "f16", "f16",
     ["1,3,4,5,15,16,17,1000,3000"]),
    # Blocks that split a 16-key tile unevenly (12, 24), likewise.
    ("b12_int8_page48", 8, 2, 1, 128, "block=12", "block=24,scale=f16", 48, True, False,
     "f16", "f32", ["1,11,12,13,47,48,49,700"]),
    ("b12_channel_int8_causal", 8, 2, 2, 64, "block=12,gran=channel",
     "block=24,scale=f16,gran=channel", 48, True, True, "f32", "f32", ["1,2,11,12,13,48,49,700"]),
]


def scheme(spec):
    kv = dict(x.split("=") for x in spec.split(","))
    s1 = f"#qattn.stage1<block = {kv['block']}{stage1_extra(kv)}>"
    if "bits" not in kv:
        return s1, None
    extra = ""
    if kv.get("order") == "msb":
        extra += ", order = msb_first"
    if kv.get("anchor") == "min":
        extra += ", anchor = min"
    bits = [int(b) for b in kv["bits"].split("-")]  # one width, or one per KV head
    return s1, (bits, int(kv["group"]),
                f"#qattn.stage2<bits = {bits}, group = {kv['group']}{extra}>")


def stage1_extra(kv):
    """A stage-1 attribute's scale type and granularity where not the defaults."""
    extra = f", scale = {kv['scale']}" if kv.get("scale", "f32") != "f32" else ""
    if kv.get("gran", "block") != "block":
        extra += f", granularity = {kv['gran']}"
    return extra


def scales_type(kv, lead, blocks, d):
    """The type of a stage-1 scales operand: [lead, blocks] or, per channel,
    [lead, blocks, d]."""
    per_channel = f"x{d}" if kv.get("gran") == "channel" else ""
    return f"?x{lead}x{blocks}{per_channel}x{kv.get('scale', 'f32')}"


def operands(prefix, spec, hkv, d, page):
    s1, s2 = scheme(spec)
    kv = dict(x.split("=") for x in spec.split(","))
    scales = (f"{prefix}_scales", scales_type(kv, hkv, page // int(kv["block"]), d), "NP")
    if s2 is None:
        return [(f"{prefix}_data", f"?x{hkv}x{page}x{d}xi8", "NP"), scales]
    bits, group, _ = s2
    row_bits = sum(bits) if len(bits) > 1 else hkv * bits[0]
    return [(f"{prefix}_codes", f"?x{page}x{row_bits * d // 8}xi8", "NP"), scales,
            (f"{prefix}_group_scales", f"?x{hkv}x{page // group}x{d}xi8", "NP"),
            (f"{prefix}_zeros", f"?x{hkv}x{page // group}x{d}xi8", "NP")]


def function(case):
    name, hq, hkv, nq, d, k, v, page, buffer, causal, qdt, odt, _ = case[:13]
    qkv = dict(x.split("=") for x in qdt.split(":")[1].split(",")) if qdt.startswith("i8") else {}
    qblock = int(qkv.get("block", 0))
    ops = [("q", f"?x{hq}x{nq}x{d}x{'i8' if qblock else qdt}", "B")]
    if qblock:
        ops.append(("q_scales", scales_type(qkv, hq, -(-nq // qblock), d), "B"))
    ks, vs = operands("k", k, hkv, d, page), operands("v", v, hkv, d, page)
    ops += ks + vs
    buf = []
    if buffer:
        buf = [("k_buffer", f"?x{hkv}x{page}x{d}xi8", "B"), ("k_buffer_scale", f"?x{hkv}xf32", "B"),
               ("v_buffer", f"?x{hkv}x{page}x{d}xi8", "B"), ("v_buffer_scale", f"?x{hkv}xf32", "B")]
    ops += buf + [("kv_lens", "?xi32", "B"), ("page_table", "?x?xi32", "B,MP")]
    args = []
    for i, (n, t, dims) in enumerate(ops):
        rank = t.count("x")
        syms = dims.split(",") + [""] * (rank - len(dims.split(",")))
        dims_attr = ", ".join(f'"{s}"' for s in syms)
        args.append(f'    %a{i}: tensor<{t}> {{qattn.name = "{n}", qattn.dims = [{dims_attr}]}}')
    v = [f"%a{i}" for i in range(len(ops))]
    nk, nv, nb = len(ks), len(vs), len(buf)
    nqo = 2 if qblock else 1  # the query operands
    keys = ", ".join(v[nqo:nqo + nk])
    vals = ", ".join(v[nqo + nk:nqo + nk + nv])
    rest = v[nqo + nk + nv:]
    query = f"{v[0]} [{v[1]}]" if qblock else v[0]
    bufs = f" buffers({', '.join(rest[:nb])})" if nb else ""
    attrs = [f"q_stage1 = #qattn.stage1<block = {qblock}{stage1_extra(qkv)}>"] if qblock else []
    for p, spec in (("k", k), ("v", case[6])):
        s1, s2 = scheme(spec)
        attrs.append(f"{p}_stage1 = {s1}")
        if s2:
            attrs.append(f"{p}_stage2 = {s2[2]}")
    if causal:
        attrs.append("causal")
    if len(case) > 13:
        _, thr, deg = case[13].split(":")
        attrs.append(f"softmax = #qattn.softmax<sas, threshold = {float(thr)}, degree = {deg}>")
    out = f"tensor<?x{hq}x{nq}x{d}x{odt}>"
    types = ", ".join(f"tensor<{t}>" for _, t, _ in ops)
    return (f"func.func @{name}(\n" + ",\n".join(args) + ")\n"
            f'    -> ({out} {{qattn.name = "o", qattn.dims = ["B", "", "", ""]}}) {{\n'
            f"  %o = qattn.attention {query} keys({keys}) values({vals}){bufs} "
            f"lengths({rest[nb]}) pages({rest[nb + 1]})\n"
            f"      {{{', '.join(attrs)}}}\n      : ({types}) -> {out}\n"
            f"  return %o : {out}\n}}\n")


def runs():
    out = []
    for case in CASES:
        name, hq, hkv, nq, d, k, v, page, buffer, causal, qdt, odt, batches = case[:13]
        for i, lens in enumerate(batches):
            make = ["--batch-lens", lens, "--hq", str(hq), "--hkv", str(hkv), "--nq", str(nq),
                    "--d", str(d), "--k", k, "--v", v, "--page", str(page)]
            q = qdt.split(":")[1] if qdt.startswith("i8") else ""
            make += ["--q", q] if q else ["--q-dtype", qdt]
            if buffer:
                make.append("--buffer")
            if i:
                make += ["--pages-extra", "5", "--garbage", "nan"]
            check = (["--q", q] if q else []) + ["--k", k, "--v", v] + (["--causal"] if causal else [])
            if len(case) > 13:
                check += ["--softmax", case[13]]
            out.append({"function": name, "run": f"{name}_{i}", "make": make, "check": check})
    return out


if __name__ == "__main__":
    if sys.argv[1:] == ["mlir"]:
        print("// Generated by scripts/gpu-check/serving/cases.py mlir; do not edit.\n")
        print("\n".join(function(c) for c in CASES))
    elif sys.argv[1:] == ["json"]:
        json.dump(runs(), sys.stdout, indent=1)
    else:
        sys.exit(__doc__)
