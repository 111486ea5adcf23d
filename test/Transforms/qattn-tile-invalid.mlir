// RUN: qattn-opt %s --qattn-tile -verify-diagnostics

// The GPU kernels decode only zero-anchored stage 2: qattn-tile says so
// instead of tiling a min-anchored operand.
func.func @min_anchor(%q: tensor<1x2x4x16xf32>, %p: tensor<1x32x16xi8>, %ks: tensor<1x2x1xf32>, %g: tensor<1x2x2x16xi8>, %v: tensor<1x2x32x16xi8>) -> tensor<1x2x4x16xf32> {
  // expected-error@+1 {{qattn-tile: stage 2 with anchor = min has no GPU kernel yet (use the CPU reference)}}
  %o = qattn.attention %q keys(%v, %ks) values(%p, %ks, %g, %g) {k_stage1 = #qattn.stage1<block = 32>, v_stage1 = #qattn.stage1<block = 32>, v_stage2 = #qattn.stage2<bits = [4], group = 16, anchor = min>} : (tensor<1x2x4x16xf32>, tensor<1x2x32x16xi8>, tensor<1x2x1xf32>, tensor<1x32x16xi8>, tensor<1x2x1xf32>, tensor<1x2x2x16xi8>, tensor<1x2x2x16xi8>) -> tensor<1x2x4x16xf32>
  return %o : tensor<1x2x4x16xf32>
}
