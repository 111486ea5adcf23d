#!/usr/bin/env python3
"""The GPU correctness matrix: generates, for every case, a CPU module (a
`quantize` function from float Q/K/V to the quantized operands, and the same
`attention` as the reference) and a GPU module (`attention` alone), then
compiles both with qattn-compile. Run on the CPU machine; the folder it
writes travels to the GPU machine, where check.py runs the cases.

usage: cases.py OUT_DIR [--qattn-compile PATH] [--only SUBSTRING[,...]] [--tile-options OPTS]

--tile-options passes more qattn-tile options to the GPU modules, e.g.
'tile-layer=none' (decode on the warp kernel instead of the tile layer) or
'splits=8'.
"""
import argparse
import os

from casegen import Case, write_cases


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
        # Min-anchored stage 2 (docs/FORMAT.md) on each kernel: decode, the
        # warp kernel (3 bits), prefill.
        Case("decode_anchor_min_4bit", 2, 32, 8, 1, 1000, 128, [4], anchor="min"),
        Case("decode_anchor_min_mixed_d64", 1, 16, 4, 2, 900, 64, [4, 2, 2, 4], anchor="min"),
        Case("decode_anchor_min_3bit", 1, 16, 4, 1, 700, 128, [3], anchor="min"),
        Case("prefill_anchor_min_n300", 1, 8, 2, 300, 300, 64, [4], anchor="min"),
        # Stage-2 groups and stage-1 blocks of 8 keys (two per 16-key mma
        # block), a buffer that is not whole tiles.
        Case("decode_group8_block8_d128", 2, 16, 4, 1, 1001, 128, [4], group=8, block=8,
             buffer=24),
        Case("decode_group8_msb_2bit_d64_nq3", 1, 16, 2, 3, 777, 64, [2], group=8,
             order="msb_first"),
        Case("decode_int8_kv_block8_d64", 2, 16, 4, 1, 900, 64, [], block=8),
        # Head dim 96 (2-, 4-bit and int8).
        Case("decode_d96_4bit_buffer", 2, 16, 4, 1, 1000, 96, [4], buffer=40),
        Case("decode_d96_int8_nq2", 1, 16, 2, 2, 700, 96, []),
        Case("decode_d96_2bit_msb_nq3", 1, 16, 4, 3, 555, 96, [2], order="msb_first"),
        # Head dim 80 (2-, 3-, 4-bit and int8).
        Case("decode_d80_4bit_buffer", 2, 16, 4, 1, 900, 80, [4], buffer=24),
        Case("decode_d80_int8_nq2", 1, 16, 2, 2, 700, 80, []),
        Case("decode_d80_2bit_nq2", 1, 16, 4, 2, 700, 80, [2]),
        Case("decode_d80_3bit_msb_buffer", 2, 16, 4, 1, 900, 80, [3], order="msb_first",
             buffer=24),
        # Head dim 256 (4-bit with a buffer, 3-bit with two queries): the tile
        # layer at 8 warps an SM.
        Case("decode_d256_4bit_buffer", 2, 8, 2, 1, 900, 256, [4], buffer=40),
        Case("decode_d256_3bit_nq2", 1, 8, 4, 2, 555, 256, [3]),
        # The other multiples of 32 to 256, likewise.
        Case("decode_d32_2bit_nq2", 1, 8, 2, 2, 555, 32, [2]),
        Case("decode_d160_int8", 1, 8, 2, 1, 700, 160, []),
        Case("decode_d192_4bit_buffer", 2, 16, 4, 1, 900, 192, [4], buffer=40),
        Case("decode_d224_4bit_nq3", 1, 8, 2, 3, 600, 224, [4]),
        Case("decode_d96_3bit_msb_nq2", 1, 16, 4, 2, 700, 96, [3], order="msb_first"),
        # Int8 caches with a stage-1 scale per token (or per 2, or per 24,
        # which splits a 16-key tile unevenly): a scale per lane key.
        Case("decode_int8_kv_token_d128", 2, 16, 4, 1, 1000, 128, [], block=1, buffer=24),
        Case("decode_int8_kv_block2_nq3_d64", 1, 16, 2, 3, 777, 64, [], block=2),
        Case("decode_int8_kv_block24_d128", 1, 16, 4, 1, 1000, 128, [], block=24),
        # Stage-2 groups of 4 and 2 keys: the constants of each lane's keys'
        # groups.
        Case("decode_group4_msb_d128", 2, 16, 4, 1, 1000, 128, [4], group=4,
             order="msb_first", buffer=24),
        Case("decode_group2_2bit_nq3_d64", 1, 16, 2, 3, 555, 64, [2], group=2),
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
        # The prefill kernel's other ring depths and CTA sizes (tilings set by
        # hand), and key scales per 32-key block (one scale per key in a tile).
        Case("prefill_mma_1stage_n1100_d128", 1, 16, 2, 1100, 1100, 128, [4],
             cpu_reference=False,
             tiling="#qattn.gpu_tiling<warps = 4, splits = 1, kernel = mma>"),
        Case("prefill_mma_8warps_4stages_n700_d64", 2, 8, 2, 700, 700, 64, [4],
             causal=False,
             tiling="#qattn.gpu_tiling<warps = 8, splits = 1, kernel = mma, stages = 4>"),
        Case("prefill_block32_n500_d64", 1, 8, 4, 500, 500, 64, [4], block=32),
        # qattn-tile gives d = 128 prefill the warpgroup kernel (wgmma); the
        # mma.sync kernel at d = 128, and the wgmma one with 1 and 3 ring
        # stages and per-key scales, by hand.
        Case("prefill_mma_n257_noncausal_d128", 2, 4, 4, 257, 257, 128, [2],
             causal=False,
             tiling="#qattn.gpu_tiling<warps = 4, splits = 1, kernel = mma, stages = 2>"),
        Case("prefill_wgmma_1stage_n300_causal_d128", 1, 8, 2, 300, 300, 128, [4],
             tiling="#qattn.gpu_tiling<warps = 4, splits = 1, kernel = wgmma>"),
        Case("prefill_wgmma_block32_3stages_n500_d128", 1, 8, 4, 500, 500, 128, [4],
             block=32,
             tiling="#qattn.gpu_tiling<warps = 4, splits = 1, kernel = wgmma, stages = 3>"),
        Case("prefill_wgmma_4stages_n1100_causal_d128_gqa8", 1, 16, 2, 1100, 1100, 128,
             [4], cpu_reference=False,
             tiling="#qattn.gpu_tiling<warps = 4, splits = 1, kernel = wgmma, stages = 4>"),
        # Several warpgroups per CTA sharing the ring (serial tile loop).
        Case("prefill_wgmma_12warps_n1100_causal_d128_gqa8", 1, 16, 2, 1100, 1100, 128,
             [4], cpu_reference=False,
             tiling="#qattn.gpu_tiling<warps = 12, splits = 1, kernel = wgmma, stages = 3>"),
        Case("prefill_wgmma_8warps_block32_n500_d128", 1, 8, 4, 500, 500, 128, [4],
             block=32, causal=False,
             tiling="#qattn.gpu_tiling<warps = 8, splits = 1, kernel = wgmma, stages = 2>"),
        # P.V on fp8 (pv = e4m3): serial loop at d = 128, overlapped at d = 64.
        Case("prefill_wgmma_e4m3_n257_noncausal_d128", 2, 4, 4, 257, 257, 128, [2],
             causal=False,
             tiling="#qattn.gpu_tiling<warps = 4, splits = 1, kernel = wgmma, stages = 2, pv = e4m3>"),
        Case("prefill_wgmma_e4m3_n1100_causal_d128_gqa8", 1, 16, 2, 1100, 1100, 128,
             [4], cpu_reference=False,
             tiling="#qattn.gpu_tiling<warps = 4, splits = 1, kernel = wgmma, stages = 2, pv = e4m3>"),
        Case("prefill_wgmma_e4m3_4stages_n300_causal_d64", 1, 8, 2, 300, 300, 64, [4],
             tiling="#qattn.gpu_tiling<warps = 4, splits = 1, kernel = wgmma, stages = 4, pv = e4m3>"),
        # A producer warpgroup beside two that compute (producer = warpgroup,
        # setmaxnreg), f16 and fp8 P.V, per-key scales, ragged and causal.
        Case("prefill_ws_n1100_causal_d128_gqa8", 1, 16, 2, 1100, 1100, 128, [4],
             cpu_reference=False,
             tiling="#qattn.gpu_tiling<warps = 8, splits = 1, kernel = wgmma, stages = 4, producer = warpgroup>"),
        Case("prefill_ws_block32_3stages_n500_d128", 1, 8, 4, 500, 500, 128, [4],
             block=32, causal=False,
             tiling="#qattn.gpu_tiling<warps = 8, splits = 1, kernel = wgmma, stages = 3, producer = warpgroup>"),
        Case("prefill_ws_e4m3_n257_noncausal_d128", 2, 4, 4, 257, 257, 128, [2],
             causal=False,
             tiling="#qattn.gpu_tiling<warps = 8, splits = 1, kernel = wgmma, stages = 4, pv = e4m3, producer = warpgroup>"),
        Case("prefill_ws_e4m3_n1100_causal_d128_gqa8", 1, 16, 2, 1100, 1100, 128,
             [4], cpu_reference=False,
             tiling="#qattn.gpu_tiling<warps = 8, splits = 1, kernel = wgmma, stages = 4, pv = e4m3, producer = warpgroup>"),
        # The prefill shape of the design brief: B4 H32 N4096 d128, non-causal.
        Case("prefill_b4_h32_n4096_d128_noncausal", 4, 32, 32, 4096, 4096, 128, [4],
             causal=False, cpu_reference=False),
        Case("prefill_mma_b4_h32_n4096_d128_noncausal", 4, 32, 32, 4096, 4096, 128,
             [4], causal=False, cpu_reference=False,
             tiling="#qattn.gpu_tiling<warps = 4, splits = 1, kernel = mma, stages = 2>"),
    ]
    return cases


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--qattn-compile", default=os.path.join(
        os.path.dirname(__file__), "..", "..", "build", "bin", "qattn-compile"))
    ap.add_argument("--only", default="")
    ap.add_argument("--tile-options", default="", help="more qattn-tile options for the GPU "
                    "modules (qattn-compile --tile-options), e.g. 'tile-layer=none'")
    args = ap.parse_args()
    write_cases(matrix(), args.out, args.qattn_compile, args.only, args.tile_options)


if __name__ == "__main__":
    main()
