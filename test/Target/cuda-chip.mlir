// The chip is checked before anything reaches upstream's NVVM target (an
// empty one crashed its verifier; a trailing space was accepted).
// RUN: not qattn-compile %s -o %t --target=cuda --chip= 2>&1 | FileCheck %s --check-prefix=EMPTY
// RUN: not qattn-compile %s -o %t --target=cuda "--chip=sm_90a " 2>&1 | FileCheck %s --check-prefix=SPACE
// RUN: not qattn-opt %s --qattn-tile=chip=sm_80 2>&1 | FileCheck %s --check-prefix=TILE
// RUN: not qattn-opt %s --qattn-tile --qattn-convert-to-gpu=chip=sm_89 2>&1 | FileCheck %s --check-prefix=CONVERT

// EMPTY: error: unknown chip ''; qattn has kernels for sm_90a
// SPACE: error: unknown chip 'sm_90a '; qattn has kernels for sm_90a
// TILE: error: qattn-tile: unknown chip 'sm_80'; qattn has kernels for sm_90a
// TILE-NOT: see current operation
// CONVERT: error: qattn-convert-to-gpu: unknown chip 'sm_89'; qattn has kernels for sm_90a
func.func @f(%q: tensor<1x8x1x64xf16>, %k: tensor<1x2x128x64xi8>, %ks: tensor<1x2x2xf32>) -> tensor<1x8x1x64xf16> {
  %o = qattn.attention %q keys(%k, %ks) values(%k, %ks) {k_stage1 = #qattn.stage1<block = 64>, v_stage1 = #qattn.stage1<block = 64>}
      : (tensor<1x8x1x64xf16>, tensor<1x2x128x64xi8>, tensor<1x2x2xf32>, tensor<1x2x128x64xi8>, tensor<1x2x2xf32>) -> tensor<1x8x1x64xf16>
  return %o : tensor<1x8x1x64xf16>
}
