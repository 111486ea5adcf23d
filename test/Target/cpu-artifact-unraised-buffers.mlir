// --allow-unquantized decomposes linalg.softmax on tensors only: upstream's decomposition builds
// tensors, and on buffers it would leave ops that do not verify. That is a diagnostic at the op.

// RUN: rm -rf %t && not qattn-compile %s -o %t --allow-unquantized 2>&1 | FileCheck %s --implicit-check-not=error:
// RUN: not test -e %t

func.func @softmax_on_buffers(%x: tensor<4x10xf32>) -> tensor<4x10xf32> {
  %in = bufferization.to_buffer %x : tensor<4x10xf32> to memref<4x10xf32>
  %out = memref.alloc() : memref<4x10xf32>
  // CHECK: cpu-artifact-unraised-buffers.mlir:[[@LINE+1]]:3: error: 'linalg.softmax' op on buffers cannot be compiled for the CPU; write it on tensors (qattn-compile bufferizes)
  linalg.softmax dimension(1) ins(%in : memref<4x10xf32>) outs(%out : memref<4x10xf32>)
  %y = bufferization.to_tensor %out : memref<4x10xf32> to tensor<4x10xf32>
  return %y : tensor<4x10xf32>
}
