// RUN: rm -rf %t && qattn-compile %s -o %t | FileCheck %s --check-prefix=OUT
// RUN: FileCheck %s --input-file=%t/manifest.json

// Functions of dynamically shaped tensors: each `?` is named by qattn.dims,
// and the manifest's shapes carry those names where the sizes would be.
// OUT: wrote {{.*}}/manifest.json and {{.*}}/module.so

// Dot products of one query per (batch, head) with every key of a cache:
// the batch B and the cache length N vary from call to call.
// CHECK: "args": [
// CHECK-NEXT: {
// CHECK-NEXT: "dtype": "f32",
// CHECK-NEXT: "name": "q",
// CHECK-NEXT: "shape": [
// CHECK-NEXT: "B",
// CHECK-NEXT: 2,
// CHECK-NEXT: 16
// CHECK-NEXT: ]
// CHECK: "name": "k",
// CHECK-NEXT: "shape": [
// CHECK-NEXT: "B",
// CHECK-NEXT: 2,
// CHECK-NEXT: "N",
// CHECK-NEXT: 16
// CHECK-NEXT: ]
// CHECK: "name": "scores",
// CHECK: "kind": "none"
// CHECK: "results": [
// CHECK-NEXT: {
// CHECK-NEXT: "dtype": "f32",
// CHECK-NEXT: "name": "s",
// CHECK-NEXT: "shape": [
// CHECK-NEXT: "B",
// CHECK-NEXT: 2,
// CHECK-NEXT: "N"
// CHECK-NEXT: ]
// CHECK: "symbol": "_mlir_ciface_scores"
func.func @scores(%q: tensor<?x2x16xf32> {qattn.name = "q", qattn.dims = ["B", "", ""]},
                  %k: tensor<?x2x?x16xf32> {qattn.name = "k", qattn.dims = ["B", "", "N", ""]})
    -> (tensor<?x2x?xf32> {qattn.name = "s", qattn.dims = ["B", "", "N"]}) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %b = tensor.dim %k, %c0 : tensor<?x2x?x16xf32>
  %n = tensor.dim %k, %c2 : tensor<?x2x?x16xf32>
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty(%b, %n) : tensor<?x2x?xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<?x2x?xf32>) -> tensor<?x2x?xf32>
  %s = linalg.generic {
      indexing_maps = [affine_map<(b, h, n, d) -> (b, h, d)>,
                       affine_map<(b, h, n, d) -> (b, h, n, d)>,
                       affine_map<(b, h, n, d) -> (b, h, n)>],
      iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<?x2x16xf32>, tensor<?x2x?x16xf32>)
      outs(%init : tensor<?x2x?xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<?x2x?xf32>
  return %s : tensor<?x2x?xf32>
}

// Static and symbolic sizes mix; a static tensor needs no qattn.dims, and
// one whose entries are all "" is static too.
// CHECK: "name": "add_bias",
// CHECK: "results": [
// CHECK-NEXT: {
// CHECK-NEXT: "dtype": "f32",
// CHECK-NEXT: "name": "result0",
// CHECK-NEXT: "shape": [
// CHECK-NEXT: "B",
// CHECK-NEXT: 8
// CHECK-NEXT: ]
func.func @add_bias(%x: tensor<?x8xf32> {qattn.name = "x", qattn.dims = ["B", ""]},
                    %bias: tensor<8xf32> {qattn.name = "bias", qattn.dims = [""]})
    -> (tensor<?x8xf32> {qattn.dims = ["B", ""]}) {
  %c0 = arith.constant 0 : index
  %b = tensor.dim %x, %c0 : tensor<?x8xf32>
  %empty = tensor.empty(%b) : tensor<?x8xf32>
  %broadcast = linalg.broadcast ins(%bias : tensor<8xf32>) outs(%empty : tensor<?x8xf32>) dimensions = [0]
  %empty2 = tensor.empty(%b) : tensor<?x8xf32>
  %y = linalg.add ins(%x, %broadcast : tensor<?x8xf32>, tensor<?x8xf32>) outs(%empty2 : tensor<?x8xf32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}
