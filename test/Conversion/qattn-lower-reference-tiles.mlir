// RUN: qattn-opt %s -split-input-file --qattn-lower-reference --canonicalize | FileCheck %s --implicit-check-not=qattn.

// A paged tile load reads a key (and its page table entry) only below the
// bound; the rest of the tile stays 0.
// CHECK-LABEL: func.func @load_paged
// CHECK: scf.for %[[T:.*]] =
// CHECK:   %[[J:.*]] = arith.addi %{{.*}}, %[[T]] : index
// CHECK:   %[[IN:.*]] = arith.cmpi ult, %[[J]], %{{.*}} : index
// CHECK:   scf.if %[[IN]] {
// CHECK:     %[[SLOT:.*]] = arith.divui %[[J]], %{{.*}} : index
// CHECK:     tensor.extract %{{.*}}[%{{.*}}, %[[SLOT]]] : tensor<?x?xi32>
// CHECK:     arith.remui %[[J]], %{{.*}} : index
func.func @load_paged(%k: tensor<?x2x32x16xi8>, %ks: tensor<?x2x4xf32>, %t: tensor<?x?xi32>, %b: index, %hk: index, %j: index, %end: index) -> (tensor<16x16xi8>, tensor<16xf32>) {
  %d, %s = qattn.load_kv_tile %k, %ks [%b, %hk, %j] bound %end pages(%t : tensor<?x?xi32>) {keys = 16, stage1 = #qattn.stage1<block = 8>}
      : (tensor<?x2x32x16xi8>, tensor<?x2x4xf32>) -> (tensor<16x16xi8>, tensor<16xf32>)
  return %d, %s : tensor<16x16xi8>, tensor<16xf32>
}

// -----

// Scores: -inf where the key is at or past the bound, or (causal) past
// i + length - queries, as key + queries <= i + length.
// CHECK-LABEL: func.func @scores
// CHECK-DAG: %[[NINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK: arith.cmpi ult
// CHECK: arith.cmpi ult
// CHECK: arith.cmpi ule
// CHECK: arith.mulf
// CHECK: arith.select %{{.*}}, %{{.*}}, %[[NINF]] : f32
func.func @scores(%q: tensor<16x16xf32>, %k: tensor<16x16xf32>, %rt: index, %j: index, %end: index, %len: index) -> tensor<16x16xf32> {
  %s = qattn.tile_scores %q, %k [%rt, %j] bound %end length %len {scale = 0.25 : f32, group = 2, queries = 2, causal} : tensor<16x16xf32>, tensor<16x16xf32> -> tensor<16x16xf32>
  return %s : tensor<16x16xf32>
}

// -----

// The online softmax step: the new max, the correction exp(m - ref) and the
// terms exp(s - ref) against a finite reference.
// CHECK-LABEL: func.func @update
// CHECK: arith.maximumf
// CHECK: arith.cmpf oeq
// CHECK: math.exp
// CHECK: arith.mulf
func.func @update(%s: tensor<16x16xf32>, %v: tensor<16x16xf32>, %m: tensor<16xf32>, %l: tensor<16xf32>, %a: tensor<16x16xf32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<16x16xf32>) {
  %m1, %l1, %a1 = qattn.softmax_update %s, %v, %m, %l, %a : tensor<16x16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16x16xf32>
  return %m1, %l1, %a1 : tensor<16xf32>, tensor<16xf32>, tensor<16x16xf32>
}

// -----

// lazy_max: the reference moves to the running max only past old + T.
// CHECK-LABEL: func.func @lazy_update
// CHECK-DAG: %[[T:.*]] = arith.constant 2.500000e+00 : f32
// CHECK: %[[OLD:.*]] = tensor.extract
// CHECK: %[[TMAX:.*]] = scf.for {{.*}} iter_args(%{{.*}} = %[[OLD]])
// CHECK: arith.maximumf
// CHECK: %[[BAR:.*]] = arith.addf %[[OLD]], %[[T]] : f32
// CHECK: %[[PAST:.*]] = arith.cmpf ogt, %[[TMAX]], %[[BAR]] : f32
// CHECK: arith.select %[[PAST]], %[[TMAX]], %[[OLD]] : f32
// CHECK: math.exp
func.func @lazy_update(%s: tensor<16x16xf32>, %v: tensor<16x16xf32>, %m: tensor<16xf32>, %l: tensor<16xf32>, %a: tensor<16x16xf32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<16x16xf32>) {
  %m1, %l1, %a1 = qattn.softmax_update %s, %v, %m, %l, %a {lazy_max = 2.5 : f32} : tensor<16x16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16x16xf32>
  return %m1, %l1, %a1 : tensor<16xf32>, tensor<16xf32>, tensor<16x16xf32>
}

// -----

// The combine: rows no split saw (max -inf) are 0.
// CHECK-LABEL: func.func @combine
// CHECK: arith.cmpf one
// CHECK: arith.divf
// CHECK: arith.select
// CHECK: arith.truncf %{{.*}} : f32 to f16
func.func @combine(%acc: tensor<?x2x1x4x16x16xf32>, %m: tensor<?x2x1x4x16xf32>, %l: tensor<?x2x1x4x16xf32>) -> tensor<?x4x2x16xf16> {
  %o = qattn.combine_splits %acc, %m, %l {group = 2} : tensor<?x2x1x4x16x16xf32>, tensor<?x2x1x4x16xf32>, tensor<?x2x1x4x16xf32> -> tensor<?x4x2x16xf16>
  return %o : tensor<?x4x2x16xf16>
}
