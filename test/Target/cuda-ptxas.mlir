// REQUIRES: ptxas
// RUN: rm -rf %t && qattn-compile %S/cuda-mma-ptx.mlir -o %t --target=cuda --no-cubin > /dev/null
// RUN: %ptxas -arch=sm_90a -v %t/module.ptx -o %t/prefill.cubin 2>&1 | FileCheck %s
// RUN: rm -rf %t && qattn-compile %S/cuda-wgmma-ptx.mlir -o %t --target=cuda --no-cubin > /dev/null
// RUN: %ptxas -arch=sm_90a -v %t/module.ptx -o %t/prefill.cubin 2>&1 | FileCheck %s --check-prefix=WGMMA

// Both tensor-core prefill kernels assemble for sm_90a without local-memory
// spills, and the wgmma one without ptxas serializing its wgmmas (C7519/C7520
// notes: registers touched between a fence and a wgmma).
// Each spill line is pinned to its kernel's block of the report (ptxas
// prints the attention kernel before the stage kernel, whose line would
// otherwise match for a spilling attention kernel).
// CHECK: Compiling entry function 'prefill_attention_mma' for 'sm_90a'
// CHECK-NEXT: Function properties for prefill_attention_mma
// CHECK-NEXT: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK: Compiling entry function 'prefill_prefill_stage' for 'sm_90a'
// CHECK-NEXT: Function properties for prefill_prefill_stage
// CHECK-NEXT: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// WGMMA-NOT: C75
// WGMMA: Compiling entry function 'prefill_attention_wgmma' for 'sm_90a'
// WGMMA-NEXT: Function properties for prefill_attention_wgmma
// WGMMA-NEXT: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// WGMMA-NOT: C75
