// REQUIRES: ptxas
// RUN: rm -rf %t && qattn-compile %s -o %t --target=cuda --no-cubin > /dev/null
// RUN: %ptxas -arch=sm_90a -v %t/module.ptx -o %t/tiles.cubin 2>&1 | FileCheck %s

// The tile layer's kernels for a paged 4-bit decode with the int8 tail
// (scripts/gpu-check/serving's paged_int4_d64; 32-key tiles of two groups
// of 16) assemble for sm_90a within the 168 registers the grid kernel asks
// for (nvvm.minctasm: 12 warps per SM), without local-memory spills. Each
// line is pinned to its kernel.
// CHECK: Compiling entry function 'paged_int4_d64_combine_tiles'
// CHECK-NEXT: Function properties for paged_int4_d64_combine_tiles
// CHECK-NEXT: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK: Compiling entry function 'paged_int4_d64_decode_tiles'
// CHECK-NEXT: Function properties for paged_int4_d64_decode_tiles
// CHECK-NEXT: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK-NEXT: Used {{([0-9]|[1-9][0-9]|1[0-5][0-9]|16[0-8])}} registers

func.func @paged_int4_d64(
    %a0: tensor<?x8x1x64xf32> {qattn.name = "q", qattn.dims = ["B", "", "", ""]},
    %a1: tensor<?x64x64xi8> {qattn.name = "k_codes", qattn.dims = ["NP", "", ""]},
    %a2: tensor<?x2x1xf32> {qattn.name = "k_scales", qattn.dims = ["NP", "", ""]},
    %a3: tensor<?x2x4x64xi8> {qattn.name = "k_group_scales", qattn.dims = ["NP", "", "", ""]},
    %a4: tensor<?x2x4x64xi8> {qattn.name = "k_zeros", qattn.dims = ["NP", "", "", ""]},
    %a5: tensor<?x64x64xi8> {qattn.name = "v_codes", qattn.dims = ["NP", "", ""]},
    %a6: tensor<?x2x1xf32> {qattn.name = "v_scales", qattn.dims = ["NP", "", ""]},
    %a7: tensor<?x2x4x64xi8> {qattn.name = "v_group_scales", qattn.dims = ["NP", "", "", ""]},
    %a8: tensor<?x2x4x64xi8> {qattn.name = "v_zeros", qattn.dims = ["NP", "", "", ""]},
    %a9: tensor<?x2x64x64xi8> {qattn.name = "k_buffer", qattn.dims = ["B", "", "", ""]},
    %a10: tensor<?x2xf32> {qattn.name = "k_buffer_scale", qattn.dims = ["B", ""]},
    %a11: tensor<?x2x64x64xi8> {qattn.name = "v_buffer", qattn.dims = ["B", "", "", ""]},
    %a12: tensor<?x2xf32> {qattn.name = "v_buffer_scale", qattn.dims = ["B", ""]},
    %a13: tensor<?xi32> {qattn.name = "kv_lens", qattn.dims = ["B"]},
    %a14: tensor<?x?xi32> {qattn.name = "page_table", qattn.dims = ["B", "MP"]})
    -> (tensor<?x8x1x64xf32> {qattn.name = "o", qattn.dims = ["B", "", "", ""]}) {
  %o = qattn.attention %a0 keys(%a1, %a2, %a3, %a4) values(%a5, %a6, %a7, %a8) buffers(%a9, %a10, %a11, %a12) lengths(%a13) pages(%a14)
      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4], group = 16>, v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [4], group = 16>}
      : (tensor<?x8x1x64xf32>, tensor<?x64x64xi8>, tensor<?x2x1xf32>, tensor<?x2x4x64xi8>, tensor<?x2x4x64xi8>, tensor<?x64x64xi8>, tensor<?x2x1xf32>, tensor<?x2x4x64xi8>, tensor<?x2x4x64xi8>, tensor<?x2x64x64xi8>, tensor<?x2xf32>, tensor<?x2x64x64xi8>, tensor<?x2xf32>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x8x1x64xf32>
  return %o : tensor<?x8x1x64xf32>
}

