// Balanced key chunks (qattn-tile balance-splits=true): the batch's keys
// cut into at most B x S chunks of one size, one a grid point, a long
// sequence taking many of the grid's points and a short one few
// (qattn.key_chunk), and the combine finding each sequence's chunks from the
// same lengths. The three serving functions of paged_attention.mlir (4-bit
// pages with the int8 tail, 2-bit msb causal with 4 queries a sequence,
// int8 contiguous with lengths), tiled that way, pipelined 3 deep, lowered
// to the CPU and run against the NumPy model (check_paged.py) on batches
// whose lengths are far apart: one of 40000 keys beside sequences of 0 to
// 97 (640-page table; most of the grid's slots go to the long one), the
// 40 ragged lengths of tile_splits.mlir, a causal batch of one 5000-key
// sequence and eight short ones (rows that see no key), an int8 one of 3000
// and seven short. With 2 splits a sequence (K = 2B chunks) the even size
// C0 = W / K makes more than K chunks on batches of one long sequence and
// seven short (each short one a chunk of its own), and the chunks take the
// size C1 = W / (K - B) instead: 4-bit and int8 again. The same function for target cuda keeps the B x S grid
// and passes the combine the lengths (its plan).

// REQUIRES: numpy
// RUN: rm -rf %t && mkdir -p %t
// RUN: qattn-opt %S/paged_attention.mlir --qattn-tile=balance-splits=true --qattn-pipeline=num-stages=3 -o %t/tiled.mlir
// RUN: FileCheck %s --check-prefix=IR --input-file=%t/tiled.mlir
// RUN: qattn-compile %t/tiled.mlir -o %t/art
// RUN: %python %S/Inputs/make_paged.py --seed 91 --batch-lens 1,15,16,17,1000,4097 --hq 8 --hkv 2 --nq 1 --d 64 --k block=64,bits=4,group=16 --v block=64,bits=4,group=16 --page 64 --buffer --out %t/a-in
// RUN: qattn-run %t/art --function paged_int4 --input q=%t/a-in/q.npy --input k_codes=%t/a-in/k_codes.npy --input k_scales=%t/a-in/k_scales.npy --input k_group_scales=%t/a-in/k_group_scales.npy --input k_zeros=%t/a-in/k_zeros.npy --input v_codes=%t/a-in/v_codes.npy --input v_scales=%t/a-in/v_scales.npy --input v_group_scales=%t/a-in/v_group_scales.npy --input v_zeros=%t/a-in/v_zeros.npy --input k_buffer=%t/a-in/k_buffer.npy --input k_buffer_scale=%t/a-in/k_buffer_scale.npy --input v_buffer=%t/a-in/v_buffer.npy --input v_buffer_scale=%t/a-in/v_buffer_scale.npy --input kv_lens=%t/a-in/kv_lens.npy --input page_table=%t/a-in/page_table.npy --output-dir %t/a
// RUN: %python %S/Inputs/check_paged.py --case balanced_a --art %t/art --function paged_int4 --in %t/a-in --out %t/a --k block=64,bits=4,group=16 --v block=64,bits=4,group=16 --max-rel-fro 0.2 --min-sqnr 14 | FileCheck %s --check-prefix=RUN-A
// RUN: %python %S/Inputs/make_paged.py --seed 92 --batch-lens 40000,1,2,33,0,97,64,65 --hq 8 --hkv 2 --nq 1 --d 64 --k block=64,bits=4,group=16 --v block=64,bits=4,group=16 --page 64 --buffer --max-pages 640 --garbage nan --out %t/skew-in
// RUN: qattn-run %t/art --function paged_int4 --input q=%t/skew-in/q.npy --input k_codes=%t/skew-in/k_codes.npy --input k_scales=%t/skew-in/k_scales.npy --input k_group_scales=%t/skew-in/k_group_scales.npy --input k_zeros=%t/skew-in/k_zeros.npy --input v_codes=%t/skew-in/v_codes.npy --input v_scales=%t/skew-in/v_scales.npy --input v_group_scales=%t/skew-in/v_group_scales.npy --input v_zeros=%t/skew-in/v_zeros.npy --input k_buffer=%t/skew-in/k_buffer.npy --input k_buffer_scale=%t/skew-in/k_buffer_scale.npy --input v_buffer=%t/skew-in/v_buffer.npy --input v_buffer_scale=%t/skew-in/v_buffer_scale.npy --input kv_lens=%t/skew-in/kv_lens.npy --input page_table=%t/skew-in/page_table.npy --output-dir %t/skew
// RUN: %python %S/Inputs/check_paged.py --case balanced_skew --art %t/art --function paged_int4 --in %t/skew-in --out %t/skew --k block=64,bits=4,group=16 --v block=64,bits=4,group=16 --max-rel-fro 0.5 --min-sqnr 6 | FileCheck %s --check-prefix=RUN-SKEW
// RUN: %python %S/Inputs/make_paged.py --seed 93 --batch-lens 0,1,15,16,17,63,64,65,127,128,129,300,1000,4097,2,3,5,7,11,13,31,32,33,95,96,97,191,192,193,255,256,257,511,512,513,700,800,900,1500,2048 --hq 8 --hkv 2 --nq 1 --d 64 --k block=64,bits=4,group=16 --v block=64,bits=4,group=16 --page 64 --buffer --max-pages 64 --garbage nan --out %t/b40-in
// RUN: qattn-run %t/art --function paged_int4 --input q=%t/b40-in/q.npy --input k_codes=%t/b40-in/k_codes.npy --input k_scales=%t/b40-in/k_scales.npy --input k_group_scales=%t/b40-in/k_group_scales.npy --input k_zeros=%t/b40-in/k_zeros.npy --input v_codes=%t/b40-in/v_codes.npy --input v_scales=%t/b40-in/v_scales.npy --input v_group_scales=%t/b40-in/v_group_scales.npy --input v_zeros=%t/b40-in/v_zeros.npy --input k_buffer=%t/b40-in/k_buffer.npy --input k_buffer_scale=%t/b40-in/k_buffer_scale.npy --input v_buffer=%t/b40-in/v_buffer.npy --input v_buffer_scale=%t/b40-in/v_buffer_scale.npy --input kv_lens=%t/b40-in/kv_lens.npy --input page_table=%t/b40-in/page_table.npy --output-dir %t/b40
// RUN: %python %S/Inputs/check_paged.py --case balanced_b40 --art %t/art --function paged_int4 --in %t/b40-in --out %t/b40 --k block=64,bits=4,group=16 --v block=64,bits=4,group=16 --max-rel-fro 0.2 --min-sqnr 14 | FileCheck %s --check-prefix=RUN-B40
// RUN: %python %S/Inputs/make_paged.py --seed 94 --batch-lens 5000,0,1,3,4,5,127,128,129 --hq 4 --hkv 1 --nq 4 --d 64 --k block=64,bits=2,group=16,order=msb,anchor=min --v block=64,bits=2,group=16,order=msb,anchor=min --page 128 --out %t/causal-in
// RUN: qattn-run %t/art --function paged_int2_causal --input q=%t/causal-in/q.npy --input k_codes=%t/causal-in/k_codes.npy --input k_scales=%t/causal-in/k_scales.npy --input k_group_scales=%t/causal-in/k_group_scales.npy --input k_zeros=%t/causal-in/k_zeros.npy --input v_codes=%t/causal-in/v_codes.npy --input v_scales=%t/causal-in/v_scales.npy --input v_group_scales=%t/causal-in/v_group_scales.npy --input v_zeros=%t/causal-in/v_zeros.npy --input kv_lens=%t/causal-in/kv_lens.npy --input page_table=%t/causal-in/page_table.npy --output-dir %t/causal
// RUN: %python %S/Inputs/check_paged.py --case balanced_causal --art %t/art --function paged_int2_causal --in %t/causal-in --out %t/causal --k block=64,bits=2,group=16,order=msb,anchor=min --v block=64,bits=2,group=16,order=msb,anchor=min --causal --max-rel-fro 0.6 --min-sqnr 4.5 | FileCheck %s --check-prefix=RUN-CAUSAL
// RUN: %python %S/Inputs/make_paged.py --seed 95 --batch-lens 3000,0,1,15,16,17,300,1000 --hq 4 --hkv 2 --nq 1 --d 128 --k block=32,gran=channel --v block=32 --out %t/int8-in
// RUN: qattn-run %t/art --function varlen_int8 --input q=%t/int8-in/q.npy --input k_data=%t/int8-in/k_data.npy --input k_scales=%t/int8-in/k_scales.npy --input v_data=%t/int8-in/v_data.npy --input v_scales=%t/int8-in/v_scales.npy --input kv_lens=%t/int8-in/kv_lens.npy --output-dir %t/int8
// RUN: %python %S/Inputs/check_paged.py --case balanced_int8 --art %t/art --function varlen_int8 --in %t/int8-in --out %t/int8 --k block=32,gran=channel --v block=32 --max-rel-fro 0.025 --min-sqnr 32 | FileCheck %s --check-prefix=RUN-INT8
// RUN: qattn-opt %S/paged_attention.mlir --qattn-tile='balance-splits=true splits=2' --qattn-pipeline -o %t/tiled2.mlir
// RUN: qattn-compile %t/tiled2.mlir -o %t/art2
// RUN: %python %S/Inputs/make_paged.py --seed 96 --batch-lens 1000,1,2,3,4,5,6,7 --hq 8 --hkv 2 --nq 1 --d 64 --k block=64,bits=4,group=16 --v block=64,bits=4,group=16 --page 64 --buffer --out %t/few4-in
// RUN: qattn-run %t/art2 --function paged_int4 --input q=%t/few4-in/q.npy --input k_codes=%t/few4-in/k_codes.npy --input k_scales=%t/few4-in/k_scales.npy --input k_group_scales=%t/few4-in/k_group_scales.npy --input k_zeros=%t/few4-in/k_zeros.npy --input v_codes=%t/few4-in/v_codes.npy --input v_scales=%t/few4-in/v_scales.npy --input v_group_scales=%t/few4-in/v_group_scales.npy --input v_zeros=%t/few4-in/v_zeros.npy --input k_buffer=%t/few4-in/k_buffer.npy --input k_buffer_scale=%t/few4-in/k_buffer_scale.npy --input v_buffer=%t/few4-in/v_buffer.npy --input v_buffer_scale=%t/few4-in/v_buffer_scale.npy --input kv_lens=%t/few4-in/kv_lens.npy --input page_table=%t/few4-in/page_table.npy --output-dir %t/few4
// RUN: %python %S/Inputs/check_paged.py --case balanced_few4 --art %t/art2 --function paged_int4 --in %t/few4-in --out %t/few4 --k block=64,bits=4,group=16 --v block=64,bits=4,group=16 --max-rel-fro 0.2 --min-sqnr 14 | FileCheck %s --check-prefix=RUN-FEW4
// RUN: %python %S/Inputs/make_paged.py --seed 97 --batch-lens 3000,0,1,15,16,17,300,1000 --hq 4 --hkv 2 --nq 1 --d 128 --k block=32,gran=channel --v block=32 --out %t/few8-in
// RUN: qattn-run %t/art2 --function varlen_int8 --input q=%t/few8-in/q.npy --input k_data=%t/few8-in/k_data.npy --input k_scales=%t/few8-in/k_scales.npy --input v_data=%t/few8-in/v_data.npy --input v_scales=%t/few8-in/v_scales.npy --input kv_lens=%t/few8-in/kv_lens.npy --output-dir %t/few8
// RUN: %python %S/Inputs/check_paged.py --case balanced_few8 --art %t/art2 --function varlen_int8 --in %t/few8-in --out %t/few8 --k block=32,gran=channel --v block=32 --max-rel-fro 0.025 --min-sqnr 32 | FileCheck %s --check-prefix=RUN-FEW8
// RUN: qattn-compile %S/paged_attention.mlir -o %t/cuda --target=cuda --no-cubin --tile-options=balance-splits=true
// RUN: qattn-run %t/cuda --function paged_int4 --plan-only --dim B=3 --dim NP=100 --dim MP=64 | FileCheck %s --check-prefix=PLAN

// IR-COUNT-3: qattn.key_chunk
// IR-NOT: qattn.key_chunk
// RUN-A: balanced_a: all checks passed
// RUN-SKEW: balanced_skew: all checks passed
// RUN-B40: balanced_b40: all checks passed
// RUN-CAUSAL: balanced_causal: all checks passed
// RUN-INT8: balanced_int8: all checks passed
// RUN-FEW4: balanced_few4: all checks passed
// RUN-FEW8: balanced_few8: all checks passed
// PLAN: size S0 = max(min(div(1584, B*2), {{.*}}), 1) = 33
// PLAN: launch paged_int4_decode_tiles grid [66, 1, 3]
// PLAN: launch paged_int4_combine_tiles {{.*}}
// PLAN-NEXT: params {{.*}}, kv_lens, B=3
