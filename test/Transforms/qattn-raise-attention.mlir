// RUN: qattn-opt %s -split-input-file --qattn-raise-attention | FileCheck %s
// RUN: qattn-opt %s -split-input-file --qattn-raise-attention="k-bits=8 v-bits=2 block=32 group=32 anchor=min fit=mse quantize-q=true" | FileCheck %s --check-prefix=OPTS

#q = affine_map<(b, h, i, j, c) -> (b, h, i, c)>
#k = affine_map<(b, h, i, j, c) -> (b, h, j, c)>
#s = affine_map<(b, h, i, j, c) -> (b, h, i, j)>
#p = affine_map<(b, h, i, c, j) -> (b, h, i, j)>
#v = affine_map<(b, h, i, c, j) -> (b, h, j, c)>
#o = affine_map<(b, h, i, c, j) -> (b, h, i, c)>
#e = affine_map<(b, h, i, j) -> (b, h, i, j)>

// CHECK-LABEL: func.func @plain(
// CHECK-SAME:    %[[Q:[^:]+]]: tensor<1x2x16x64xf32>, %[[K:[^:]+]]: tensor<1x2x64x64xf32>, %[[V:[^:]+]]: tensor<1x2x64x64xf32>
// CHECK-NOT:     linalg.
// CHECK:         %[[K8:[^,]+]], %[[KS:[^ ]+]] = qattn.quantize %[[K]] {scheme = #qattn.stage1<block = 64>} : tensor<1x2x64x64xf32> -> tensor<1x2x64x64xi8>
// CHECK:         %[[KP:[^,]+]], %[[KG:[^,]+]], %[[KZ:[^ ]+]] = qattn.progressive_quantize %[[K8]] {scheme = #qattn.stage2<bits = [4], group = 16>}
// CHECK-SAME:      -> tensor<1x64x64xi8>, tensor<1x2x4x64xi8>, tensor<1x2x4x64xi8>
// CHECK:         %[[V8:[^,]+]], %[[VS:[^ ]+]] = qattn.quantize %[[V]] {scheme = #qattn.stage1<block = 64>}
// CHECK:         %[[VP:[^,]+]], %[[VG:[^,]+]], %[[VZ:[^ ]+]] = qattn.progressive_quantize %[[V8]] {scheme = #qattn.stage2<bits = [4], group = 16>}
// CHECK:         %[[O:.+]] = qattn.attention %[[Q]] keys(%[[KP]], %[[KS]], %[[KG]], %[[KZ]]) values(%[[VP]], %[[VS]], %[[VG]], %[[VZ]])
// CHECK-SAME:      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4], group = 16>, scale = 1.000000e+00 : f32, v_stage1
// CHECK-NOT:     linalg.
// CHECK:         return %[[O]]

// Q int8 too, K stage 1 only, V 2-bit anchored at the minimum and fit by MSE.
// OPTS-LABEL: func.func @plain(
// OPTS-SAME:    %[[Q:[^:]+]]: tensor<1x2x16x64xf32>, %[[K:[^:]+]]: tensor<1x2x64x64xf32>, %[[V:[^:]+]]: tensor<1x2x64x64xf32>
// OPTS:         %[[Q8:[^,]+]], %[[QS:[^ ]+]] = qattn.quantize %[[Q]] {scheme = #qattn.stage1<block = 32>} : tensor<1x2x16x64xf32> -> tensor<1x2x16x64xi8>, tensor<1x2x1xf32>
// OPTS:         %[[K8:[^,]+]], %[[KS:[^ ]+]] = qattn.quantize %[[K]] {scheme = #qattn.stage1<block = 32>} : tensor<1x2x64x64xf32> -> tensor<1x2x64x64xi8>, tensor<1x2x2xf32>
// OPTS:         %[[V8:[^,]+]], %[[VS:[^ ]+]] = qattn.quantize %[[V]]
// OPTS-NOT:     progressive_quantize %[[K8]]
// OPTS:         %[[VP:[^,]+]], %[[VG:[^,]+]], %[[VZ:[^ ]+]] = qattn.progressive_quantize %[[V8]] {fit = #qattn.fit<mse>, scheme = #qattn.stage2<bits = [2], group = 32, anchor = min>}
// OPTS-SAME:      -> tensor<1x64x32xi8>, tensor<1x2x2x64xi8>, tensor<1x2x2x64xi8>
// OPTS:         qattn.attention %[[Q8]][%[[QS]]] keys(%[[K8]], %[[KS]]) values(%[[VP]], %[[VS]], %[[VG]], %[[VZ]])
// OPTS-SAME:      {k_stage1 = #qattn.stage1<block = 32>, q_stage1 = #qattn.stage1<block = 32>, scale = 1.000000e+00 : f32, v_stage1 = #qattn.stage1<block = 32>, v_stage2 = #qattn.stage2<bits = [2], group = 32, anchor = min>}
// No scale, no mask: scale = 1.
func.func @plain(%q: tensor<1x2x16x64xf32>, %k: tensor<1x2x64x64xf32>, %v: tensor<1x2x64x64xf32>) -> tensor<1x2x16x64xf32> {
  %zero = arith.constant 0.0 : f32
  %s_init = tensor.empty() : tensor<1x2x16x64xf32>
  %s_zero = linalg.fill ins(%zero : f32) outs(%s_init : tensor<1x2x16x64xf32>) -> tensor<1x2x16x64xf32>
  %s = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<1x2x16x64xf32>, tensor<1x2x64x64xf32>) outs(%s_zero : tensor<1x2x16x64xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x16x64xf32>
  %p_init = tensor.empty() : tensor<1x2x16x64xf32>
  %p = linalg.softmax dimension(3) ins(%s : tensor<1x2x16x64xf32>) outs(%p_init : tensor<1x2x16x64xf32>) -> tensor<1x2x16x64xf32>
  %o_init = tensor.empty() : tensor<1x2x16x64xf32>
  %o_zero = linalg.fill ins(%zero : f32) outs(%o_init : tensor<1x2x16x64xf32>) -> tensor<1x2x16x64xf32>
  %o = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<1x2x16x64xf32>, tensor<1x2x64x64xf32>) outs(%o_zero : tensor<1x2x16x64xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x16x64xf32>
  return %o : tensor<1x2x16x64xf32>
}

// -----

#q = affine_map<(b, h, i, j, c) -> (b, h, i, c)>
#k = affine_map<(b, h, i, j, c) -> (b, h, j, c)>
#s = affine_map<(b, h, i, j, c) -> (b, h, i, j)>
#p = affine_map<(b, h, i, c, j) -> (b, h, i, j)>
#v = affine_map<(b, h, i, c, j) -> (b, h, j, c)>
#o = affine_map<(b, h, i, c, j) -> (b, h, i, c)>
#e = affine_map<(b, h, i, j) -> (b, h, i, j)>

// CHECK-LABEL: func.func @scaled(
// CHECK-SAME:    %[[Q:[^:]+]]: tensor<2x4x5x64xf32>, %[[K:[^:]+]]: tensor<2x4x1000x64xf32>, %[[V:[^:]+]]: tensor<2x4x1000x64xf32>
// CHECK-NOT:     linalg.
// CHECK:         %[[K8:[^,]+]], %[[KS:[^ ]+]] = qattn.quantize %[[K]] {scheme = #qattn.stage1<block = 64>} : tensor<2x4x1000x64xf32> -> tensor<2x4x1000x64xi8>
// CHECK:         %[[KP:[^,]+]], %[[KG:[^,]+]], %[[KZ:[^ ]+]] = qattn.progressive_quantize %[[K8]] {scheme = #qattn.stage2<bits = [4], group = 16>}
// CHECK-SAME:      -> tensor<2x1000x128xi8>, tensor<2x4x63x64xi8>, tensor<2x4x63x64xi8>
// CHECK:         %[[V8:[^,]+]], %[[VS:[^ ]+]] = qattn.quantize %[[V]] {scheme = #qattn.stage1<block = 64>}
// CHECK:         %[[VP:[^,]+]], %[[VG:[^,]+]], %[[VZ:[^ ]+]] = qattn.progressive_quantize %[[V8]] {scheme = #qattn.stage2<bits = [4], group = 16>}
// CHECK:         %[[O:.+]] = qattn.attention %[[Q]] keys(%[[KP]], %[[KS]], %[[KG]], %[[KZ]]) values(%[[VP]], %[[VS]], %[[VG]], %[[VZ]])
// CHECK-SAME:      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4], group = 16>, scale = 1.250000e-01 : f32, v_stage1
// CHECK-NOT:     linalg.
// CHECK:         return %[[O]]
// The scale as an elementwise multiply by a constant; Nk = 1000 is a multiple of neither the block nor the group.
func.func @scaled(%q: tensor<2x4x5x64xf32>, %k: tensor<2x4x1000x64xf32>, %v: tensor<2x4x1000x64xf32>) -> tensor<2x4x5x64xf32> {
  %zero = arith.constant 0.0 : f32
  %s_init = tensor.empty() : tensor<2x4x5x1000xf32>
  %s_zero = linalg.fill ins(%zero : f32) outs(%s_init : tensor<2x4x5x1000xf32>) -> tensor<2x4x5x1000xf32>
  %s = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<2x4x5x64xf32>, tensor<2x4x1000x64xf32>) outs(%s_zero : tensor<2x4x5x1000xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x4x5x1000xf32>
  %c = arith.constant 0.125 : f32
  %t_init = tensor.empty() : tensor<2x4x5x1000xf32>
  %t = linalg.generic {indexing_maps = [#e, #e], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s : tensor<2x4x5x1000xf32>) outs(%t_init : tensor<2x4x5x1000xf32>) {
  ^bb0(%x: f32, %out: f32):
    %y = arith.mulf %x, %c : f32
    linalg.yield %y : f32
  } -> tensor<2x4x5x1000xf32>
  %p_init = tensor.empty() : tensor<2x4x5x1000xf32>
  %p = linalg.softmax dimension(3) ins(%t : tensor<2x4x5x1000xf32>) outs(%p_init : tensor<2x4x5x1000xf32>) -> tensor<2x4x5x1000xf32>
  %o_init = tensor.empty() : tensor<2x4x5x64xf32>
  %o_zero = linalg.fill ins(%zero : f32) outs(%o_init : tensor<2x4x5x64xf32>) -> tensor<2x4x5x64xf32>
  %o = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<2x4x5x1000xf32>, tensor<2x4x1000x64xf32>) outs(%o_zero : tensor<2x4x5x64xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x4x5x64xf32>
  return %o : tensor<2x4x5x64xf32>
}

// -----

#q = affine_map<(b, h, i, j, c) -> (b, h, i, c)>
#k = affine_map<(b, h, i, j, c) -> (b, h, j, c)>
#s = affine_map<(b, h, i, j, c) -> (b, h, i, j)>
#p = affine_map<(b, h, i, c, j) -> (b, h, i, j)>
#v = affine_map<(b, h, i, c, j) -> (b, h, j, c)>
#o = affine_map<(b, h, i, c, j) -> (b, h, i, c)>
#e = affine_map<(b, h, i, j) -> (b, h, i, j)>

// CHECK-LABEL: func.func @folded_f16_d128(
// CHECK-SAME:    %[[Q:[^:]+]]: tensor<1x2x8x128xf16>, %[[K:[^:]+]]: tensor<1x2x1000x128xf16>, %[[V:[^:]+]]: tensor<1x2x1000x128xf16>
// CHECK-NOT:     linalg.
// CHECK:         %[[K8:[^,]+]], %[[KS:[^ ]+]] = qattn.quantize %[[K]] {scheme = #qattn.stage1<block = 64>} : tensor<1x2x1000x128xf16> -> tensor<1x2x1000x128xi8>
// CHECK:         %[[KP:[^,]+]], %[[KG:[^,]+]], %[[KZ:[^ ]+]] = qattn.progressive_quantize %[[K8]] {scheme = #qattn.stage2<bits = [4], group = 16>}
// CHECK-SAME:      -> tensor<1x1000x128xi8>, tensor<1x2x63x128xi8>, tensor<1x2x63x128xi8>
// CHECK:         %[[V8:[^,]+]], %[[VS:[^ ]+]] = qattn.quantize %[[V]] {scheme = #qattn.stage1<block = 64>}
// CHECK:         %[[VP:[^,]+]], %[[VG:[^,]+]], %[[VZ:[^ ]+]] = qattn.progressive_quantize %[[V8]] {scheme = #qattn.stage2<bits = [4], group = 16>}
// CHECK:         %[[O:.+]] = qattn.attention %[[Q]] keys(%[[KP]], %[[KS]], %[[KG]], %[[KZ]]) values(%[[VP]], %[[VS]], %[[VG]], %[[VZ]])
// CHECK-SAME:      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4], group = 16>, scale = 0.0883883461 : f32, v_stage1
// CHECK-NOT:     linalg.
// CHECK:         return %[[O]]
// f16 operands widened in the bodies, the scale folded into QK^T as a division by sqrt(128).
func.func @folded_f16_d128(%q: tensor<1x2x8x128xf16>, %k: tensor<1x2x1000x128xf16>, %v: tensor<1x2x1000x128xf16>) -> tensor<1x2x8x128xf32> {
  %zero = arith.constant 0.0 : f32
  %s_init = tensor.empty() : tensor<1x2x8x1000xf32>
  %s_zero = linalg.fill ins(%zero : f32) outs(%s_init : tensor<1x2x8x1000xf32>) -> tensor<1x2x8x1000xf32>
  %s = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<1x2x8x128xf16>, tensor<1x2x1000x128xf16>) outs(%s_zero : tensor<1x2x8x1000xf32>) {
  ^bb0(%a: f16, %b: f16, %acc: f32):
    %c = arith.constant 11.3137085 : f32
    %aw = arith.extf %a : f16 to f32
    %bw = arith.extf %b : f16 to f32
    %m = arith.mulf %aw, %bw : f32
    %ms = arith.divf %m, %c : f32
    %r = arith.addf %acc, %ms : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x1000xf32>
  %p_init = tensor.empty() : tensor<1x2x8x1000xf32>
  %p = linalg.softmax dimension(3) ins(%s : tensor<1x2x8x1000xf32>) outs(%p_init : tensor<1x2x8x1000xf32>) -> tensor<1x2x8x1000xf32>
  %o_init = tensor.empty() : tensor<1x2x8x128xf32>
  %o_zero = linalg.fill ins(%zero : f32) outs(%o_init : tensor<1x2x8x128xf32>) -> tensor<1x2x8x128xf32>
  %o = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<1x2x8x1000xf32>, tensor<1x2x1000x128xf16>) outs(%o_zero : tensor<1x2x8x128xf32>) {
  ^bb0(%a: f32, %b: f16, %acc: f32):
    %bw = arith.extf %b : f16 to f32
    %m = arith.mulf %a, %bw : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x128xf32>
  return %o : tensor<1x2x8x128xf32>
}

// -----

#q = affine_map<(b, h, i, j, c) -> (b, h, i, c)>
#k = affine_map<(b, h, i, j, c) -> (b, h, j, c)>
#s = affine_map<(b, h, i, j, c) -> (b, h, i, j)>
#p = affine_map<(b, h, i, c, j) -> (b, h, i, j)>
#v = affine_map<(b, h, i, c, j) -> (b, h, j, c)>
#o = affine_map<(b, h, i, c, j) -> (b, h, i, c)>
#e = affine_map<(b, h, i, j) -> (b, h, i, j)>

// CHECK-LABEL: func.func @causal_additive(
// CHECK-SAME:    %[[Q:[^:]+]]: tensor<1x1x4x64xf32>, %[[K:[^:]+]]: tensor<1x1x8x64xf32>, %[[V:[^:]+]]: tensor<1x1x8x64xf32>
// CHECK-NOT:     linalg.
// CHECK:         %[[K8:[^,]+]], %[[KS:[^ ]+]] = qattn.quantize %[[K]] {scheme = #qattn.stage1<block = 64>} : tensor<1x1x8x64xf32> -> tensor<1x1x8x64xi8>
// CHECK:         %[[KP:[^,]+]], %[[KG:[^,]+]], %[[KZ:[^ ]+]] = qattn.progressive_quantize %[[K8]] {scheme = #qattn.stage2<bits = [4], group = 16>}
// CHECK-SAME:      -> tensor<1x8x32xi8>, tensor<1x1x1x64xi8>, tensor<1x1x1x64xi8>
// CHECK:         %[[V8:[^,]+]], %[[VS:[^ ]+]] = qattn.quantize %[[V]] {scheme = #qattn.stage1<block = 64>}
// CHECK:         %[[VP:[^,]+]], %[[VG:[^,]+]], %[[VZ:[^ ]+]] = qattn.progressive_quantize %[[V8]] {scheme = #qattn.stage2<bits = [4], group = 16>}
// CHECK:         %[[O:.+]] = qattn.attention %[[Q]] keys(%[[KP]], %[[KS]], %[[KG]], %[[KZ]]) values(%[[VP]], %[[VS]], %[[VG]], %[[VZ]])
// CHECK-SAME:      {causal, k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4], group = 16>, scale = 1.250000e-01 : f32, v_stage1
// CHECK-NOT:     linalg.
// CHECK:         return %[[O]]
// An additive -inf mask, the last query aligned with the last key, then the scale.
func.func @causal_additive(%q: tensor<1x1x4x64xf32>, %k: tensor<1x1x8x64xf32>, %v: tensor<1x1x8x64xf32>) -> tensor<1x1x4x64xf32> {
  %zero = arith.constant 0.0 : f32
  %s_init = tensor.empty() : tensor<1x1x4x8xf32>
  %s_zero = linalg.fill ins(%zero : f32) outs(%s_init : tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32>
  %s = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<1x1x4x64xf32>, tensor<1x1x8x64xf32>) outs(%s_zero : tensor<1x1x4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x1x4x8xf32>
  %mask = arith.constant dense<[[0.0, 0.0, 0.0, 0.0, 0.0, 0xFF800000, 0xFF800000, 0xFF800000],
      [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0xFF800000, 0xFF800000],
      [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0xFF800000],
      [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]]> : tensor<4x8xf32>
  %c = arith.constant 0.125 : f32
  %t_init = tensor.empty() : tensor<1x1x4x8xf32>
  %t = linalg.generic {indexing_maps = [#e, affine_map<(b, h, i, j) -> (i, j)>, #e], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s, %mask : tensor<1x1x4x8xf32>, tensor<4x8xf32>) outs(%t_init : tensor<1x1x4x8xf32>) {
  ^bb0(%x: f32, %mask_el: f32, %out: f32):
    %y = arith.addf %x, %mask_el : f32
    %z = arith.mulf %y, %c : f32
    linalg.yield %z : f32
  } -> tensor<1x1x4x8xf32>
  %p_init = tensor.empty() : tensor<1x1x4x8xf32>
  %p = linalg.softmax dimension(3) ins(%t : tensor<1x1x4x8xf32>) outs(%p_init : tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32>
  %o_init = tensor.empty() : tensor<1x1x4x64xf32>
  %o_zero = linalg.fill ins(%zero : f32) outs(%o_init : tensor<1x1x4x64xf32>) -> tensor<1x1x4x64xf32>
  %o = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<1x1x4x8xf32>, tensor<1x1x8x64xf32>) outs(%o_zero : tensor<1x1x4x64xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x1x4x64xf32>
  return %o : tensor<1x1x4x64xf32>
}

// -----

#q = affine_map<(b, h, i, j, c) -> (b, h, i, c)>
#k = affine_map<(b, h, i, j, c) -> (b, h, j, c)>
#s = affine_map<(b, h, i, j, c) -> (b, h, i, j)>
#p = affine_map<(b, h, i, c, j) -> (b, h, i, j)>
#v = affine_map<(b, h, i, c, j) -> (b, h, j, c)>
#o = affine_map<(b, h, i, c, j) -> (b, h, i, c)>
#e = affine_map<(b, h, i, j) -> (b, h, i, j)>

// CHECK-LABEL: func.func @gqa_causal_select(
// CHECK-SAME:    %[[Q:[^:]+]]: tensor<1x8x16x64xf32>, %[[K:[^:]+]]: tensor<1x2x1000x64xf32>, %[[V:[^:]+]]: tensor<1x2x1000x64xf32>
// CHECK-NOT:     linalg.
// CHECK:         %[[K8:[^,]+]], %[[KS:[^ ]+]] = qattn.quantize %[[K]] {scheme = #qattn.stage1<block = 64>} : tensor<1x2x1000x64xf32> -> tensor<1x2x1000x64xi8>
// CHECK:         %[[KP:[^,]+]], %[[KG:[^,]+]], %[[KZ:[^ ]+]] = qattn.progressive_quantize %[[K8]] {scheme = #qattn.stage2<bits = [4], group = 16>}
// CHECK-SAME:      -> tensor<1x1000x64xi8>, tensor<1x2x63x64xi8>, tensor<1x2x63x64xi8>
// CHECK:         %[[V8:[^,]+]], %[[VS:[^ ]+]] = qattn.quantize %[[V]] {scheme = #qattn.stage1<block = 64>}
// CHECK:         %[[VP:[^,]+]], %[[VG:[^,]+]], %[[VZ:[^ ]+]] = qattn.progressive_quantize %[[V8]] {scheme = #qattn.stage2<bits = [4], group = 16>}
// CHECK:         %[[O:.+]] = qattn.attention %[[Q]] keys(%[[KP]], %[[KS]], %[[KG]], %[[KZ]]) values(%[[VP]], %[[VS]], %[[VG]], %[[VZ]])
// CHECK-SAME:      {causal, k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4], group = 16>, scale = 1.250000e-01 : f32, v_stage1
// CHECK-NOT:     linalg.
// CHECK:         return %[[O]]
// Grouped-query (8 query heads over 2 KV heads, broadcast then collapsed) with a causal
// select on linalg.index fused with the scale, as elementwise fusion leaves it.
func.func @gqa_causal_select(%q: tensor<1x8x16x64xf32>, %k: tensor<1x2x1000x64xf32>, %v: tensor<1x2x1000x64xf32>) -> tensor<1x8x16x64xf32> {
  %zero = arith.constant 0.0 : f32
  %kr_init = tensor.empty() : tensor<1x2x4x1000x64xf32>
  %kr_b = linalg.broadcast ins(%k : tensor<1x2x1000x64xf32>) outs(%kr_init : tensor<1x2x4x1000x64xf32>) dimensions = [2]
  %kr = tensor.collapse_shape %kr_b [[0], [1, 2], [3], [4]] : tensor<1x2x4x1000x64xf32> into tensor<1x8x1000x64xf32>
  %vr_init = tensor.empty() : tensor<1x2x4x1000x64xf32>
  %vr_b = linalg.broadcast ins(%v : tensor<1x2x1000x64xf32>) outs(%vr_init : tensor<1x2x4x1000x64xf32>) dimensions = [2]
  %vr = tensor.collapse_shape %vr_b [[0], [1, 2], [3], [4]] : tensor<1x2x4x1000x64xf32> into tensor<1x8x1000x64xf32>
  %s_init = tensor.empty() : tensor<1x8x16x1000xf32>
  %s_zero = linalg.fill ins(%zero : f32) outs(%s_init : tensor<1x8x16x1000xf32>) -> tensor<1x8x16x1000xf32>
  %s = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %kr : tensor<1x8x16x64xf32>, tensor<1x8x1000x64xf32>) outs(%s_zero : tensor<1x8x16x1000xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x8x16x1000xf32>
  %ninf = arith.constant 0xFF800000 : f32
  %c = arith.constant 0.125 : f32
  %offset = arith.constant 984 : index
  %t_init = tensor.empty() : tensor<1x8x16x1000xf32>
  %t = linalg.generic {indexing_maps = [#e, #e], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s : tensor<1x8x16x1000xf32>) outs(%t_init : tensor<1x8x16x1000xf32>) {
  ^bb0(%x: f32, %out: f32):
    %i = linalg.index 2 : index
    %j = linalg.index 3 : index
    %last = arith.addi %i, %offset : index
    %visible = arith.cmpi ule, %j, %last : index
    %scaled = arith.mulf %x, %c : f32
    %y = arith.select %visible, %scaled, %ninf : f32
    linalg.yield %y : f32
  } -> tensor<1x8x16x1000xf32>
  %p_init = tensor.empty() : tensor<1x8x16x1000xf32>
  %p = linalg.softmax dimension(3) ins(%t : tensor<1x8x16x1000xf32>) outs(%p_init : tensor<1x8x16x1000xf32>) -> tensor<1x8x16x1000xf32>
  %o_init = tensor.empty() : tensor<1x8x16x64xf32>
  %o_zero = linalg.fill ins(%zero : f32) outs(%o_init : tensor<1x8x16x64xf32>) -> tensor<1x8x16x64xf32>
  %o = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %vr : tensor<1x8x16x1000xf32>, tensor<1x8x1000x64xf32>) outs(%o_zero : tensor<1x8x16x64xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x8x16x64xf32>
  return %o : tensor<1x8x16x64xf32>
}

// -----

#q = affine_map<(b, h, i, j, c) -> (b, h, i, c)>
#k = affine_map<(b, h, i, j, c) -> (b, h, j, c)>
#s = affine_map<(b, h, i, j, c) -> (b, h, i, j)>
#p = affine_map<(b, h, i, c, j) -> (b, h, i, j)>
#v = affine_map<(b, h, i, c, j) -> (b, h, j, c)>
#o = affine_map<(b, h, i, c, j) -> (b, h, i, c)>
#e = affine_map<(b, h, i, j) -> (b, h, i, j)>

// CHECK-LABEL: func.func @decode_gqa_transposed(
// CHECK-SAME:    %[[Q:[^:]+]]: tensor<1x4x1x128xf32>, %[[K:[^:]+]]: tensor<1x1x300x128xf32>, %[[V:[^:]+]]: tensor<1x1x300x128xf32>
// CHECK-NOT:     linalg.
// CHECK:         %[[K8:[^,]+]], %[[KS:[^ ]+]] = qattn.quantize %[[K]] {scheme = #qattn.stage1<block = 64>} : tensor<1x1x300x128xf32> -> tensor<1x1x300x128xi8>
// CHECK:         %[[KP:[^,]+]], %[[KG:[^,]+]], %[[KZ:[^ ]+]] = qattn.progressive_quantize %[[K8]] {scheme = #qattn.stage2<bits = [4], group = 16>}
// CHECK-SAME:      -> tensor<1x300x64xi8>, tensor<1x1x19x128xi8>, tensor<1x1x19x128xi8>
// CHECK:         %[[V8:[^,]+]], %[[VS:[^ ]+]] = qattn.quantize %[[V]] {scheme = #qattn.stage1<block = 64>}
// CHECK:         %[[VP:[^,]+]], %[[VG:[^,]+]], %[[VZ:[^ ]+]] = qattn.progressive_quantize %[[V8]] {scheme = #qattn.stage2<bits = [4], group = 16>}
// CHECK:         %[[O:.+]] = qattn.attention %[[Q]] keys(%[[KP]], %[[KS]], %[[KG]], %[[KZ]]) values(%[[VP]], %[[VS]], %[[VG]], %[[VZ]])
// CHECK-SAME:      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4], group = 16>, scale = 1.000000e+00 : f32, v_stage1
// CHECK-NOT:     linalg.
// CHECK:         return %[[O]]
// Decode: one query over 300 keys, KV heads broadcast by linalg.generic, QK^T reading a transposed K.
func.func @decode_gqa_transposed(%q: tensor<1x4x1x128xf32>, %k: tensor<1x1x300x128xf32>, %v: tensor<1x1x300x128xf32>) -> tensor<1x4x1x128xf32> {
  %zero = arith.constant 0.0 : f32
  %kr_init = tensor.empty() : tensor<1x1x4x300x128xf32>
  %kr_b = linalg.generic {indexing_maps = [affine_map<(b, g, r, n, c) -> (b, g, n, c)>, affine_map<(b, g, r, n, c) -> (b, g, r, n, c)>],
                               iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%k : tensor<1x1x300x128xf32>) outs(%kr_init : tensor<1x1x4x300x128xf32>) {
  ^bb0(%in: f32, %unused: f32):
    linalg.yield %in : f32
  } -> tensor<1x1x4x300x128xf32>
  %kr = tensor.collapse_shape %kr_b [[0], [1, 2], [3], [4]] : tensor<1x1x4x300x128xf32> into tensor<1x4x300x128xf32>
  %vr_init = tensor.empty() : tensor<1x1x4x300x128xf32>
  %vr_b = linalg.generic {indexing_maps = [affine_map<(b, g, r, n, c) -> (b, g, n, c)>, affine_map<(b, g, r, n, c) -> (b, g, r, n, c)>],
                               iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%v : tensor<1x1x300x128xf32>) outs(%vr_init : tensor<1x1x4x300x128xf32>) {
  ^bb0(%in: f32, %unused: f32):
    linalg.yield %in : f32
  } -> tensor<1x1x4x300x128xf32>
  %vr = tensor.collapse_shape %vr_b [[0], [1, 2], [3], [4]] : tensor<1x1x4x300x128xf32> into tensor<1x4x300x128xf32>
  %kt_init = tensor.empty() : tensor<1x4x128x300xf32>
  %kt = linalg.transpose ins(%kr : tensor<1x4x300x128xf32>) outs(%kt_init : tensor<1x4x128x300xf32>) permutation = [0, 1, 3, 2]
  %s_init = tensor.empty() : tensor<1x4x1x300xf32>
  %s_zero = linalg.fill ins(%zero : f32) outs(%s_init : tensor<1x4x1x300xf32>) -> tensor<1x4x1x300xf32>
  %s = linalg.generic {indexing_maps = [#q, affine_map<(b, h, i, j, c) -> (b, h, c, j)>, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %kt : tensor<1x4x1x128xf32>, tensor<1x4x128x300xf32>) outs(%s_zero : tensor<1x4x1x300xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x4x1x300xf32>
  %p_init = tensor.empty() : tensor<1x4x1x300xf32>
  %p = linalg.softmax dimension(3) ins(%s : tensor<1x4x1x300xf32>) outs(%p_init : tensor<1x4x1x300xf32>) -> tensor<1x4x1x300xf32>
  %o_init = tensor.empty() : tensor<1x4x1x128xf32>
  %o_zero = linalg.fill ins(%zero : f32) outs(%o_init : tensor<1x4x1x128xf32>) -> tensor<1x4x1x128xf32>
  %o = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %vr : tensor<1x4x1x300xf32>, tensor<1x4x300x128xf32>) outs(%o_zero : tensor<1x4x1x128xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x4x1x128xf32>
  return %o : tensor<1x4x1x128xf32>
}
