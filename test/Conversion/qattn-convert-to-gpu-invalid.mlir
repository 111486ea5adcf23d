// RUN: qattn-opt %s -split-input-file --qattn-convert-to-gpu -verify-diagnostics

func.func @untiled(%q: tensor<1x1x1x64xf32>, %k: tensor<1x1x64x64xi8>, %ks: tensor<1x1x1xf32>) -> tensor<1x1x1x64xf32> {
  // expected-error@+1 {{has no #qattn.gpu_tiling: run qattn-tile first}}
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) {k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>}
      : (tensor<1x1x1x64xf32>, tensor<1x1x64x64xi8>, tensor<1x1x1xf32>, tensor<1x1x64x64xi8>, tensor<1x1x1xf32>) -> tensor<1x1x1x64xf32>
  return %o : tensor<1x1x1x64xf32>
}

// -----

func.func @narrow(%q: tensor<1x1x1x16xf32>, %k: tensor<1x1x64x16xi8>, %ks: tensor<1x1x1xf32>) -> tensor<1x1x1x16xf32> {
  // expected-error@+1 {{expected a head dimension that is a multiple of 32 on the GPU, got 16}}
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) {k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>, gpu_tiling = #qattn.gpu_tiling<warps = 4, splits = 1>}
      : (tensor<1x1x1x16xf32>, tensor<1x1x64x16xi8>, tensor<1x1x1xf32>, tensor<1x1x64x16xi8>, tensor<1x1x1xf32>) -> tensor<1x1x1x16xf32>
  return %o : tensor<1x1x1x16xf32>
}

// -----

func.func @sas(%q: tensor<1x1x1x32xf32>, %k: tensor<1x1x64x32xi8>, %ks: tensor<1x1x1xf32>) -> tensor<1x1x1x32xf32> {
  // expected-error@+1 {{SAS softmax on the GPU needs the warp kernel with one key split (its terms are defined against the row's final max)}}
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) {k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>, softmax = #qattn.softmax<sas>, gpu_tiling = #qattn.gpu_tiling<warps = 4, splits = 2>}
      : (tensor<1x1x1x32xf32>, tensor<1x1x64x32xi8>, tensor<1x1x1xf32>, tensor<1x1x64x32xi8>, tensor<1x1x1xf32>) -> tensor<1x1x1x32xf32>
  return %o : tensor<1x1x1x32xf32>
}

// -----

func.func @host_quantize(%x: tensor<1x1x8x32xf32>) -> tensor<1x1x8x32xi8> {
  // expected-error@+1 {{is not supported by the GPU lowering yet; quantize on the host (the CPU artifact) and pass the quantized tensors}}
  %q, %s = qattn.quantize %x {scheme = #qattn.stage1<block = 8>} : tensor<1x1x8x32xf32> -> tensor<1x1x8x32xi8>, tensor<1x1x1xf32>
  return %q : tensor<1x1x8x32xi8>
}

// -----

// Hand-written tilings that the tensor-core prefill kernel cannot run.
func.func @mma_float_queries(%q: tensor<1x4x64x64xf32>, %k: tensor<1x4x64x64xi8>, %ks: tensor<1x4x1xf32>) -> tensor<1x4x64x64xf32> {
  // expected-error@+1 {{tensor-core prefill kernel (kernel = mma): expected BPQ int8 queries with block scales}}
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) {k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>, gpu_tiling = #qattn.gpu_tiling<warps = 4, splits = 1, kernel = mma, stages = 2>}
      : (tensor<1x4x64x64xf32>, tensor<1x4x64x64xi8>, tensor<1x4x1xf32>, tensor<1x4x64x64xi8>, tensor<1x4x1xf32>) -> tensor<1x4x64x64xf32>
  return %o : tensor<1x4x64x64xf32>
}

// -----

func.func @mma_split(%q: tensor<1x4x64x64xi8>, %qs: tensor<1x4x1xf32>, %k: tensor<1x4x64x64xi8>, %ks: tensor<1x4x1xf32>) -> tensor<1x4x64x64xf32> {
  // expected-error@+1 {{tensor-core prefill kernel (kernel = mma): expected splits = 1, got 2}}
  %o = qattn.attention %q [%qs] keys(%k, %ks) values(%k, %ks) {q_stage1 = #qattn.stage1<block = 64>, k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>, gpu_tiling = #qattn.gpu_tiling<warps = 4, splits = 2, kernel = mma, stages = 2>}
      : (tensor<1x4x64x64xi8>, tensor<1x4x1xf32>, tensor<1x4x64x64xi8>, tensor<1x4x1xf32>, tensor<1x4x64x64xi8>, tensor<1x4x1xf32>) -> tensor<1x4x64x64xf32>
  return %o : tensor<1x4x64x64xf32>
}

// -----

func.func @wgmma_d64(%q: tensor<1x4x64x64xi8>, %qs: tensor<1x4x1xf32>, %k: tensor<1x4x64x64xi8>, %ks: tensor<1x4x1xf32>) -> tensor<1x4x64x64xf32> {
  // expected-error@+1 {{tensor-core prefill kernel (kernel = wgmma): expected d = 128, or one warpgroup and 3 or more stages at d = 64, got 4 warps and 2 stages}}
  %o = qattn.attention %q [%qs] keys(%k, %ks) values(%k, %ks) {q_stage1 = #qattn.stage1<block = 64>, k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>, gpu_tiling = #qattn.gpu_tiling<warps = 4, splits = 1, kernel = wgmma, stages = 2>}
      : (tensor<1x4x64x64xi8>, tensor<1x4x1xf32>, tensor<1x4x64x64xi8>, tensor<1x4x1xf32>, tensor<1x4x64x64xi8>, tensor<1x4x1xf32>) -> tensor<1x4x64x64xf32>
  return %o : tensor<1x4x64x64xf32>
}

// -----

func.func @wgmma_d64_two_warpgroups(%q: tensor<1x4x64x64xi8>, %qs: tensor<1x4x1xf32>, %k: tensor<1x4x64x64xi8>, %ks: tensor<1x4x1xf32>) -> tensor<1x4x64x64xf32> {
  // expected-error@+1 {{tensor-core prefill kernel (kernel = wgmma): expected d = 128, or one warpgroup and 3 or more stages at d = 64, got 8 warps and 4 stages}}
  %o = qattn.attention %q [%qs] keys(%k, %ks) values(%k, %ks) {q_stage1 = #qattn.stage1<block = 64>, k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>, gpu_tiling = #qattn.gpu_tiling<warps = 8, splits = 1, kernel = wgmma, stages = 4>}
      : (tensor<1x4x64x64xi8>, tensor<1x4x1xf32>, tensor<1x4x64x64xi8>, tensor<1x4x1xf32>, tensor<1x4x64x64xi8>, tensor<1x4x1xf32>) -> tensor<1x4x64x64xf32>
  return %o : tensor<1x4x64x64xf32>
}

// -----

func.func @wgmma_e4m3_v_block32(%q: tensor<1x4x64x128xi8>, %qs: tensor<1x4x1xf32>, %k: tensor<1x4x64x128xi8>, %ks: tensor<1x4x1xf32>, %vs: tensor<1x4x2xf32>) -> tensor<1x4x64x128xf32> {
  // expected-error@+1 {{tensor-core prefill kernel (kernel = wgmma): pv = e4m3: expected V stage-1 scales per block of a multiple of 64 keys}}
  %o = qattn.attention %q [%qs] keys(%k, %ks) values(%k, %vs) {q_stage1 = #qattn.stage1<block = 64>, k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 32>, gpu_tiling = #qattn.gpu_tiling<warps = 4, splits = 1, kernel = wgmma, stages = 2, pv = e4m3>}
      : (tensor<1x4x64x128xi8>, tensor<1x4x1xf32>, tensor<1x4x64x128xi8>, tensor<1x4x1xf32>, tensor<1x4x64x128xi8>, tensor<1x4x2xf32>) -> tensor<1x4x64x128xf32>
  return %o : tensor<1x4x64x128xf32>
}

// -----

func.func @mma_d96(%q: tensor<1x4x64x96xi8>, %qs: tensor<1x4x1xf32>, %k: tensor<1x4x64x96xi8>, %ks: tensor<1x4x1xf32>) -> tensor<1x4x64x96xf32> {
  // expected-error@+1 {{tensor-core prefill kernel (kernel = mma): expected a head dimension of 64 or 128, got 96}}
  %o = qattn.attention %q [%qs] keys(%k, %ks) values(%k, %ks) {q_stage1 = #qattn.stage1<block = 64>, k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>, gpu_tiling = #qattn.gpu_tiling<warps = 4, splits = 1, kernel = mma, stages = 2>}
      : (tensor<1x4x64x96xi8>, tensor<1x4x1xf32>, tensor<1x4x64x96xi8>, tensor<1x4x1xf32>, tensor<1x4x64x96xi8>, tensor<1x4x1xf32>) -> tensor<1x4x64x96xf32>
  return %o : tensor<1x4x64x96xf32>
}

// -----

func.func @tile_layer(%q: tensor<?x8x1x64xf16>, %b: index) -> tensor<16x64xf32> {
  // expected-error@+1 {{'qattn.load_query_tile' op of the tile layer has no GPU lowering outside a decode grid of qattn-tile}}
  %qt = qattn.load_query_tile %q [%b, %b, %b] {group = 4} : tensor<?x8x1x64xf16> -> tensor<16x64xf32>
  return %qt : tensor<16x64xf32>
}

// -----

func.func @generic_with_tiling(%q: tensor<?x2x1x64xf32>, %k: tensor<?x2x64x64xi8>, %ks: tensor<?x2x1xf32>) -> tensor<?x2x1x64xf32> {
  // expected-error@+1 {{with per-sequence lengths, a page table or dynamic sizes has no GPU kernel (qattn-tile puts it on the tile layer)}}
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) {k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>, gpu_tiling = #qattn.gpu_tiling<warps = 4, splits = 1>}
      : (tensor<?x2x1x64xf32>, tensor<?x2x64x64xi8>, tensor<?x2x1xf32>, tensor<?x2x64x64xi8>, tensor<?x2x1xf32>) -> tensor<?x2x1x64xf32>
  return %o : tensor<?x2x1x64xf32>
}
