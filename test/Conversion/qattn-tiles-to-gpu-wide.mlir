// RUN: qattn-opt %s --qattn-tile --qattn-pipeline --qattn-convert-to-gpu --canonicalize | FileCheck %s

// Tiles of 32 keys (groups of 32): each loop step handles two 16-key blocks
// with one set of group constants: S^T takes 2 x 4 mma (d = 64), then per key
// block P^T by two movmatrix and O^T by 4 mma; the 128-register budget of 16-key tiles
// becomes 168 (nvvm.minctasm 12).
// CHECK-LABEL: gpu.func @wide_decode_tiles
// CHECK-SAME: nvvm.minctasm = 12
// CHECK: scf.for {{.*}} step %c32
// CHECK-COUNT-8: nvgpu.mma.sync
// CHECK-COUNT-2: movmatrix.sync.aligned.m8n8.trans.b16
// CHECK-COUNT-4: nvgpu.mma.sync
// CHECK-COUNT-2: movmatrix.sync.aligned.m8n8.trans.b16
// CHECK-COUNT-4: nvgpu.mma.sync
// CHECK: scf.yield
func.func @wide(%q: tensor<?x8x1x64xf16>, %kp: tensor<?x64x64xi8>, %ks: tensor<?x2x1xf32>, %ks2: tensor<?x2x2x64xi8>, %kz2: tensor<?x2x2x64xi8>,
                      %kb: tensor<?x2x64x64xi8>, %kbs: tensor<?x2xf32>, %lens: tensor<?xi32>, %table: tensor<?x?xi32>) -> tensor<?x8x1x64xf16> {
  %o = qattn.attention %q keys(%kp, %ks, %ks2, %kz2) values(%kp, %ks, %ks2, %kz2) buffers(%kb, %kbs, %kb, %kbs) lengths(%lens) pages(%table)
      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4], group = 32>, v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [4], group = 32>}
      : (tensor<?x8x1x64xf16>, tensor<?x64x64xi8>, tensor<?x2x1xf32>, tensor<?x2x2x64xi8>, tensor<?x2x2x64xi8>, tensor<?x64x64xi8>, tensor<?x2x1xf32>, tensor<?x2x2x64xi8>, tensor<?x2x2x64xi8>, tensor<?x2x64x64xi8>, tensor<?x2xf32>, tensor<?x2x64x64xi8>, tensor<?x2xf32>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x8x1x64xf16>
  return %o : tensor<?x8x1x64xf16>
}

// Three queries of a group of 4: 12 (query, head) rows in two row blocks.
// The partial accumulators of the first block are all real rows (every
// row tile holds at least 12), stored without a test; in the second each
// lane's rows 8 + 2t + c are tested against the 12.
// CHECK-LABEL: gpu.func @twelve_rows_decode_tiles
// CHECK: scf.yield
// CHECK-COUNT-4: vector.store %{{.*}} {alignment = 16 : i64} : memref<1099511627776xf32>, vector<4xf32>
// CHECK: %[[ROW:.*]] = arith.cmpi ult, %{{.*}}, %c12 : index
// CHECK-NEXT: scf.if %[[ROW]] {
// CHECK-COUNT-2: vector.store %{{.*}} {alignment = 16 : i64} : memref<1099511627776xf32>, vector<4xf32>
// CHECK: arith.cmpi ult, %{{.*}}, %c12 : index
// CHECK-NEXT: scf.if
// CHECK-COUNT-2: vector.store %{{.*}} {alignment = 16 : i64} : memref<1099511627776xf32>, vector<4xf32>
// CHECK-NEXT: }
// CHECK-NEXT: gpu.return
func.func @twelve_rows(%q: tensor<?x8x3x64xf16>, %kp: tensor<?x64x64xi8>, %ks: tensor<?x2x1xf32>, %ks2: tensor<?x2x2x64xi8>, %kz2: tensor<?x2x2x64xi8>,
                       %lens: tensor<?xi32>, %table: tensor<?x?xi32>) -> tensor<?x8x3x64xf16> {
  %o = qattn.attention %q keys(%kp, %ks, %ks2, %kz2) values(%kp, %ks, %ks2, %kz2) lengths(%lens) pages(%table)
      {causal, k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4], group = 32>, v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [4], group = 32>}
      : (tensor<?x8x3x64xf16>, tensor<?x64x64xi8>, tensor<?x2x1xf32>, tensor<?x2x2x64xi8>, tensor<?x2x2x64xi8>, tensor<?x64x64xi8>, tensor<?x2x1xf32>, tensor<?x2x2x64xi8>, tensor<?x2x2x64xi8>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x8x3x64xf16>
  return %o : tensor<?x8x3x64xf16>
}
