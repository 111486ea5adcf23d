// RUN: qattn-opt %s --qattn-tile --qattn-pipeline --qattn-convert-to-gpu --canonicalize | FileCheck %s

// Per-head code widths (K 4/2 bits, V 2/4 bits over two KV heads): the grid
// kernel lowers its body once per distinct (K, V) width pair, in an
// scf.index_switch on the CTA's KV head (grid x mod 2), after a shared prologue.
// Each copy reads its head's codes at the byte after the widths of the heads
// before it (K: head 1 at 4 x 64 / 8 = 32, V: head 1 at 2 x 64 / 8 = 16), a
// lane's K codes 16 channels wide (2-bit: 4 bytes, 4-bit: 8), and runs the
// whole key loop with its own dequantization.
// CHECK-LABEL: gpu.func @heads_decode_tiles
// CHECK: %[[BX:.*]] = gpu.block_id  x
// CHECK: %[[HK:.*]] = arith.remui %[[BX]], %c2
// CHECK: %[[IS1:.*]] = arith.cmpi eq, %[[HK]], %c1
// CHECK: %[[CLASS:.*]] = arith.select %[[IS1]], %c1, %c0
// CHECK: scf.index_switch %[[CLASS]]
// CHECK-NEXT: case 1 {
// CHECK: arith.muli %{{.*}}, %c4 : index
// CHECK: %[[K1:.*]] = arith.cmpi uge, %[[HK]], %c1
// CHECK: arith.select %[[K1]], %c32, %c0
// CHECK: %[[V1:.*]] = arith.cmpi uge, %[[HK]], %c1
// CHECK: arith.select %[[V1]], %c16, %c0
// CHECK: scf.for
// CHECK: nvgpu.mma.sync
// CHECK: cp.async.wait_all
// CHECK: default {
// CHECK: arith.muli %{{.*}}, %c8 : index
// CHECK: scf.for
// CHECK: nvgpu.mma.sync
// CHECK: cp.async.wait_all
// CHECK: gpu.return
func.func @heads(%q: tensor<?x8x1x64xf16>, %kp: tensor<?x64x48xi8>, %ks: tensor<?x2x1xf32>, %ks2: tensor<?x2x4x64xi8>, %kz2: tensor<?x2x4x64xi8>, %lens: tensor<?xi32>, %table: tensor<?x?xi32>) -> tensor<?x8x1x64xf16> {
  %o = qattn.attention %q keys(%kp, %ks, %ks2, %kz2) values(%kp, %ks, %ks2, %kz2) lengths(%lens) pages(%table)
      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4, 2], group = 16>, v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [2, 4], group = 16>}
      : (tensor<?x8x1x64xf16>, tensor<?x64x48xi8>, tensor<?x2x1xf32>, tensor<?x2x4x64xi8>, tensor<?x2x4x64xi8>, tensor<?x64x48xi8>, tensor<?x2x1xf32>, tensor<?x2x4x64xi8>, tensor<?x2x4x64xi8>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x8x1x64xf16>
  return %o : tensor<?x8x1x64xf16>
}

// A uniform scheme has one program: no switch.
// CHECK-LABEL: gpu.func @uniform_decode_tiles
// CHECK-NOT: scf.index_switch
// CHECK: gpu.return
func.func @uniform(%q: tensor<?x8x1x64xf16>, %kp: tensor<?x64x64xi8>, %ks: tensor<?x2x1xf32>, %ks2: tensor<?x2x4x64xi8>, %kz2: tensor<?x2x4x64xi8>, %lens: tensor<?xi32>, %table: tensor<?x?xi32>) -> tensor<?x8x1x64xf16> {
  %o = qattn.attention %q keys(%kp, %ks, %ks2, %kz2) values(%kp, %ks, %ks2, %kz2) lengths(%lens) pages(%table)
      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4], group = 16>, v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [4], group = 16>}
      : (tensor<?x8x1x64xf16>, tensor<?x64x64xi8>, tensor<?x2x1xf32>, tensor<?x2x4x64xi8>, tensor<?x2x4x64xi8>, tensor<?x64x64xi8>, tensor<?x2x1xf32>, tensor<?x2x4x64xi8>, tensor<?x2x4x64xi8>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x8x1x64xf16>
  return %o : tensor<?x8x1x64xf16>
}
