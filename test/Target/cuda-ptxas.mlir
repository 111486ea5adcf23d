// REQUIRES: ptxas
// RUN: rm -rf %t && qattn-compile %S/cuda-mma-ptx.mlir -o %t --target=cuda --no-cubin > /dev/null
// RUN: %ptxas -arch=sm_90a -v %t/module.ptx -o %t/prefill.cubin 2>&1 | FileCheck %s

// The tensor-core kernel assembles for sm_90a without local-memory spills.
// CHECK: Compiling entry function 'prefill_attention_mma' for 'sm_90a'
// CHECK: 0 bytes spill stores, 0 bytes spill loads
