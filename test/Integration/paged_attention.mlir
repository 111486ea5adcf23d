// qattn.attention with per-sequence lengths, a paged pool and the int8 tail page, compiled once
// for the CPU (dynamic batch, pool and table sizes, each named by qattn.dims) and run on several
// batches against the NumPy model (test/Integration/Inputs/make_paged.py writes the pages,
// check_paged.py recomputes the output with python/qattn/format.py's paged_kv and
// varlen_attention; see its docstring for the bounds). The pages sit at shuffled physical ids;
// everything the op must never read (unused pages, rows past a sequence's end, buffer rows past
// the fill, table entries past the read ones: -1) holds garbage, NaN scales in one case.
//
// Covered: 4-bit K/V paged with the tail page (P = 64, lengths 1, 15, 16, 17, 1000, 4097: tails
// at fills 1, 15, 16, 17, 40 and 1; then a second batch of 3 from the same artifact), 2-bit msb
// anchor=min causal with 4 queries per sequence (P = 128, lengths 0 .. 1000, rows that see no
// key), int8-only K (channel scales) and V in the contiguous form with lengths and a dynamic
// capacity, GQA 4:1 / 2:1, d = 64 and 128.

// REQUIRES: numpy
// RUN: rm -rf %t && qattn-compile %s -o %t/art
// RUN: %python %S/Inputs/make_paged.py --seed 71 --batch-lens 1,15,16,17,1000,4097 --hq 8 --hkv 2 --nq 1 --d 64 --k block=64,bits=4,group=16 --v block=64,bits=4,group=16 --page 64 --buffer --out %t/a-in
// RUN: qattn-run %t/art --function paged_int4 --input q=%t/a-in/q.npy --input k_codes=%t/a-in/k_codes.npy --input k_scales=%t/a-in/k_scales.npy --input k_group_scales=%t/a-in/k_group_scales.npy --input k_zeros=%t/a-in/k_zeros.npy --input v_codes=%t/a-in/v_codes.npy --input v_scales=%t/a-in/v_scales.npy --input v_group_scales=%t/a-in/v_group_scales.npy --input v_zeros=%t/a-in/v_zeros.npy --input k_buffer=%t/a-in/k_buffer.npy --input k_buffer_scale=%t/a-in/k_buffer_scale.npy --input v_buffer=%t/a-in/v_buffer.npy --input v_buffer_scale=%t/a-in/v_buffer_scale.npy --input kv_lens=%t/a-in/kv_lens.npy --input page_table=%t/a-in/page_table.npy --output-dir %t/a
// RUN: %python %S/Inputs/check_paged.py --case paged_int4 --art %t/art --function paged_int4 --in %t/a-in --out %t/a --k block=64,bits=4,group=16 --v block=64,bits=4,group=16 --max-rel-fro 0.2 --min-sqnr 14 | FileCheck %s --check-prefix=A
// RUN: %python %S/Inputs/make_paged.py --seed 74 --batch-lens 64,65,300 --hq 8 --hkv 2 --nq 1 --d 64 --k block=64,bits=4,group=16 --v block=64,bits=4,group=16 --page 64 --buffer --pages-extra 5 --garbage nan --out %t/a2-in
// RUN: qattn-run %t/art --function paged_int4 --input q=%t/a2-in/q.npy --input k_codes=%t/a2-in/k_codes.npy --input k_scales=%t/a2-in/k_scales.npy --input k_group_scales=%t/a2-in/k_group_scales.npy --input k_zeros=%t/a2-in/k_zeros.npy --input v_codes=%t/a2-in/v_codes.npy --input v_scales=%t/a2-in/v_scales.npy --input v_group_scales=%t/a2-in/v_group_scales.npy --input v_zeros=%t/a2-in/v_zeros.npy --input k_buffer=%t/a2-in/k_buffer.npy --input k_buffer_scale=%t/a2-in/k_buffer_scale.npy --input v_buffer=%t/a2-in/v_buffer.npy --input v_buffer_scale=%t/a2-in/v_buffer_scale.npy --input kv_lens=%t/a2-in/kv_lens.npy --input page_table=%t/a2-in/page_table.npy --output-dir %t/a2
// RUN: %python %S/Inputs/check_paged.py --case paged_int4_b3 --art %t/art --function paged_int4 --in %t/a2-in --out %t/a2 --k block=64,bits=4,group=16 --v block=64,bits=4,group=16 --max-rel-fro 0.2 --min-sqnr 14 | FileCheck %s --check-prefix=A2
// RUN: %python %S/Inputs/make_paged.py --seed 72 --batch-lens 0,1,3,4,5,127,128,129,1000 --hq 4 --hkv 1 --nq 4 --d 64 --k block=64,bits=2,group=16,order=msb,anchor=min --v block=64,bits=2,group=16,order=msb,anchor=min --page 128 --out %t/b-in
// RUN: qattn-run %t/art --function paged_int2_causal --input q=%t/b-in/q.npy --input k_codes=%t/b-in/k_codes.npy --input k_scales=%t/b-in/k_scales.npy --input k_group_scales=%t/b-in/k_group_scales.npy --input k_zeros=%t/b-in/k_zeros.npy --input v_codes=%t/b-in/v_codes.npy --input v_scales=%t/b-in/v_scales.npy --input v_group_scales=%t/b-in/v_group_scales.npy --input v_zeros=%t/b-in/v_zeros.npy --input kv_lens=%t/b-in/kv_lens.npy --input page_table=%t/b-in/page_table.npy --output-dir %t/b
// RUN: %python %S/Inputs/check_paged.py --case paged_int2_causal --art %t/art --function paged_int2_causal --in %t/b-in --out %t/b --k block=64,bits=2,group=16,order=msb,anchor=min --v block=64,bits=2,group=16,order=msb,anchor=min --causal --max-rel-fro 0.6 --min-sqnr 4.5 | FileCheck %s --check-prefix=B
// RUN: %python %S/Inputs/make_paged.py --seed 73 --batch-lens 0,1,15,16,17,300,1000 --hq 4 --hkv 2 --nq 1 --d 128 --k block=32,gran=channel --v block=32 --out %t/c-in
// RUN: qattn-run %t/art --function varlen_int8 --input q=%t/c-in/q.npy --input k_data=%t/c-in/k_data.npy --input k_scales=%t/c-in/k_scales.npy --input v_data=%t/c-in/v_data.npy --input v_scales=%t/c-in/v_scales.npy --input kv_lens=%t/c-in/kv_lens.npy --output-dir %t/c
// RUN: %python %S/Inputs/check_paged.py --case varlen_int8 --art %t/art --function varlen_int8 --in %t/c-in --out %t/c --k block=32,gran=channel --v block=32 --max-rel-fro 0.025 --min-sqnr 32 | FileCheck %s --check-prefix=C

// The same functions through the tile layer: qattn-tile's decode grid (4 key splits, 16-key tiles,
// the combine), software-pipelined 3 deep by qattn-pipeline, then lowered to the CPU; and with 7
// splits and the default 2 stages.
// RUN: qattn-opt %s --qattn-tile --qattn-pipeline=num-stages=3 -o %t/tiled.mlir
// RUN: qattn-compile %t/tiled.mlir -o %t/art-tiled
// RUN: qattn-run %t/art-tiled --function paged_int4 --input q=%t/a-in/q.npy --input k_codes=%t/a-in/k_codes.npy --input k_scales=%t/a-in/k_scales.npy --input k_group_scales=%t/a-in/k_group_scales.npy --input k_zeros=%t/a-in/k_zeros.npy --input v_codes=%t/a-in/v_codes.npy --input v_scales=%t/a-in/v_scales.npy --input v_group_scales=%t/a-in/v_group_scales.npy --input v_zeros=%t/a-in/v_zeros.npy --input k_buffer=%t/a-in/k_buffer.npy --input k_buffer_scale=%t/a-in/k_buffer_scale.npy --input v_buffer=%t/a-in/v_buffer.npy --input v_buffer_scale=%t/a-in/v_buffer_scale.npy --input kv_lens=%t/a-in/kv_lens.npy --input page_table=%t/a-in/page_table.npy --output-dir %t/ta
// RUN: %python %S/Inputs/check_paged.py --case tiled_int4 --art %t/art-tiled --function paged_int4 --in %t/a-in --out %t/ta --k block=64,bits=4,group=16 --v block=64,bits=4,group=16 --max-rel-fro 0.2 --min-sqnr 14 | FileCheck %s --check-prefix=TA
// RUN: qattn-run %t/art-tiled --function paged_int2_causal --input q=%t/b-in/q.npy --input k_codes=%t/b-in/k_codes.npy --input k_scales=%t/b-in/k_scales.npy --input k_group_scales=%t/b-in/k_group_scales.npy --input k_zeros=%t/b-in/k_zeros.npy --input v_codes=%t/b-in/v_codes.npy --input v_scales=%t/b-in/v_scales.npy --input v_group_scales=%t/b-in/v_group_scales.npy --input v_zeros=%t/b-in/v_zeros.npy --input kv_lens=%t/b-in/kv_lens.npy --input page_table=%t/b-in/page_table.npy --output-dir %t/tb
// RUN: %python %S/Inputs/check_paged.py --case tiled_int2_causal --art %t/art-tiled --function paged_int2_causal --in %t/b-in --out %t/tb --k block=64,bits=2,group=16,order=msb,anchor=min --v block=64,bits=2,group=16,order=msb,anchor=min --causal --max-rel-fro 0.6 --min-sqnr 4.5 | FileCheck %s --check-prefix=TB
// RUN: qattn-run %t/art-tiled --function varlen_int8 --input q=%t/c-in/q.npy --input k_data=%t/c-in/k_data.npy --input k_scales=%t/c-in/k_scales.npy --input v_data=%t/c-in/v_data.npy --input v_scales=%t/c-in/v_scales.npy --input kv_lens=%t/c-in/kv_lens.npy --output-dir %t/tc
// RUN: %python %S/Inputs/check_paged.py --case tiled_int8 --art %t/art-tiled --function varlen_int8 --in %t/c-in --out %t/tc --k block=32,gran=channel --v block=32 --max-rel-fro 0.025 --min-sqnr 32 | FileCheck %s --check-prefix=TC
// RUN: qattn-opt %s --qattn-tile=splits=7 --qattn-pipeline -o %t/tiled7.mlir
// RUN: qattn-compile %t/tiled7.mlir -o %t/art-tiled7
// RUN: qattn-run %t/art-tiled7 --function paged_int4 --input q=%t/a2-in/q.npy --input k_codes=%t/a2-in/k_codes.npy --input k_scales=%t/a2-in/k_scales.npy --input k_group_scales=%t/a2-in/k_group_scales.npy --input k_zeros=%t/a2-in/k_zeros.npy --input v_codes=%t/a2-in/v_codes.npy --input v_scales=%t/a2-in/v_scales.npy --input v_group_scales=%t/a2-in/v_group_scales.npy --input v_zeros=%t/a2-in/v_zeros.npy --input k_buffer=%t/a2-in/k_buffer.npy --input k_buffer_scale=%t/a2-in/k_buffer_scale.npy --input v_buffer=%t/a2-in/v_buffer.npy --input v_buffer_scale=%t/a2-in/v_buffer_scale.npy --input kv_lens=%t/a2-in/kv_lens.npy --input page_table=%t/a2-in/page_table.npy --output-dir %t/ta2
// RUN: %python %S/Inputs/check_paged.py --case tiled7_int4_b3 --art %t/art-tiled7 --function paged_int4 --in %t/a2-in --out %t/ta2 --k block=64,bits=4,group=16 --v block=64,bits=4,group=16 --max-rel-fro 0.2 --min-sqnr 14 | FileCheck %s --check-prefix=TA2

// A: paged_int4: {{.*}} OK
// A: paged_int4: all checks passed
// A2: paged_int4_b3: all checks passed
// B: paged_int2_causal: all checks passed
// C: varlen_int8: all checks passed
// TA: tiled_int4: all checks passed
// TB: tiled_int2_causal: rows that see no key are 0 OK (32 rows)
// TB: tiled_int2_causal: all checks passed
// TC: tiled_int8: all checks passed
// TA2: tiled7_int4_b3: all checks passed

func.func @paged_int4(
    %q: tensor<?x8x1x64xf32> {qattn.name = "q", qattn.dims = ["B", "", "", ""]},
    %kp: tensor<?x64x64xi8> {qattn.name = "k_codes", qattn.dims = ["NP", "", ""]},
    %ks: tensor<?x2x1xf32> {qattn.name = "k_scales", qattn.dims = ["NP", "", ""]},
    %ks2: tensor<?x2x4x64xi8> {qattn.name = "k_group_scales", qattn.dims = ["NP", "", "", ""]},
    %kz2: tensor<?x2x4x64xi8> {qattn.name = "k_zeros", qattn.dims = ["NP", "", "", ""]},
    %vp: tensor<?x64x64xi8> {qattn.name = "v_codes", qattn.dims = ["NP", "", ""]},
    %vs: tensor<?x2x1xf32> {qattn.name = "v_scales", qattn.dims = ["NP", "", ""]},
    %vs2: tensor<?x2x4x64xi8> {qattn.name = "v_group_scales", qattn.dims = ["NP", "", "", ""]},
    %vz2: tensor<?x2x4x64xi8> {qattn.name = "v_zeros", qattn.dims = ["NP", "", "", ""]},
    %kb: tensor<?x2x64x64xi8> {qattn.name = "k_buffer", qattn.dims = ["B", "", "", ""]},
    %kbs: tensor<?x2xf32> {qattn.name = "k_buffer_scale", qattn.dims = ["B", ""]},
    %vb: tensor<?x2x64x64xi8> {qattn.name = "v_buffer", qattn.dims = ["B", "", "", ""]},
    %vbs: tensor<?x2xf32> {qattn.name = "v_buffer_scale", qattn.dims = ["B", ""]},
    %lens: tensor<?xi32> {qattn.name = "kv_lens", qattn.dims = ["B"]},
    %table: tensor<?x?xi32> {qattn.name = "page_table", qattn.dims = ["B", "MP"]})
    -> (tensor<?x8x1x64xf32> {qattn.name = "o", qattn.dims = ["B", "", "", ""]}) {
  %o = qattn.attention %q keys(%kp, %ks, %ks2, %kz2) values(%vp, %vs, %vs2, %vz2) buffers(%kb, %kbs, %vb, %vbs) lengths(%lens) pages(%table)
      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4], group = 16>, v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [4], group = 16>}
      : (tensor<?x8x1x64xf32>, tensor<?x64x64xi8>, tensor<?x2x1xf32>, tensor<?x2x4x64xi8>, tensor<?x2x4x64xi8>, tensor<?x64x64xi8>, tensor<?x2x1xf32>, tensor<?x2x4x64xi8>, tensor<?x2x4x64xi8>, tensor<?x2x64x64xi8>, tensor<?x2xf32>, tensor<?x2x64x64xi8>, tensor<?x2xf32>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x8x1x64xf32>
  return %o : tensor<?x8x1x64xf32>
}

func.func @paged_int2_causal(
    %q: tensor<?x4x4x64xf32> {qattn.name = "q", qattn.dims = ["B", "", "", ""]},
    %kp: tensor<?x128x16xi8> {qattn.name = "k_codes", qattn.dims = ["NP", "", ""]},
    %ks: tensor<?x1x2xf32> {qattn.name = "k_scales", qattn.dims = ["NP", "", ""]},
    %ks2: tensor<?x1x8x64xi8> {qattn.name = "k_group_scales", qattn.dims = ["NP", "", "", ""]},
    %kz2: tensor<?x1x8x64xi8> {qattn.name = "k_zeros", qattn.dims = ["NP", "", "", ""]},
    %vp: tensor<?x128x16xi8> {qattn.name = "v_codes", qattn.dims = ["NP", "", ""]},
    %vs: tensor<?x1x2xf32> {qattn.name = "v_scales", qattn.dims = ["NP", "", ""]},
    %vs2: tensor<?x1x8x64xi8> {qattn.name = "v_group_scales", qattn.dims = ["NP", "", "", ""]},
    %vz2: tensor<?x1x8x64xi8> {qattn.name = "v_zeros", qattn.dims = ["NP", "", "", ""]},
    %lens: tensor<?xi32> {qattn.name = "kv_lens", qattn.dims = ["B"]},
    %table: tensor<?x?xi32> {qattn.name = "page_table", qattn.dims = ["B", "MP"]})
    -> (tensor<?x4x4x64xf32> {qattn.name = "o", qattn.dims = ["B", "", "", ""]}) {
  %o = qattn.attention %q keys(%kp, %ks, %ks2, %kz2) values(%vp, %vs, %vs2, %vz2) lengths(%lens) pages(%table)
      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [2], group = 16, order = msb_first, anchor = min>, v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [2], group = 16, order = msb_first, anchor = min>, causal}
      : (tensor<?x4x4x64xf32>, tensor<?x128x16xi8>, tensor<?x1x2xf32>, tensor<?x1x8x64xi8>, tensor<?x1x8x64xi8>, tensor<?x128x16xi8>, tensor<?x1x2xf32>, tensor<?x1x8x64xi8>, tensor<?x1x8x64xi8>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x4x4x64xf32>
  return %o : tensor<?x4x4x64xf32>
}

func.func @varlen_int8(
    %q: tensor<?x4x1x128xf32> {qattn.name = "q", qattn.dims = ["B", "", "", ""]},
    %k: tensor<?x2x?x128xi8> {qattn.name = "k_data", qattn.dims = ["B", "", "N", ""]},
    %ks: tensor<?x2x?x128xf32> {qattn.name = "k_scales", qattn.dims = ["B", "", "NB", ""]},
    %v: tensor<?x2x?x128xi8> {qattn.name = "v_data", qattn.dims = ["B", "", "N", ""]},
    %vs: tensor<?x2x?xf32> {qattn.name = "v_scales", qattn.dims = ["B", "", "NB"]},
    %lens: tensor<?xi32> {qattn.name = "kv_lens", qattn.dims = ["B"]})
    -> (tensor<?x4x1x128xf32> {qattn.name = "o", qattn.dims = ["B", "", "", ""]}) {
  %o = qattn.attention %q keys(%k, %ks) values(%v, %vs) lengths(%lens)
      {k_stage1 = #qattn.stage1<block = 32, granularity = channel>, v_stage1 = #qattn.stage1<block = 32>}
      : (tensor<?x4x1x128xf32>, tensor<?x2x?x128xi8>, tensor<?x2x?x128xf32>, tensor<?x2x?x128xi8>, tensor<?x2x?xf32>, tensor<?xi32>) -> tensor<?x4x1x128xf32>
  return %o : tensor<?x4x1x128xf32>
}
