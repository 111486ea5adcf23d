// RUN: qattn-opt %s --qattn-reference-to-llvm | FileCheck %s --implicit-check-not=qattn. --implicit-check-not=memref. --implicit-check-not=scf.

// The whole CPU pipeline: only the LLVM dialect is left, the result became a
// trailing out-parameter, and the C entry point takes descriptors by pointer.
// CHECK-LABEL: llvm.func @roundtrip(
// CHECK-SAME: %{{.*}}: !llvm.ptr
// CHECK: llvm.intr.round
// CHECK-LABEL: llvm.func @_mlir_ciface_roundtrip(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr)
// CHECK-SAME: llvm.emit_c_interface
func.func @roundtrip(%x: tensor<1x2x37x16xbf16>) -> tensor<1x2x37x16xbf16> {
  %q, %s = qattn.quantize %x {scheme = #qattn.stage1<block = 16>} : tensor<1x2x37x16xbf16> -> tensor<1x2x37x16xi8>, tensor<1x2x3xf32>
  %y = qattn.dequantize %q, %s {scheme = #qattn.stage1<block = 16>} : tensor<1x2x37x16xi8>, tensor<1x2x3xf32> -> tensor<1x2x37x16xbf16>
  return %y : tensor<1x2x37x16xbf16>
}
