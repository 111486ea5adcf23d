// RUN: rm -rf %t && qattn-compile %s -o %t --emit-llvm | FileCheck %s --check-prefix=OUT
// RUN: FileCheck %s --input-file=%t/manifest.json
// RUN: ls %t | FileCheck %s --check-prefix=FILES
// RUN: FileCheck %s --input-file=%t/module.ll --check-prefix=LL
// The manifest's library_sha256 is the library's, and the library states each
// entry point's signature (docs/ARTIFACT.md, "Verifying an artifact").
// RUN: %python -c "import hashlib, json, sys; d = sys.argv[1]; m = json.load(open(d + '/manifest.json')); print('sha256', 'ok' if m['library_sha256'] == hashlib.sha256(open(d + '/module.so', 'rb').read()).hexdigest() else 'differs')" %t | FileCheck %s --check-prefix=SHA
// RUN: FileCheck %s --input-file=%t/module.ll --check-prefix=SIG

// OUT: wrote {{.*}}/manifest.json and {{.*}}/module.so
// FILES: manifest.json
// FILES-NEXT: module.ll
// FILES-NEXT: module.so
// LL: define void @_mlir_ciface_attention(ptr {{.*}}, ptr {{.*}}, ptr {{.*}}, ptr {{.*}})
// SHA: sha256 ok
// SIG-DAG: @qattn_signature._mlir_ciface_attention = constant [{{[0-9]+}} x i8] c"(f16[1,4,5,16], f32[1,2,37,16], f32[1,2,37,16]) -> (f32[1,4,5,16])\00", align 1
// SIG-DAG: @qattn_signature._mlir_ciface_stage1_roundtrip = constant [{{[0-9]+}} x i8] c"(f32[1,1,20,8]) -> (i8[1,1,20,8], f32[1,1,20,8])\00", align 1

// The manifest names arguments, gives dtypes and shapes, and recognizes an
// attention whose operands trace back to float arguments through quantization.
// CHECK: "format": "qattn-artifact"
// CHECK: "args": [
// CHECK: "dtype": "f16",
// CHECK-NEXT: "name": "q",
// CHECK: "name": "k",
// CHECK: "name": "arg2",
// CHECK: "name": "attention",
// CHECK: "reference": {
// CHECK-NEXT: "causal": true,
// CHECK-NEXT: "k": 1,
// CHECK-NEXT: "kind": "attention",
// CHECK-NEXT: "q": 0,
// CHECK-NEXT: "result": 0,
// CHECK-NEXT: "scale": 0.25,
// CHECK-NEXT: "v": 2
// CHECK: "results": [
// CHECK: "dtype": "f32",
// CHECK-NEXT: "name": "result0",
// CHECK: "symbol": "_mlir_ciface_attention"
// CHECK: "name": "stage1_roundtrip",
// CHECK: "reference": {
// CHECK-NEXT: "kind": "roundtrip",
// CHECK-NEXT: "pairs": [
// CHECK-NEXT: {
// CHECK-NEXT: "arg": 0,
// CHECK-NEXT: "result": 1
// CHECK: "name": "codes_only",
// CHECK: "reference": {
// CHECK-NEXT: "kind": "none"
// CHECK: "library": "module.so",
// CHECK-NEXT: "library_sha256": "{{[0-9a-f]+}}",
// CHECK: "target": "cpu",
// CHECK: "version": 1
// CHECK-NOT: helper

func.func @attention(%q: tensor<1x4x5x16xf16> {qattn.name = "q"}, %k: tensor<1x2x37x16xf32> {qattn.name = "k"},
                     %v: tensor<1x2x37x16xf32>) -> tensor<1x4x5x16xf32> {
  %k8, %ks = qattn.quantize %k {scheme = #qattn.stage1<block = 16>} : tensor<1x2x37x16xf32> -> tensor<1x2x37x16xi8>, tensor<1x2x3xf32>
  %kp, %ks2, %kz2 = qattn.progressive_quantize %k8 {scheme = #qattn.stage2<bits = [4], group = 8>} : tensor<1x2x37x16xi8> -> tensor<1x37x16xi8>, tensor<1x2x5x16xi8>, tensor<1x2x5x16xi8>
  %v8, %vs = qattn.quantize %v {scheme = #qattn.stage1<block = 16>} : tensor<1x2x37x16xf32> -> tensor<1x2x37x16xi8>, tensor<1x2x3xf32>
  %o = qattn.attention %q keys(%kp, %ks, %ks2, %kz2) values(%v8, %vs) {k_stage1 = #qattn.stage1<block = 16>, k_stage2 = #qattn.stage2<bits = [4], group = 8>, v_stage1 = #qattn.stage1<block = 16>, causal}
      : (tensor<1x4x5x16xf16>, tensor<1x37x16xi8>, tensor<1x2x3xf32>, tensor<1x2x5x16xi8>, tensor<1x2x5x16xi8>, tensor<1x2x37x16xi8>, tensor<1x2x3xf32>) -> tensor<1x4x5x16xf32>
  return %o : tensor<1x4x5x16xf32>
}

func.func @stage1_roundtrip(%x: tensor<1x1x20x8xf32>) -> (tensor<1x1x20x8xi8>, tensor<1x1x20x8xf32>) {
  %q, %s = qattn.quantize %x {scheme = #qattn.stage1<block = 8>} : tensor<1x1x20x8xf32> -> tensor<1x1x20x8xi8>, tensor<1x1x3xf32>
  %y = qattn.dequantize %q, %s {scheme = #qattn.stage1<block = 8>} : tensor<1x1x20x8xi8>, tensor<1x1x3xf32> -> tensor<1x1x20x8xf32>
  return %q, %y : tensor<1x1x20x8xi8>, tensor<1x1x20x8xf32>
}

func.func @codes_only(%q8: tensor<1x1x20x8xi8>) -> tensor<1x20x4xi8> {
  %p, %s, %z = qattn.progressive_quantize %q8 {scheme = #qattn.stage2<bits = [4], group = 8>} : tensor<1x1x20x8xi8> -> tensor<1x20x4xi8>, tensor<1x1x3x8xi8>, tensor<1x1x3x8xi8>
  return %p : tensor<1x20x4xi8>
}

func.func private @helper(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
