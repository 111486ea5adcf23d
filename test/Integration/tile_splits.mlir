// The tile layer's split count follows the batch at run time: one function, tiled by the
// default qattn-tile (no splits option) and lowered to the CPU, run at batch 3 and at batch 40
// with the same page table width (MP = 64 pages of 64 keys, and the 64-key buffer: 4160 keys, at
// most 33 splits of 128). The host computes S = max(1, min(1584 / (B x 2), 33, max(64, 17)))
// (1584: 132 SMs x 12 resident warps of the grid kernel, whose 32-key tiles hold two groups of
// 16): 33 at B = 3, 19 at B = 40. A table of 640 pages at B = 1 (41024 keys) takes more than 64
// splits, as each still gets 256 keys: min(792, 321, max(64, 161)) = 161 (over 40000 random keys attention is flat and the format's
// own loss, which the model shows as well, is rel_fro 0.42: the bound against float attention is
// wider there; the check against the model is the one that tests the splits). All three runs must match the NumPy model (check_paged.py),
// and the same function compiled for target cuda shows the split counts in its plan
// (qattn-run --plan-only).

// REQUIRES: numpy
// RUN: rm -rf %t && mkdir -p %t
// RUN: qattn-opt %s --qattn-tile --qattn-pipeline -o %t/tiled.mlir
// RUN: FileCheck %s --check-prefix=IR --input-file=%t/tiled.mlir
// RUN: qattn-compile %t/tiled.mlir -o %t/art
// RUN: %python %S/Inputs/make_paged.py --seed 81 --batch-lens 1,300,4097 --hq 8 --hkv 2 --nq 1 --d 64 --k block=64,bits=4,group=16 --v block=64,bits=4,group=16 --page 64 --buffer --max-pages 64 --out %t/b3-in
// RUN: qattn-run %t/art --function paged_int4 --input q=%t/b3-in/q.npy --input k_codes=%t/b3-in/k_codes.npy --input k_scales=%t/b3-in/k_scales.npy --input k_group_scales=%t/b3-in/k_group_scales.npy --input k_zeros=%t/b3-in/k_zeros.npy --input v_codes=%t/b3-in/v_codes.npy --input v_scales=%t/b3-in/v_scales.npy --input v_group_scales=%t/b3-in/v_group_scales.npy --input v_zeros=%t/b3-in/v_zeros.npy --input k_buffer=%t/b3-in/k_buffer.npy --input k_buffer_scale=%t/b3-in/k_buffer_scale.npy --input v_buffer=%t/b3-in/v_buffer.npy --input v_buffer_scale=%t/b3-in/v_buffer_scale.npy --input kv_lens=%t/b3-in/kv_lens.npy --input page_table=%t/b3-in/page_table.npy --output-dir %t/b3
// RUN: %python %S/Inputs/check_paged.py --case splits_b3 --art %t/art --function paged_int4 --in %t/b3-in --out %t/b3 --k block=64,bits=4,group=16 --v block=64,bits=4,group=16 --max-rel-fro 0.2 --min-sqnr 14 | FileCheck %s --check-prefix=B3
// RUN: %python %S/Inputs/make_paged.py --seed 82 --batch-lens 0,1,15,16,17,63,64,65,127,128,129,300,1000,4097,2,3,5,7,11,13,31,32,33,95,96,97,191,192,193,255,256,257,511,512,513,700,800,900,1500,2048 --hq 8 --hkv 2 --nq 1 --d 64 --k block=64,bits=4,group=16 --v block=64,bits=4,group=16 --page 64 --buffer --max-pages 64 --garbage nan --out %t/b40-in
// RUN: qattn-run %t/art --function paged_int4 --input q=%t/b40-in/q.npy --input k_codes=%t/b40-in/k_codes.npy --input k_scales=%t/b40-in/k_scales.npy --input k_group_scales=%t/b40-in/k_group_scales.npy --input k_zeros=%t/b40-in/k_zeros.npy --input v_codes=%t/b40-in/v_codes.npy --input v_scales=%t/b40-in/v_scales.npy --input v_group_scales=%t/b40-in/v_group_scales.npy --input v_zeros=%t/b40-in/v_zeros.npy --input k_buffer=%t/b40-in/k_buffer.npy --input k_buffer_scale=%t/b40-in/k_buffer_scale.npy --input v_buffer=%t/b40-in/v_buffer.npy --input v_buffer_scale=%t/b40-in/v_buffer_scale.npy --input kv_lens=%t/b40-in/kv_lens.npy --input page_table=%t/b40-in/page_table.npy --output-dir %t/b40
// RUN: %python %S/Inputs/check_paged.py --case splits_b40 --art %t/art --function paged_int4 --in %t/b40-in --out %t/b40 --k block=64,bits=4,group=16 --v block=64,bits=4,group=16 --max-rel-fro 0.2 --min-sqnr 14 | FileCheck %s --check-prefix=B40
// RUN: %python %S/Inputs/make_paged.py --seed 83 --batch-lens 40000 --hq 8 --hkv 2 --nq 1 --d 64 --k block=64,bits=4,group=16 --v block=64,bits=4,group=16 --page 64 --buffer --max-pages 640 --out %t/b1-in
// RUN: qattn-run %t/art --function paged_int4 --input q=%t/b1-in/q.npy --input k_codes=%t/b1-in/k_codes.npy --input k_scales=%t/b1-in/k_scales.npy --input k_group_scales=%t/b1-in/k_group_scales.npy --input k_zeros=%t/b1-in/k_zeros.npy --input v_codes=%t/b1-in/v_codes.npy --input v_scales=%t/b1-in/v_scales.npy --input v_group_scales=%t/b1-in/v_group_scales.npy --input v_zeros=%t/b1-in/v_zeros.npy --input k_buffer=%t/b1-in/k_buffer.npy --input k_buffer_scale=%t/b1-in/k_buffer_scale.npy --input v_buffer=%t/b1-in/v_buffer.npy --input v_buffer_scale=%t/b1-in/v_buffer_scale.npy --input kv_lens=%t/b1-in/kv_lens.npy --input page_table=%t/b1-in/page_table.npy --output-dir %t/b1
// RUN: %python %S/Inputs/check_paged.py --case splits_b1 --art %t/art --function paged_int4 --in %t/b1-in --out %t/b1 --k block=64,bits=4,group=16 --v block=64,bits=4,group=16 --max-rel-fro 0.5 --min-sqnr 6 | FileCheck %s --check-prefix=B1
// RUN: qattn-compile %s -o %t/cuda --target=cuda --no-cubin
// RUN: qattn-run %t/cuda --function paged_int4 --plan-only --dim B=1 --dim NP=700 --dim MP=640 | FileCheck %s --check-prefix=PLAN1
// RUN: qattn-run %t/cuda --function paged_int4 --plan-only --dim B=3 --dim NP=100 --dim MP=64 | FileCheck %s --check-prefix=PLAN3
// RUN: qattn-run %t/cuda --function paged_int4 --plan-only --dim B=40 --dim NP=100 --dim MP=64 | FileCheck %s --check-prefix=PLAN40

// IR: %[[B:.*]] = tensor.dim %arg0, %c0 : tensor<?x8x1x64xf32>
// IR: arith.divui %c1584, %{{.*}} : index
// IR: %[[NS:.*]] = arith.maxui %{{.*}}, %c1{{.*}} : index
// IR: scf.forall ({{.*}}) in (%[[B]], 2, 1, %[[NS]])
// IR: qattn.combine_splits {{.*}} : tensor<?x2x1x?x16x64xf32>
// B3: splits_b3: all checks passed
// B40: splits_b40: all checks passed
// B1: splits_b1: all checks passed
// PLAN3: size S0 = max(min(div(1584, B*2), ceil_div(MP*64+64, 128), max(ceil_div(MP*64+64, 256), 64)), 1) = 33
// PLAN3: launch paged_int4_decode_tiles grid [66, 1, 3]
// PLAN40: size S0 = {{.*}} = 19
// PLAN40: launch paged_int4_decode_tiles grid [38, 1, 40]
// PLAN1: size S0 = {{.*}} = 161
// PLAN1: buffer scratch2: f32 [1, 2, 1, 161, 16, 64]
// PLAN1: launch paged_int4_decode_tiles grid [322, 1, 1]

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
