// RUN: not qattn-compile %s -o %t 2>&1 | FileCheck %s
// RUN: not qattn-compile %s -o %t --target=cuda --no-cubin 2>&1 \
// RUN:   | FileCheck %s --check-prefix=CUDA
// RUN: not qattn-compile %S/cpu-artifact-dims.mlir -o %t --target=cuda \
// RUN:   --no-cubin 2>&1 | FileCheck %s --check-prefix=CUDA-VALID

// Every rule of qattn.dims (docs/ARTIFACT.md), one function each: the
// compiler reports each function's first problem at the function.

// CHECK: cpu-artifact-dims-errors.mlir:[[@LINE+1]]:1: error: dimension 0 of arg 0 ('tensor<?x8xf32>') is dynamic: name its size in qattn.dims (an array with a symbol such as "B" for each dynamic dimension and "" for each static one)
func.func @no_dims(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  return %x : tensor<?x8xf32>
}

// CHECK: cpu-artifact-dims-errors.mlir:[[@LINE+1]]:1: error: dimension 1 of arg 0 ('tensor<?x?xf32>') is dynamic: name its size in qattn.dims
func.func @unnamed(%x: tensor<?x?xf32> {qattn.dims = ["B", ""]}) -> (tensor<?x?xf32> {qattn.dims = ["B", "N"]}) {
  return %x : tensor<?x?xf32>
}

// CHECK: cpu-artifact-dims-errors.mlir:[[@LINE+1]]:1: error: qattn.dims of arg 0 names static dimension 1 (size 8) "D"; static dimensions take ""
func.func @named_static(%x: tensor<?x8xf32> {qattn.dims = ["B", "D"]}) -> (tensor<?x8xf32> {qattn.dims = ["B", ""]}) {
  return %x : tensor<?x8xf32>
}

// CHECK: cpu-artifact-dims-errors.mlir:[[@LINE+1]]:1: error: qattn.dims of result 0 has 1 entry, but its type 'tensor<?x8xf32>' has rank 2
func.func @too_short(%x: tensor<?x8xf32> {qattn.dims = ["B", ""]}) -> (tensor<?x8xf32> {qattn.dims = ["B"]}) {
  return %x : tensor<?x8xf32>
}

// CHECK: cpu-artifact-dims-errors.mlir:[[@LINE+1]]:1: error: qattn.dims of arg 1 has 3 entries, but its type 'tensor<?x8xf32>' has rank 2
func.func @too_long(%x: tensor<?x8xf32> {qattn.dims = ["B", ""]}, %y: tensor<?x8xf32> {qattn.dims = ["B", "", ""]}) -> (tensor<?x8xf32> {qattn.dims = ["B", ""]}) {
  return %x : tensor<?x8xf32>
}

// CHECK: cpu-artifact-dims-errors.mlir:[[@LINE+1]]:1: error: qattn.dims of arg 0: "2B" (dimension 0) is not an identifier (a letter or '_', then letters, digits or '_')
func.func @not_identifier(%x: tensor<?x8xf32> {qattn.dims = ["2B", ""]}) -> (tensor<?x8xf32> {qattn.dims = ["B", ""]}) {
  return %x : tensor<?x8xf32>
}

// CHECK: cpu-artifact-dims-errors.mlir:[[@LINE+1]]:1: error: qattn.dims of arg 0: "B-1" (dimension 0) is not an identifier
func.func @not_identifier_dash(%x: tensor<?x8xf32> {qattn.dims = ["B-1", ""]}) -> (tensor<?x8xf32> {qattn.dims = ["B", ""]}) {
  return %x : tensor<?x8xf32>
}

// CHECK: cpu-artifact-dims-errors.mlir:[[@LINE+1]]:1: error: qattn.dims of arg 0 must be an array of strings, got [1, ""]
func.func @not_strings(%x: tensor<?x8xf32> {qattn.dims = [1, ""]}) -> (tensor<?x8xf32> {qattn.dims = ["B", ""]}) {
  return %x : tensor<?x8xf32>
}

// CHECK: cpu-artifact-dims-errors.mlir:[[@LINE+1]]:1: error: dimension 0 of result 0 has size "M", which no argument defines: results are allocated by the caller, so their sizes must follow from the arguments'
func.func @undefined_result_symbol(%x: tensor<?x8xf32> {qattn.dims = ["B", ""]}) -> (tensor<?x8xf32> {qattn.dims = ["M", ""]}) {
  return %x : tensor<?x8xf32>
}

// CHECK: cpu-artifact-dims-errors.mlir:[[@LINE+1]]:1: error: cannot export arg 0 of type 'tensor<*xf32>': artifacts take ranked tensors of f64/f32/f16/bf16/i64/i32/i8
func.func @unranked(%x: tensor<*xf32>) -> tensor<*xf32> {
  return %x : tensor<*xf32>
}

// CHECK-NOT: error:

// Target cuda checks qattn.dims the same way. With the dimensions named, it
// takes the functions, but their host code must become launches
// (cuda-artifact-dims.mlir): a linalg op left on the host is refused.
// CUDA: error: dimension 0 of arg 0 ('tensor<?x8xf32>') is dynamic
// CUDA-VALID: cpu-artifact-dims.mlir:{{[0-9]+}}:{{[0-9]+}}: error: 'linalg.fill' op cannot be expressed in a cuda artifact's manifest (the host side may only allocate buffers and launch kernels)
