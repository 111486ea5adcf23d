// REQUIRES: ptxas
// RUN: rm -rf %t && qattn-compile %S/cuda-mma-ptx.mlir -o %t --target=cuda --no-cubin > /dev/null
// RUN: %ptxas -arch=sm_90a -v %t/module.ptx -o %t/prefill.cubin 2>&1 | FileCheck %s
// RUN: rm -rf %t && qattn-compile %S/cuda-wgmma-ptx.mlir -o %t --target=cuda --no-cubin > /dev/null
// RUN: %ptxas -arch=sm_90a -v %t/module.ptx -o %t/prefill.cubin 2>&1 | FileCheck %s --check-prefix=WGMMA

// Both tensor-core prefill kernels assemble for sm_90a without local-memory
// spills, and the wgmma one without ptxas serializing its wgmmas (C7519/C7520
// notes: registers touched between a fence and a wgmma).
// CHECK: Compiling entry function 'prefill_attention_mma' for 'sm_90a'
// CHECK: 0 bytes spill stores, 0 bytes spill loads
// WGMMA-NOT: C75
// WGMMA: Compiling entry function 'prefill_attention_wgmma' for 'sm_90a'
// WGMMA-NOT: C75
// WGMMA: 0 bytes spill stores, 0 bytes spill loads
// WGMMA-NOT: C75
