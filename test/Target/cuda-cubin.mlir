// REQUIRES: ptxas
// RUN: rm -rf %t && qattn-compile %S/cuda-artifact.mlir -o %t --target=cuda
// RUN: FileCheck %s --input-file=%t/manifest.json
// RUN: %ptxas -arch=sm_90a %t/module.ptx -o %t/check.cubin
// RUN: ls %t | FileCheck %s --check-prefix=FILES

// With ptxas the artifact carries a cubin; the PTX assembles on its own too.
// CHECK: "library": "module.cubin",
// FILES: check.cubin
// FILES: manifest.json
// FILES: module.cubin
// FILES: module.ptx
