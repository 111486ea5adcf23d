// RUN: not qattn-compile %s -o %t 2>&1 | FileCheck %s
// RUN: not qattn-compile %s.missing -o %t 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not qattn-compile %s -o %t --target=tpu 2>&1 | FileCheck %s --check-prefix=TARGET
// RUN: echo "func.func private @f()" > %t.decl.mlir
// RUN: not qattn-compile %t.decl.mlir -o %t 2>&1 | FileCheck %s --check-prefix=EMPTY

// CHECK: cpu-artifact-errors.mlir:[[@LINE+1]]:1: error: cannot export arg 1 of type 'index': artifacts take ranked tensors of f64/f32/f16/bf16/i64/i32/i8
func.func @f(%x: tensor<4xf32>, %i: index) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// An empty tensor, which qattn-run would refuse (qattn-compile wrote its
// manifest before).
// CHECK: cpu-artifact-errors.mlir:[[@LINE+1]]:1: error: cannot export arg 0 of type 'tensor<0x8xf32>': dimension 0 has size 0; artifacts take tensors of positive sizes
func.func @empty(%x: tensor<0x8xf32>) -> tensor<0x8xf32> {
  return %x : tensor<0x8xf32>
}

// MISSING: qattn-compile: error: cannot open input file '{{.*}}.missing'
// TARGET: qattn-compile: error: unknown target 'tpu' (available: cpu, cuda)
// EMPTY: error: no public function to export
