// More decode formats through both lowerings of the serving form, the executable specification
// (qattn-lower-reference of qattn.attention) and the tile layer (qattn-tile + qattn-pipeline, then
// the tile ops' reference lowering), each against the NumPy model (see paged_attention.mlir for
// the inputs and the checks): per-head mixed widths (K 4/2 msb, V 2/4) with stage-2 groups of 8
// (two groups per 16-key tile), f16 queries and output, 32-token pages with the tail page; 3-bit K
// with channel stage-1 scales in f16 and groups of 32 (longer than a tile), 4-bit min-anchored V,
// BPQ int8 queries, 16 causal queries per sequence (speculative decode: two 16-row tiles of the
// 32 (query, head) pairs), the contiguous form with a dynamic capacity and a 64-token buffer;
// the first function with the SAS softmax (one split, a max pass and a term pass); and int8 K/V
// with a 24-token buffer, which is not whole 16-key tiles; int8 K/V with a scale per token (K) or
// per 4 tokens (V), and per 12 (K) and 24 (V) tokens in pages of 48, with a scale each or one
// per channel.

// REQUIRES: numpy
// RUN: rm -rf %t && qattn-compile %s -o %t/art
// RUN: qattn-opt %s --qattn-tile=splits=3 --qattn-pipeline -o %t/tiled.mlir
// RUN: qattn-compile %t/tiled.mlir -o %t/art-tiled
// RUN: qattn-opt %s --qattn-tile=splits=5 --qattn-pipeline=num-stages=4 -o %t/tiled4.mlir
// RUN: qattn-compile %t/tiled4.mlir -o %t/art-tiled4
// RUN: %python %S/Inputs/make_paged.py --seed 81 --batch-lens 1,31,32,33,500 --hq 8 --hkv 2 --nq 1 --d 64 --q-dtype f16 --k block=32,bits=4-2,group=8,order=msb --v block=32,bits=2-4,group=8 --page 32 --buffer --out %t/d-in
// RUN: qattn-run %t/art --function mixed_g8_paged --input q=%t/d-in/q.npy --input k_codes=%t/d-in/k_codes.npy --input k_scales=%t/d-in/k_scales.npy --input k_group_scales=%t/d-in/k_group_scales.npy --input k_zeros=%t/d-in/k_zeros.npy --input v_codes=%t/d-in/v_codes.npy --input v_scales=%t/d-in/v_scales.npy --input v_group_scales=%t/d-in/v_group_scales.npy --input v_zeros=%t/d-in/v_zeros.npy --input k_buffer=%t/d-in/k_buffer.npy --input k_buffer_scale=%t/d-in/k_buffer_scale.npy --input v_buffer=%t/d-in/v_buffer.npy --input v_buffer_scale=%t/d-in/v_buffer_scale.npy --input kv_lens=%t/d-in/kv_lens.npy --input page_table=%t/d-in/page_table.npy --output-dir %t/d
// RUN: %python %S/Inputs/check_paged.py --case mixed --art %t/art --function mixed_g8_paged --in %t/d-in --out %t/d --k block=32,bits=4-2,group=8,order=msb --v block=32,bits=2-4,group=8 --max-rel-fro 0.6 --min-sqnr 4 | FileCheck %s --check-prefix=D
// RUN: qattn-run %t/art-tiled --function mixed_g8_paged --input q=%t/d-in/q.npy --input k_codes=%t/d-in/k_codes.npy --input k_scales=%t/d-in/k_scales.npy --input k_group_scales=%t/d-in/k_group_scales.npy --input k_zeros=%t/d-in/k_zeros.npy --input v_codes=%t/d-in/v_codes.npy --input v_scales=%t/d-in/v_scales.npy --input v_group_scales=%t/d-in/v_group_scales.npy --input v_zeros=%t/d-in/v_zeros.npy --input k_buffer=%t/d-in/k_buffer.npy --input k_buffer_scale=%t/d-in/k_buffer_scale.npy --input v_buffer=%t/d-in/v_buffer.npy --input v_buffer_scale=%t/d-in/v_buffer_scale.npy --input kv_lens=%t/d-in/kv_lens.npy --input page_table=%t/d-in/page_table.npy --output-dir %t/td
// RUN: %python %S/Inputs/check_paged.py --case tiled_mixed --art %t/art-tiled --function mixed_g8_paged --in %t/d-in --out %t/td --k block=32,bits=4-2,group=8,order=msb --v block=32,bits=2-4,group=8 --max-rel-fro 0.6 --min-sqnr 4 | FileCheck %s --check-prefix=D
// RUN: qattn-run %t/art-tiled4 --function mixed_g8_paged --input q=%t/d-in/q.npy --input k_codes=%t/d-in/k_codes.npy --input k_scales=%t/d-in/k_scales.npy --input k_group_scales=%t/d-in/k_group_scales.npy --input k_zeros=%t/d-in/k_zeros.npy --input v_codes=%t/d-in/v_codes.npy --input v_scales=%t/d-in/v_scales.npy --input v_group_scales=%t/d-in/v_group_scales.npy --input v_zeros=%t/d-in/v_zeros.npy --input k_buffer=%t/d-in/k_buffer.npy --input k_buffer_scale=%t/d-in/k_buffer_scale.npy --input v_buffer=%t/d-in/v_buffer.npy --input v_buffer_scale=%t/d-in/v_buffer_scale.npy --input kv_lens=%t/d-in/kv_lens.npy --input page_table=%t/d-in/page_table.npy --output-dir %t/t4d
// RUN: %python %S/Inputs/check_paged.py --case tiled4_mixed --art %t/art-tiled4 --function mixed_g8_paged --in %t/d-in --out %t/t4d --k block=32,bits=4-2,group=8,order=msb --v block=32,bits=2-4,group=8 --max-rel-fro 0.6 --min-sqnr 4 | FileCheck %s --check-prefix=D
// RUN: qattn-run %t/art --function mixed_g8_paged_sas --input q=%t/d-in/q.npy --input k_codes=%t/d-in/k_codes.npy --input k_scales=%t/d-in/k_scales.npy --input k_group_scales=%t/d-in/k_group_scales.npy --input k_zeros=%t/d-in/k_zeros.npy --input v_codes=%t/d-in/v_codes.npy --input v_scales=%t/d-in/v_scales.npy --input v_group_scales=%t/d-in/v_group_scales.npy --input v_zeros=%t/d-in/v_zeros.npy --input k_buffer=%t/d-in/k_buffer.npy --input k_buffer_scale=%t/d-in/k_buffer_scale.npy --input v_buffer=%t/d-in/v_buffer.npy --input v_buffer_scale=%t/d-in/v_buffer_scale.npy --input kv_lens=%t/d-in/kv_lens.npy --input page_table=%t/d-in/page_table.npy --output-dir %t/ds
// RUN: %python %S/Inputs/check_paged.py --case sas --art %t/art --function mixed_g8_paged_sas --in %t/d-in --out %t/ds --k block=32,bits=4-2,group=8,order=msb --v block=32,bits=2-4,group=8 --softmax sas:-6.0:2 --max-rel-fro 0.6 --min-sqnr 4 | FileCheck %s --check-prefix=D
// RUN: qattn-run %t/art-tiled --function mixed_g8_paged_sas --input q=%t/d-in/q.npy --input k_codes=%t/d-in/k_codes.npy --input k_scales=%t/d-in/k_scales.npy --input k_group_scales=%t/d-in/k_group_scales.npy --input k_zeros=%t/d-in/k_zeros.npy --input v_codes=%t/d-in/v_codes.npy --input v_scales=%t/d-in/v_scales.npy --input v_group_scales=%t/d-in/v_group_scales.npy --input v_zeros=%t/d-in/v_zeros.npy --input k_buffer=%t/d-in/k_buffer.npy --input k_buffer_scale=%t/d-in/k_buffer_scale.npy --input v_buffer=%t/d-in/v_buffer.npy --input v_buffer_scale=%t/d-in/v_buffer_scale.npy --input kv_lens=%t/d-in/kv_lens.npy --input page_table=%t/d-in/page_table.npy --output-dir %t/tds
// RUN: %python %S/Inputs/check_paged.py --case tiled_sas --art %t/art-tiled --function mixed_g8_paged_sas --in %t/d-in --out %t/tds --k block=32,bits=4-2,group=8,order=msb --v block=32,bits=2-4,group=8 --softmax sas:-6.0:2 --max-rel-fro 0.6 --min-sqnr 4 | FileCheck %s --check-prefix=D
// RUN: qattn-run %t/art-tiled4 --function mixed_g8_paged_sas --input q=%t/d-in/q.npy --input k_codes=%t/d-in/k_codes.npy --input k_scales=%t/d-in/k_scales.npy --input k_group_scales=%t/d-in/k_group_scales.npy --input k_zeros=%t/d-in/k_zeros.npy --input v_codes=%t/d-in/v_codes.npy --input v_scales=%t/d-in/v_scales.npy --input v_group_scales=%t/d-in/v_group_scales.npy --input v_zeros=%t/d-in/v_zeros.npy --input k_buffer=%t/d-in/k_buffer.npy --input k_buffer_scale=%t/d-in/k_buffer_scale.npy --input v_buffer=%t/d-in/v_buffer.npy --input v_buffer_scale=%t/d-in/v_buffer_scale.npy --input kv_lens=%t/d-in/kv_lens.npy --input page_table=%t/d-in/page_table.npy --output-dir %t/t4ds
// RUN: %python %S/Inputs/check_paged.py --case tiled4_sas --art %t/art-tiled4 --function mixed_g8_paged_sas --in %t/d-in --out %t/t4ds --k block=32,bits=4-2,group=8,order=msb --v block=32,bits=2-4,group=8 --softmax sas:-6.0:2 --max-rel-fro 0.6 --min-sqnr 4 | FileCheck %s --check-prefix=D
// RUN: %python %S/Inputs/make_paged.py --seed 82 --batch-lens 0,5,16,17,64,100,700 --hq 4 --hkv 2 --nq 16 --d 128 --q block=16 --k block=64,scale=f16,gran=channel,bits=3,group=32 --v block=64,bits=4,group=32,anchor=min --page 0 --buffer --buffer-size 64 --out %t/e-in
// RUN: qattn-run %t/art --function spec16_int8q_varlen --input q=%t/e-in/q.npy --input q_scales=%t/e-in/q_scales.npy --input k_codes=%t/e-in/k_codes.npy --input k_scales=%t/e-in/k_scales.npy --input k_group_scales=%t/e-in/k_group_scales.npy --input k_zeros=%t/e-in/k_zeros.npy --input v_codes=%t/e-in/v_codes.npy --input v_scales=%t/e-in/v_scales.npy --input v_group_scales=%t/e-in/v_group_scales.npy --input v_zeros=%t/e-in/v_zeros.npy --input k_buffer=%t/e-in/k_buffer.npy --input k_buffer_scale=%t/e-in/k_buffer_scale.npy --input v_buffer=%t/e-in/v_buffer.npy --input v_buffer_scale=%t/e-in/v_buffer_scale.npy --input kv_lens=%t/e-in/kv_lens.npy --output-dir %t/e
// RUN: %python %S/Inputs/check_paged.py --case spec16 --art %t/art --function spec16_int8q_varlen --in %t/e-in --out %t/e --q block=16 --k block=64,scale=f16,gran=channel,bits=3,group=32 --v block=64,bits=4,group=32,anchor=min --causal --max-rel-fro 0.5 --min-sqnr 6 | FileCheck %s --check-prefix=E
// RUN: qattn-run %t/art-tiled --function spec16_int8q_varlen --input q=%t/e-in/q.npy --input q_scales=%t/e-in/q_scales.npy --input k_codes=%t/e-in/k_codes.npy --input k_scales=%t/e-in/k_scales.npy --input k_group_scales=%t/e-in/k_group_scales.npy --input k_zeros=%t/e-in/k_zeros.npy --input v_codes=%t/e-in/v_codes.npy --input v_scales=%t/e-in/v_scales.npy --input v_group_scales=%t/e-in/v_group_scales.npy --input v_zeros=%t/e-in/v_zeros.npy --input k_buffer=%t/e-in/k_buffer.npy --input k_buffer_scale=%t/e-in/k_buffer_scale.npy --input v_buffer=%t/e-in/v_buffer.npy --input v_buffer_scale=%t/e-in/v_buffer_scale.npy --input kv_lens=%t/e-in/kv_lens.npy --output-dir %t/te
// RUN: %python %S/Inputs/check_paged.py --case tiled_spec16 --art %t/art-tiled --function spec16_int8q_varlen --in %t/e-in --out %t/te --q block=16 --k block=64,scale=f16,gran=channel,bits=3,group=32 --v block=64,bits=4,group=32,anchor=min --causal --max-rel-fro 0.5 --min-sqnr 6 | FileCheck %s --check-prefix=E
// RUN: qattn-run %t/art-tiled4 --function spec16_int8q_varlen --input q=%t/e-in/q.npy --input q_scales=%t/e-in/q_scales.npy --input k_codes=%t/e-in/k_codes.npy --input k_scales=%t/e-in/k_scales.npy --input k_group_scales=%t/e-in/k_group_scales.npy --input k_zeros=%t/e-in/k_zeros.npy --input v_codes=%t/e-in/v_codes.npy --input v_scales=%t/e-in/v_scales.npy --input v_group_scales=%t/e-in/v_group_scales.npy --input v_zeros=%t/e-in/v_zeros.npy --input k_buffer=%t/e-in/k_buffer.npy --input k_buffer_scale=%t/e-in/k_buffer_scale.npy --input v_buffer=%t/e-in/v_buffer.npy --input v_buffer_scale=%t/e-in/v_buffer_scale.npy --input kv_lens=%t/e-in/kv_lens.npy --output-dir %t/t4e
// RUN: %python %S/Inputs/check_paged.py --case tiled4_spec16 --art %t/art-tiled4 --function spec16_int8q_varlen --in %t/e-in --out %t/t4e --q block=16 --k block=64,scale=f16,gran=channel,bits=3,group=32 --v block=64,bits=4,group=32,anchor=min --causal --max-rel-fro 0.5 --min-sqnr 6 | FileCheck %s --check-prefix=E

// A buffer that is not whole tiles: int8 K/V in stage-1 blocks of 8, a 24-token buffer (a 16-key
// tile and half of one), lengths around every multiple of 8 and 24.
// RUN: %python %S/Inputs/make_paged.py --seed 83 --batch-lens 0,1,7,8,9,16,23,24,25,40,47,48,49,100 --hq 4 --hkv 2 --nq 1 --d 64 --k block=8 --v block=8 --page 0 --buffer --buffer-size 24 --out %t/f-in
// RUN: qattn-run %t/art --function int8_short_buffer --input q=%t/f-in/q.npy --input k_data=%t/f-in/k_data.npy --input k_scales=%t/f-in/k_scales.npy --input v_data=%t/f-in/v_data.npy --input v_scales=%t/f-in/v_scales.npy --input k_buffer=%t/f-in/k_buffer.npy --input k_buffer_scale=%t/f-in/k_buffer_scale.npy --input v_buffer=%t/f-in/v_buffer.npy --input v_buffer_scale=%t/f-in/v_buffer_scale.npy --input kv_lens=%t/f-in/kv_lens.npy --output-dir %t/f
// RUN: %python %S/Inputs/check_paged.py --case short_buffer --art %t/art --function int8_short_buffer --in %t/f-in --out %t/f --k block=8 --v block=8 --max-rel-fro 0.05 --min-sqnr 26 | FileCheck %s --check-prefix=F
// RUN: qattn-run %t/art-tiled --function int8_short_buffer --input q=%t/f-in/q.npy --input k_data=%t/f-in/k_data.npy --input k_scales=%t/f-in/k_scales.npy --input v_data=%t/f-in/v_data.npy --input v_scales=%t/f-in/v_scales.npy --input k_buffer=%t/f-in/k_buffer.npy --input k_buffer_scale=%t/f-in/k_buffer_scale.npy --input v_buffer=%t/f-in/v_buffer.npy --input v_buffer_scale=%t/f-in/v_buffer_scale.npy --input kv_lens=%t/f-in/kv_lens.npy --output-dir %t/tf
// RUN: %python %S/Inputs/check_paged.py --case tiled_short_buffer --art %t/art-tiled --function int8_short_buffer --in %t/f-in --out %t/tf --k block=8 --v block=8 --max-rel-fro 0.05 --min-sqnr 26 | FileCheck %s --check-prefix=F
// RUN: qattn-run %t/art-tiled4 --function int8_short_buffer --input q=%t/f-in/q.npy --input k_data=%t/f-in/k_data.npy --input k_scales=%t/f-in/k_scales.npy --input v_data=%t/f-in/v_data.npy --input v_scales=%t/f-in/v_scales.npy --input k_buffer=%t/f-in/k_buffer.npy --input k_buffer_scale=%t/f-in/k_buffer_scale.npy --input v_buffer=%t/f-in/v_buffer.npy --input v_buffer_scale=%t/f-in/v_buffer_scale.npy --input kv_lens=%t/f-in/kv_lens.npy --output-dir %t/t4f
// RUN: %python %S/Inputs/check_paged.py --case tiled4_short_buffer --art %t/art-tiled4 --function int8_short_buffer --in %t/f-in --out %t/t4f --k block=8 --v block=8 --max-rel-fro 0.05 --min-sqnr 26 | FileCheck %s --check-prefix=F

// Stage-1 blocks under 8 keys (an int8 cache's scale per token): K blocks of 1, V blocks of 4
// with f16 scales, 16-token pages and tail, 2 causal queries, lengths around each page.
// RUN: %python %S/Inputs/make_paged.py --seed 84 --batch-lens 0,1,2,3,4,5,15,16,17,31,33,100,257 --hq 8 --hkv 2 --nq 2 --d 64 --k block=1 --v block=4,scale=f16 --page 16 --buffer --out %t/g-in
// RUN: qattn-run %t/art --function int8_token_paged --input q=%t/g-in/q.npy --input k_data=%t/g-in/k_data.npy --input k_scales=%t/g-in/k_scales.npy --input v_data=%t/g-in/v_data.npy --input v_scales=%t/g-in/v_scales.npy --input k_buffer=%t/g-in/k_buffer.npy --input k_buffer_scale=%t/g-in/k_buffer_scale.npy --input v_buffer=%t/g-in/v_buffer.npy --input v_buffer_scale=%t/g-in/v_buffer_scale.npy --input kv_lens=%t/g-in/kv_lens.npy --input page_table=%t/g-in/page_table.npy --output-dir %t/g
// RUN: %python %S/Inputs/check_paged.py --case token --art %t/art --function int8_token_paged --in %t/g-in --out %t/g --k block=1 --v block=4,scale=f16 --causal --max-rel-fro 0.05 --min-sqnr 26 | FileCheck %s --check-prefix=G
// RUN: qattn-run %t/art-tiled --function int8_token_paged --input q=%t/g-in/q.npy --input k_data=%t/g-in/k_data.npy --input k_scales=%t/g-in/k_scales.npy --input v_data=%t/g-in/v_data.npy --input v_scales=%t/g-in/v_scales.npy --input k_buffer=%t/g-in/k_buffer.npy --input k_buffer_scale=%t/g-in/k_buffer_scale.npy --input v_buffer=%t/g-in/v_buffer.npy --input v_buffer_scale=%t/g-in/v_buffer_scale.npy --input kv_lens=%t/g-in/kv_lens.npy --input page_table=%t/g-in/page_table.npy --output-dir %t/tg
// RUN: %python %S/Inputs/check_paged.py --case tiled_token --art %t/art-tiled --function int8_token_paged --in %t/g-in --out %t/tg --k block=1 --v block=4,scale=f16 --causal --max-rel-fro 0.05 --min-sqnr 26 | FileCheck %s --check-prefix=G
// RUN: qattn-run %t/art-tiled4 --function int8_token_paged --input q=%t/g-in/q.npy --input k_data=%t/g-in/k_data.npy --input k_scales=%t/g-in/k_scales.npy --input v_data=%t/g-in/v_data.npy --input v_scales=%t/g-in/v_scales.npy --input k_buffer=%t/g-in/k_buffer.npy --input k_buffer_scale=%t/g-in/k_buffer_scale.npy --input v_buffer=%t/g-in/v_buffer.npy --input v_buffer_scale=%t/g-in/v_buffer_scale.npy --input kv_lens=%t/g-in/kv_lens.npy --input page_table=%t/g-in/page_table.npy --output-dir %t/t4g
// RUN: %python %S/Inputs/check_paged.py --case tiled4_token --art %t/art-tiled4 --function int8_token_paged --in %t/g-in --out %t/t4g --k block=1 --v block=4,scale=f16 --causal --max-rel-fro 0.05 --min-sqnr 26 | FileCheck %s --check-prefix=G

// Stage-1 blocks that split a 16-key tile unevenly: K blocks of 12, V blocks of 24 (f16), 48-token
// pages and tail, lengths around each block and page.
// RUN: %python %S/Inputs/make_paged.py --seed 85 --batch-lens 0,1,11,12,13,23,24,25,47,48,49,100,500 --hq 8 --hkv 2 --nq 1 --d 64 --k block=12 --v block=24,scale=f16 --page 48 --buffer --out %t/h-in
// RUN: qattn-run %t/art --function int8_block12_paged --input q=%t/h-in/q.npy --input k_data=%t/h-in/k_data.npy --input k_scales=%t/h-in/k_scales.npy --input v_data=%t/h-in/v_data.npy --input v_scales=%t/h-in/v_scales.npy --input k_buffer=%t/h-in/k_buffer.npy --input k_buffer_scale=%t/h-in/k_buffer_scale.npy --input v_buffer=%t/h-in/v_buffer.npy --input v_buffer_scale=%t/h-in/v_buffer_scale.npy --input kv_lens=%t/h-in/kv_lens.npy --input page_table=%t/h-in/page_table.npy --output-dir %t/h
// RUN: %python %S/Inputs/check_paged.py --case block12 --art %t/art --function int8_block12_paged --in %t/h-in --out %t/h --k block=12 --v block=24,scale=f16 --max-rel-fro 0.05 --min-sqnr 26 | FileCheck %s --check-prefix=H
// RUN: qattn-run %t/art-tiled --function int8_block12_paged --input q=%t/h-in/q.npy --input k_data=%t/h-in/k_data.npy --input k_scales=%t/h-in/k_scales.npy --input v_data=%t/h-in/v_data.npy --input v_scales=%t/h-in/v_scales.npy --input k_buffer=%t/h-in/k_buffer.npy --input k_buffer_scale=%t/h-in/k_buffer_scale.npy --input v_buffer=%t/h-in/v_buffer.npy --input v_buffer_scale=%t/h-in/v_buffer_scale.npy --input kv_lens=%t/h-in/kv_lens.npy --input page_table=%t/h-in/page_table.npy --output-dir %t/th
// RUN: %python %S/Inputs/check_paged.py --case tiled_block12 --art %t/art-tiled --function int8_block12_paged --in %t/h-in --out %t/th --k block=12 --v block=24,scale=f16 --max-rel-fro 0.05 --min-sqnr 26 | FileCheck %s --check-prefix=H
// RUN: qattn-run %t/art-tiled4 --function int8_block12_paged --input q=%t/h-in/q.npy --input k_data=%t/h-in/k_data.npy --input k_scales=%t/h-in/k_scales.npy --input v_data=%t/h-in/v_data.npy --input v_scales=%t/h-in/v_scales.npy --input k_buffer=%t/h-in/k_buffer.npy --input k_buffer_scale=%t/h-in/k_buffer_scale.npy --input v_buffer=%t/h-in/v_buffer.npy --input v_buffer_scale=%t/h-in/v_buffer_scale.npy --input kv_lens=%t/h-in/kv_lens.npy --input page_table=%t/h-in/page_table.npy --output-dir %t/t4h
// RUN: %python %S/Inputs/check_paged.py --case tiled4_block12 --art %t/art-tiled4 --function int8_block12_paged --in %t/h-in --out %t/t4h --k block=12 --v block=24,scale=f16 --max-rel-fro 0.05 --min-sqnr 26 | FileCheck %s --check-prefix=H

// Scales per channel of blocks that split a tile unevenly: K per 12 tokens, V per 24 (f16).
// RUN: %python %S/Inputs/make_paged.py --seed 86 --batch-lens 0,1,11,12,13,23,24,25,47,48,49,100,500 --hq 8 --hkv 2 --nq 2 --d 64 --k block=12,gran=channel --v block=24,scale=f16,gran=channel --page 48 --buffer --out %t/i-in
// RUN: qattn-run %t/art --function int8_channel12_paged --input q=%t/i-in/q.npy --input k_data=%t/i-in/k_data.npy --input k_scales=%t/i-in/k_scales.npy --input v_data=%t/i-in/v_data.npy --input v_scales=%t/i-in/v_scales.npy --input k_buffer=%t/i-in/k_buffer.npy --input k_buffer_scale=%t/i-in/k_buffer_scale.npy --input v_buffer=%t/i-in/v_buffer.npy --input v_buffer_scale=%t/i-in/v_buffer_scale.npy --input kv_lens=%t/i-in/kv_lens.npy --input page_table=%t/i-in/page_table.npy --output-dir %t/i
// RUN: %python %S/Inputs/check_paged.py --case channel12 --art %t/art --function int8_channel12_paged --in %t/i-in --out %t/i --k block=12,gran=channel --v block=24,scale=f16,gran=channel --causal --max-rel-fro 0.05 --min-sqnr 26 | FileCheck %s --check-prefix=I
// RUN: qattn-run %t/art-tiled --function int8_channel12_paged --input q=%t/i-in/q.npy --input k_data=%t/i-in/k_data.npy --input k_scales=%t/i-in/k_scales.npy --input v_data=%t/i-in/v_data.npy --input v_scales=%t/i-in/v_scales.npy --input k_buffer=%t/i-in/k_buffer.npy --input k_buffer_scale=%t/i-in/k_buffer_scale.npy --input v_buffer=%t/i-in/v_buffer.npy --input v_buffer_scale=%t/i-in/v_buffer_scale.npy --input kv_lens=%t/i-in/kv_lens.npy --input page_table=%t/i-in/page_table.npy --output-dir %t/ti
// RUN: %python %S/Inputs/check_paged.py --case tiled_channel12 --art %t/art-tiled --function int8_channel12_paged --in %t/i-in --out %t/ti --k block=12,gran=channel --v block=24,scale=f16,gran=channel --causal --max-rel-fro 0.05 --min-sqnr 26 | FileCheck %s --check-prefix=I
// RUN: qattn-run %t/art-tiled4 --function int8_channel12_paged --input q=%t/i-in/q.npy --input k_data=%t/i-in/k_data.npy --input k_scales=%t/i-in/k_scales.npy --input v_data=%t/i-in/v_data.npy --input v_scales=%t/i-in/v_scales.npy --input k_buffer=%t/i-in/k_buffer.npy --input k_buffer_scale=%t/i-in/k_buffer_scale.npy --input v_buffer=%t/i-in/v_buffer.npy --input v_buffer_scale=%t/i-in/v_buffer_scale.npy --input kv_lens=%t/i-in/kv_lens.npy --input page_table=%t/i-in/page_table.npy --output-dir %t/t4i
// RUN: %python %S/Inputs/check_paged.py --case tiled4_channel12 --art %t/art-tiled4 --function int8_channel12_paged --in %t/i-in --out %t/t4i --k block=12,gran=channel --v block=24,scale=f16,gran=channel --causal --max-rel-fro 0.05 --min-sqnr 26 | FileCheck %s --check-prefix=I

// D: all checks passed
// E: rows that see no key are 0 OK
// E: all checks passed
// F: all checks passed
// G: rows that see no key are 0 OK
// G: all checks passed
// H: rows that see no key are 0 OK
// H: all checks passed
// I: rows that see no key are 0 OK
// I: all checks passed

func.func @mixed_g8_paged(
    %q: tensor<?x8x1x64xf16> {qattn.name = "q", qattn.dims = ["B", "", "", ""]},
    %kp: tensor<?x32x48xi8> {qattn.name = "k_codes", qattn.dims = ["NP", "", ""]},
    %ks: tensor<?x2x1xf32> {qattn.name = "k_scales", qattn.dims = ["NP", "", ""]},
    %ks2: tensor<?x2x4x64xi8> {qattn.name = "k_group_scales", qattn.dims = ["NP", "", "", ""]},
    %kz2: tensor<?x2x4x64xi8> {qattn.name = "k_zeros", qattn.dims = ["NP", "", "", ""]},
    %vp: tensor<?x32x48xi8> {qattn.name = "v_codes", qattn.dims = ["NP", "", ""]},
    %vs: tensor<?x2x1xf32> {qattn.name = "v_scales", qattn.dims = ["NP", "", ""]},
    %vs2: tensor<?x2x4x64xi8> {qattn.name = "v_group_scales", qattn.dims = ["NP", "", "", ""]},
    %vz2: tensor<?x2x4x64xi8> {qattn.name = "v_zeros", qattn.dims = ["NP", "", "", ""]},
    %kb: tensor<?x2x32x64xi8> {qattn.name = "k_buffer", qattn.dims = ["B", "", "", ""]},
    %kbs: tensor<?x2xf32> {qattn.name = "k_buffer_scale", qattn.dims = ["B", ""]},
    %vb: tensor<?x2x32x64xi8> {qattn.name = "v_buffer", qattn.dims = ["B", "", "", ""]},
    %vbs: tensor<?x2xf32> {qattn.name = "v_buffer_scale", qattn.dims = ["B", ""]},
    %lens: tensor<?xi32> {qattn.name = "kv_lens", qattn.dims = ["B"]},
    %table: tensor<?x?xi32> {qattn.name = "page_table", qattn.dims = ["B", "MP"]})
    -> (tensor<?x8x1x64xf16> {qattn.name = "o", qattn.dims = ["B", "", "", ""]}) {
  %o = qattn.attention %q keys(%kp, %ks, %ks2, %kz2) values(%vp, %vs, %vs2, %vz2) buffers(%kb, %kbs, %vb, %vbs) lengths(%lens) pages(%table)
      {k_stage1 = #qattn.stage1<block = 32>, k_stage2 = #qattn.stage2<bits = [4, 2], group = 8, order = msb_first>, v_stage1 = #qattn.stage1<block = 32>, v_stage2 = #qattn.stage2<bits = [2, 4], group = 8>}
      : (tensor<?x8x1x64xf16>, tensor<?x32x48xi8>, tensor<?x2x1xf32>, tensor<?x2x4x64xi8>, tensor<?x2x4x64xi8>, tensor<?x32x48xi8>, tensor<?x2x1xf32>, tensor<?x2x4x64xi8>, tensor<?x2x4x64xi8>, tensor<?x2x32x64xi8>, tensor<?x2xf32>, tensor<?x2x32x64xi8>, tensor<?x2xf32>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x8x1x64xf16>
  return %o : tensor<?x8x1x64xf16>
}

func.func @mixed_g8_paged_sas(
    %q: tensor<?x8x1x64xf16> {qattn.name = "q", qattn.dims = ["B", "", "", ""]},
    %kp: tensor<?x32x48xi8> {qattn.name = "k_codes", qattn.dims = ["NP", "", ""]},
    %ks: tensor<?x2x1xf32> {qattn.name = "k_scales", qattn.dims = ["NP", "", ""]},
    %ks2: tensor<?x2x4x64xi8> {qattn.name = "k_group_scales", qattn.dims = ["NP", "", "", ""]},
    %kz2: tensor<?x2x4x64xi8> {qattn.name = "k_zeros", qattn.dims = ["NP", "", "", ""]},
    %vp: tensor<?x32x48xi8> {qattn.name = "v_codes", qattn.dims = ["NP", "", ""]},
    %vs: tensor<?x2x1xf32> {qattn.name = "v_scales", qattn.dims = ["NP", "", ""]},
    %vs2: tensor<?x2x4x64xi8> {qattn.name = "v_group_scales", qattn.dims = ["NP", "", "", ""]},
    %vz2: tensor<?x2x4x64xi8> {qattn.name = "v_zeros", qattn.dims = ["NP", "", "", ""]},
    %kb: tensor<?x2x32x64xi8> {qattn.name = "k_buffer", qattn.dims = ["B", "", "", ""]},
    %kbs: tensor<?x2xf32> {qattn.name = "k_buffer_scale", qattn.dims = ["B", ""]},
    %vb: tensor<?x2x32x64xi8> {qattn.name = "v_buffer", qattn.dims = ["B", "", "", ""]},
    %vbs: tensor<?x2xf32> {qattn.name = "v_buffer_scale", qattn.dims = ["B", ""]},
    %lens: tensor<?xi32> {qattn.name = "kv_lens", qattn.dims = ["B"]},
    %table: tensor<?x?xi32> {qattn.name = "page_table", qattn.dims = ["B", "MP"]})
    -> (tensor<?x8x1x64xf16> {qattn.name = "o", qattn.dims = ["B", "", "", ""]}) {
  %o = qattn.attention %q keys(%kp, %ks, %ks2, %kz2) values(%vp, %vs, %vs2, %vz2) buffers(%kb, %kbs, %vb, %vbs) lengths(%lens) pages(%table)
      {k_stage1 = #qattn.stage1<block = 32>, k_stage2 = #qattn.stage2<bits = [4, 2], group = 8, order = msb_first>, v_stage1 = #qattn.stage1<block = 32>, v_stage2 = #qattn.stage2<bits = [2, 4], group = 8>, softmax = #qattn.softmax<sas, threshold = -6.0, degree = 2>}
      : (tensor<?x8x1x64xf16>, tensor<?x32x48xi8>, tensor<?x2x1xf32>, tensor<?x2x4x64xi8>, tensor<?x2x4x64xi8>, tensor<?x32x48xi8>, tensor<?x2x1xf32>, tensor<?x2x4x64xi8>, tensor<?x2x4x64xi8>, tensor<?x2x32x64xi8>, tensor<?x2xf32>, tensor<?x2x32x64xi8>, tensor<?x2xf32>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x8x1x64xf16>
  return %o : tensor<?x8x1x64xf16>
}

func.func @spec16_int8q_varlen(
    %q: tensor<?x4x16x128xi8> {qattn.name = "q", qattn.dims = ["B", "", "", ""]},
    %qs: tensor<?x4x1xf32> {qattn.name = "q_scales", qattn.dims = ["B", "", ""]},
    %kp: tensor<?x?x96xi8> {qattn.name = "k_codes", qattn.dims = ["B", "N", ""]},
    %ks: tensor<?x2x?x128xf16> {qattn.name = "k_scales", qattn.dims = ["B", "", "NB", ""]},
    %ks2: tensor<?x2x?x128xi8> {qattn.name = "k_group_scales", qattn.dims = ["B", "", "NG", ""]},
    %kz2: tensor<?x2x?x128xi8> {qattn.name = "k_zeros", qattn.dims = ["B", "", "NG", ""]},
    %vp: tensor<?x?x128xi8> {qattn.name = "v_codes", qattn.dims = ["B", "N", ""]},
    %vs: tensor<?x2x?xf32> {qattn.name = "v_scales", qattn.dims = ["B", "", "NB"]},
    %vs2: tensor<?x2x?x128xi8> {qattn.name = "v_group_scales", qattn.dims = ["B", "", "NG", ""]},
    %vz2: tensor<?x2x?x128xi8> {qattn.name = "v_zeros", qattn.dims = ["B", "", "NG", ""]},
    %kb: tensor<?x2x64x128xi8> {qattn.name = "k_buffer", qattn.dims = ["B", "", "", ""]},
    %kbs: tensor<?x2xf32> {qattn.name = "k_buffer_scale", qattn.dims = ["B", ""]},
    %vb: tensor<?x2x64x128xi8> {qattn.name = "v_buffer", qattn.dims = ["B", "", "", ""]},
    %vbs: tensor<?x2xf32> {qattn.name = "v_buffer_scale", qattn.dims = ["B", ""]},
    %lens: tensor<?xi32> {qattn.name = "kv_lens", qattn.dims = ["B"]})
    -> (tensor<?x4x16x128xf32> {qattn.name = "o", qattn.dims = ["B", "", "", ""]}) {
  %o = qattn.attention %q[%qs] keys(%kp, %ks, %ks2, %kz2) values(%vp, %vs, %vs2, %vz2) buffers(%kb, %kbs, %vb, %vbs) lengths(%lens)
      {q_stage1 = #qattn.stage1<block = 16>,
       k_stage1 = #qattn.stage1<block = 64, scale = f16, granularity = channel>, k_stage2 = #qattn.stage2<bits = [3], group = 32>,
       v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [4], group = 32, anchor = min>, causal}
      : (tensor<?x4x16x128xi8>, tensor<?x4x1xf32>, tensor<?x?x96xi8>, tensor<?x2x?x128xf16>, tensor<?x2x?x128xi8>, tensor<?x2x?x128xi8>, tensor<?x?x128xi8>, tensor<?x2x?xf32>, tensor<?x2x?x128xi8>, tensor<?x2x?x128xi8>, tensor<?x2x64x128xi8>, tensor<?x2xf32>, tensor<?x2x64x128xi8>, tensor<?x2xf32>, tensor<?xi32>) -> tensor<?x4x16x128xf32>
  return %o : tensor<?x4x16x128xf32>
}

func.func @int8_short_buffer(
    %q: tensor<?x4x1x64xf32> {qattn.name = "q", qattn.dims = ["B", "", "", ""]},
    %k: tensor<?x2x?x64xi8> {qattn.name = "k_data", qattn.dims = ["B", "", "N", ""]},
    %ks: tensor<?x2x?xf32> {qattn.name = "k_scales", qattn.dims = ["B", "", "NB"]},
    %v: tensor<?x2x?x64xi8> {qattn.name = "v_data", qattn.dims = ["B", "", "N", ""]},
    %vs: tensor<?x2x?xf32> {qattn.name = "v_scales", qattn.dims = ["B", "", "NB"]},
    %kb: tensor<?x2x24x64xi8> {qattn.name = "k_buffer", qattn.dims = ["B", "", "", ""]},
    %kbs: tensor<?x2xf32> {qattn.name = "k_buffer_scale", qattn.dims = ["B", ""]},
    %vb: tensor<?x2x24x64xi8> {qattn.name = "v_buffer", qattn.dims = ["B", "", "", ""]},
    %vbs: tensor<?x2xf32> {qattn.name = "v_buffer_scale", qattn.dims = ["B", ""]},
    %lens: tensor<?xi32> {qattn.name = "kv_lens", qattn.dims = ["B"]})
    -> (tensor<?x4x1x64xf32> {qattn.name = "o", qattn.dims = ["B", "", "", ""]}) {
  %o = qattn.attention %q keys(%k, %ks) values(%v, %vs) buffers(%kb, %kbs, %vb, %vbs) lengths(%lens)
      {k_stage1 = #qattn.stage1<block = 8>, v_stage1 = #qattn.stage1<block = 8>}
      : (tensor<?x4x1x64xf32>, tensor<?x2x?x64xi8>, tensor<?x2x?xf32>, tensor<?x2x?x64xi8>, tensor<?x2x?xf32>, tensor<?x2x24x64xi8>, tensor<?x2xf32>, tensor<?x2x24x64xi8>, tensor<?x2xf32>, tensor<?xi32>) -> tensor<?x4x1x64xf32>
  return %o : tensor<?x4x1x64xf32>
}

func.func @int8_token_paged(
    %q: tensor<?x8x2x64xf32> {qattn.name = "q", qattn.dims = ["B", "", "", ""]},
    %k: tensor<?x2x16x64xi8> {qattn.name = "k_data", qattn.dims = ["NP", "", "", ""]},
    %ks: tensor<?x2x16xf32> {qattn.name = "k_scales", qattn.dims = ["NP", "", ""]},
    %v: tensor<?x2x16x64xi8> {qattn.name = "v_data", qattn.dims = ["NP", "", "", ""]},
    %vs: tensor<?x2x4xf16> {qattn.name = "v_scales", qattn.dims = ["NP", "", ""]},
    %kb: tensor<?x2x16x64xi8> {qattn.name = "k_buffer", qattn.dims = ["B", "", "", ""]},
    %kbs: tensor<?x2xf32> {qattn.name = "k_buffer_scale", qattn.dims = ["B", ""]},
    %vb: tensor<?x2x16x64xi8> {qattn.name = "v_buffer", qattn.dims = ["B", "", "", ""]},
    %vbs: tensor<?x2xf32> {qattn.name = "v_buffer_scale", qattn.dims = ["B", ""]},
    %lens: tensor<?xi32> {qattn.name = "kv_lens", qattn.dims = ["B"]},
    %table: tensor<?x?xi32> {qattn.name = "page_table", qattn.dims = ["B", "MP"]})
    -> (tensor<?x8x2x64xf32> {qattn.name = "o", qattn.dims = ["B", "", "", ""]}) {
  %o = qattn.attention %q keys(%k, %ks) values(%v, %vs) buffers(%kb, %kbs, %vb, %vbs) lengths(%lens) pages(%table)
      {k_stage1 = #qattn.stage1<block = 1>, v_stage1 = #qattn.stage1<block = 4, scale = f16>, causal}
      : (tensor<?x8x2x64xf32>, tensor<?x2x16x64xi8>, tensor<?x2x16xf32>, tensor<?x2x16x64xi8>, tensor<?x2x4xf16>, tensor<?x2x16x64xi8>, tensor<?x2xf32>, tensor<?x2x16x64xi8>, tensor<?x2xf32>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x8x2x64xf32>
  return %o : tensor<?x8x2x64xf32>
}

func.func @int8_block12_paged(
    %q: tensor<?x8x1x64xf32> {qattn.name = "q", qattn.dims = ["B", "", "", ""]},
    %k: tensor<?x2x48x64xi8> {qattn.name = "k_data", qattn.dims = ["NP", "", "", ""]},
    %ks: tensor<?x2x4xf32> {qattn.name = "k_scales", qattn.dims = ["NP", "", ""]},
    %v: tensor<?x2x48x64xi8> {qattn.name = "v_data", qattn.dims = ["NP", "", "", ""]},
    %vs: tensor<?x2x2xf16> {qattn.name = "v_scales", qattn.dims = ["NP", "", ""]},
    %kb: tensor<?x2x48x64xi8> {qattn.name = "k_buffer", qattn.dims = ["B", "", "", ""]},
    %kbs: tensor<?x2xf32> {qattn.name = "k_buffer_scale", qattn.dims = ["B", ""]},
    %vb: tensor<?x2x48x64xi8> {qattn.name = "v_buffer", qattn.dims = ["B", "", "", ""]},
    %vbs: tensor<?x2xf32> {qattn.name = "v_buffer_scale", qattn.dims = ["B", ""]},
    %lens: tensor<?xi32> {qattn.name = "kv_lens", qattn.dims = ["B"]},
    %table: tensor<?x?xi32> {qattn.name = "page_table", qattn.dims = ["B", "MP"]})
    -> (tensor<?x8x1x64xf32> {qattn.name = "o", qattn.dims = ["B", "", "", ""]}) {
  %o = qattn.attention %q keys(%k, %ks) values(%v, %vs) buffers(%kb, %kbs, %vb, %vbs) lengths(%lens) pages(%table)
      {k_stage1 = #qattn.stage1<block = 12>, v_stage1 = #qattn.stage1<block = 24, scale = f16>}
      : (tensor<?x8x1x64xf32>, tensor<?x2x48x64xi8>, tensor<?x2x4xf32>, tensor<?x2x48x64xi8>, tensor<?x2x2xf16>, tensor<?x2x48x64xi8>, tensor<?x2xf32>, tensor<?x2x48x64xi8>, tensor<?x2xf32>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x8x1x64xf32>
  return %o : tensor<?x8x1x64xf32>
}

func.func @int8_channel12_paged(
    %q: tensor<?x8x2x64xf32> {qattn.name = "q", qattn.dims = ["B", "", "", ""]},
    %k: tensor<?x2x48x64xi8> {qattn.name = "k_data", qattn.dims = ["NP", "", "", ""]},
    %ks: tensor<?x2x4x64xf32> {qattn.name = "k_scales", qattn.dims = ["NP", "", "", ""]},
    %v: tensor<?x2x48x64xi8> {qattn.name = "v_data", qattn.dims = ["NP", "", "", ""]},
    %vs: tensor<?x2x2x64xf16> {qattn.name = "v_scales", qattn.dims = ["NP", "", "", ""]},
    %kb: tensor<?x2x48x64xi8> {qattn.name = "k_buffer", qattn.dims = ["B", "", "", ""]},
    %kbs: tensor<?x2xf32> {qattn.name = "k_buffer_scale", qattn.dims = ["B", ""]},
    %vb: tensor<?x2x48x64xi8> {qattn.name = "v_buffer", qattn.dims = ["B", "", "", ""]},
    %vbs: tensor<?x2xf32> {qattn.name = "v_buffer_scale", qattn.dims = ["B", ""]},
    %lens: tensor<?xi32> {qattn.name = "kv_lens", qattn.dims = ["B"]},
    %table: tensor<?x?xi32> {qattn.name = "page_table", qattn.dims = ["B", "MP"]})
    -> (tensor<?x8x2x64xf32> {qattn.name = "o", qattn.dims = ["B", "", "", ""]}) {
  %o = qattn.attention %q keys(%k, %ks) values(%v, %vs) buffers(%kb, %kbs, %vb, %vbs) lengths(%lens) pages(%table)
      {k_stage1 = #qattn.stage1<block = 12, granularity = channel>, v_stage1 = #qattn.stage1<block = 24, scale = f16, granularity = channel>, causal}
      : (tensor<?x8x2x64xf32>, tensor<?x2x48x64xi8>, tensor<?x2x4x64xf32>, tensor<?x2x48x64xi8>, tensor<?x2x2x64xf16>, tensor<?x2x48x64xi8>, tensor<?x2xf32>, tensor<?x2x48x64xi8>, tensor<?x2xf32>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x8x2x64xf32>
  return %o : tensor<?x8x2x64xf32>
}
