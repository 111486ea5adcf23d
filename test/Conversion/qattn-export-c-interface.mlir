// RUN: qattn-opt %s --qattn-export-c-interface | FileCheck %s

// Public definitions get a C entry point; private ones and declarations don't.
// CHECK-LABEL: func.func @public
// CHECK-SAME: attributes {llvm.emit_c_interface}
func.func @public(%x: memref<4xf32>) { return }

// CHECK-LABEL: func.func private @helper
// CHECK-NOT: llvm.emit_c_interface
func.func private @helper(%x: memref<4xf32>) { return }

// CHECK-LABEL: func.func private @external
// CHECK-NOT: llvm.emit_c_interface
func.func private @external(%x: memref<4xf32>)
