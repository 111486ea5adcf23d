// RUN: qattn-opt %s --qattn-pipeline -verify-diagnostics

func.func @untiled(%q: tensor<1x1x1x64xf32>, %k: tensor<1x1x64x64xi8>, %ks: tensor<1x1x1xf32>) -> tensor<1x1x1x64xf32> {
  // expected-error@+1 {{has no #qattn.gpu_tiling: run qattn-tile first}}
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) {k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>}
      : (tensor<1x1x1x64xf32>, tensor<1x1x64x64xi8>, tensor<1x1x1xf32>, tensor<1x1x64x64xi8>, tensor<1x1x1xf32>) -> tensor<1x1x1x64xf32>
  return %o : tensor<1x1x1x64xf32>
}
