// RUN: rm -rf %t && qattn-compile %s -o %t --target=cuda --no-cubin | FileCheck %s --check-prefix=OUT
// RUN: FileCheck %s --input-file=%t/manifest.json
// RUN: FileCheck %s --input-file=%t/module.ptx --check-prefix=PTX

// OUT: wrote {{.*}}/manifest.json and the kernels ({{.*}}/module.ptx)

// The host side became the launch list: scratch for the split partials
// (per batch entry, KV head, 16-row tile and split, 16 rows: 2000 keys
// afford 16 splits of >= 128 keys), the tile layer's grid kernel (a warp
// per (KV head, split): 8 x 16 CTAs) with its ring in static shared memory,
// then the combine kernel over the 32 output rows' tiles, an early launch
// (its CTAs start as the grid's retire and wait for its partial rows).
// CHECK: "chip": "sm_90a",
// CHECK: "buffers": [
// CHECK-NEXT: {
// CHECK-NEXT: "dtype": "f32",
// CHECK-NEXT: "name": "scratch0",
// CHECK-NEXT: "shape": [
// CHECK-NEXT: 1,
// CHECK-NEXT: 8,
// CHECK-NEXT: 1,
// CHECK-NEXT: 16,
// CHECK-NEXT: 16
// CHECK: "name": "scratch2",
// CHECK-NEXT: "shape": [
// CHECK-NEXT: 1,
// CHECK-NEXT: 8,
// CHECK-NEXT: 1,
// CHECK-NEXT: 16,
// CHECK-NEXT: 16,
// CHECK-NEXT: 128
// CHECK: "launches": [
// CHECK: "block": [
// CHECK-NEXT: 32,
// CHECK: "grid": [
// CHECK-NEXT: 128,
// CHECK-NEXT: 1,
// CHECK-NEXT: 1
// CHECK: "kernel": "decode_decode_tiles",
// CHECK: "params": [
// CHECK-NEXT: {
// CHECK-NEXT: "arg": 0
// CHECK: "buffer": 0
// CHECK: "buffer": 1
// CHECK: "buffer": 2
// CHECK: "early": true,
// CHECK: "kernel": "decode_combine_tiles",
// CHECK: "result": 0
// CHECK: "shared_bytes": 0
// CHECK: "library": "module.ptx",
// CHECK-NEXT: "library_sha256": "{{[0-9a-f]+}}",
// CHECK-NEXT: "ptx": "module.ptx",
// CHECK-NEXT: "ptx_sha256": "{{[0-9a-f]+}}",
// CHECK: "target": "cuda",

// PTX: .target sm_90a
// PTX: .entry decode_decode_tiles(
// PTX: .shared .align 128 .b8 {{.*}}[12800];
// PTX: griddepcontrol.launch_dependents;
// PTX: bar.warp.sync
// PTX: cp.async.cg.shared.global
// PTX: cp.async.commit_group
// PTX: cp.async.wait_group 2;
// PTX: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// PTX: shfl.sync.bfly.b32
// PTX: ex2.approx
// PTX: .entry decode_combine_tiles(
// PTX: griddepcontrol.wait;

func.func @decode(%q: tensor<1x32x1x128xbf16> {qattn.name = "q"}, %kp: tensor<1x2000x512xi8>, %ks: tensor<1x8x32xf32>, %kg: tensor<1x8x125x128xi8>, %kz: tensor<1x8x125x128xi8>,
                  %vp: tensor<1x2000x512xi8>, %vs: tensor<1x8x32xf32>, %vg: tensor<1x8x125x128xi8>, %vz: tensor<1x8x125x128xi8>) -> tensor<1x32x1x128xbf16> {
  %o = qattn.attention %q keys(%kp, %ks, %kg, %kz) values(%vp, %vs, %vg, %vz)
      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4], group = 16>,
       v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [4], group = 16>}
      : (tensor<1x32x1x128xbf16>, tensor<1x2000x512xi8>, tensor<1x8x32xf32>, tensor<1x8x125x128xi8>, tensor<1x8x125x128xi8>, tensor<1x2000x512xi8>, tensor<1x8x32xf32>, tensor<1x8x125x128xi8>, tensor<1x8x125x128xi8>) -> tensor<1x32x1x128xbf16>
  return %o : tensor<1x32x1x128xbf16>
}
