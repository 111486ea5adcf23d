// RUN: rm -rf %t && qattn-compile %s -o %t --target=cuda --no-cubin | FileCheck %s --check-prefix=OUT
// RUN: FileCheck %s --input-file=%t/manifest.json
// RUN: FileCheck %s --input-file=%t/module.ptx --check-prefix=PTX

// OUT: wrote {{.*}}/manifest.json and the kernels ({{.*}}/module.ptx)

// The host side became the launch list: scratch for the split partials (32
// rows, 14 splits: 2000 keys afford 15 slices of >= 128 keys, which start
// at multiples of 16, so 144 keys each fill 14), the tensor-core decode
// kernel over (splits, CTAs of 4 warps for the 8 KV heads' 16-row tiles)
// with its cp.async ring and converted group constants in shared memory
// (4 warps x (4 slots x 2560 + 1024) bytes: 28 CTAs, fewer than the SMs,
// take 4 stages), then the combine kernel, an early launch (it may start
// while the decode kernel finishes; its PTX waits for it first).
// CHECK: "chip": "sm_90a",
// CHECK: "buffers": [
// CHECK-NEXT: {
// CHECK-NEXT: "dtype": "f32",
// CHECK-NEXT: "name": "scratch0",
// CHECK-NEXT: "shape": [
// CHECK-NEXT: 32,
// CHECK-NEXT: 14,
// CHECK-NEXT: 128
// CHECK: "launches": [
// CHECK-NOT: "early"
// CHECK: "grid": [
// CHECK-NEXT: 14,
// CHECK-NEXT: 2,
// CHECK: "kernel": "decode_attention_decode",
// CHECK: "params": [
// CHECK-NEXT: {
// CHECK-NEXT: "arg": 0
// CHECK: "buffer": 0
// CHECK: "buffer": 1
// CHECK: "early": true,
// CHECK: "kernel": "decode_combine",
// CHECK: "result": 0
// CHECK: "shared_bytes": 0
// CHECK: "library": "module.ptx",
// CHECK-NEXT: "library_sha256": "{{[0-9a-f]+}}",
// CHECK-NEXT: "ptx": "module.ptx",
// CHECK-NEXT: "ptx_sha256": "{{[0-9a-f]+}}",
// CHECK: "target": "cuda",

// PTX: .target sm_90a
// PTX: .entry decode_attention_decode(
// PTX: .shared .align 16 .b8 {{.*}}[45056];
// PTX: griddepcontrol.launch_dependents;
// PTX: cp.async.cg.shared.global
// PTX: cp.async.commit_group
// PTX: cp.async.wait_group {{[[:space:]]*}}3;
// PTX: prmt.b32
// PTX: st.shared.v4.b32
// PTX: bar.warp.sync
// PTX: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// PTX: shfl.sync.bfly.b32
// PTX: ex2.approx
// PTX: .entry decode_combine(
// PTX: griddepcontrol.wait;

func.func @decode(%q: tensor<1x32x1x128xbf16> {qattn.name = "q"}, %kp: tensor<1x2000x512xi8>, %ks: tensor<1x8x32xf32>, %kg: tensor<1x8x125x128xi8>, %kz: tensor<1x8x125x128xi8>,
                  %vp: tensor<1x2000x512xi8>, %vs: tensor<1x8x32xf32>, %vg: tensor<1x8x125x128xi8>, %vz: tensor<1x8x125x128xi8>) -> tensor<1x32x1x128xbf16> {
  %o = qattn.attention %q keys(%kp, %ks, %kg, %kz) values(%vp, %vs, %vg, %vz)
      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4], group = 16>,
       v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [4], group = 16>}
      : (tensor<1x32x1x128xbf16>, tensor<1x2000x512xi8>, tensor<1x8x32xf32>, tensor<1x8x125x128xi8>, tensor<1x8x125x128xi8>, tensor<1x2000x512xi8>, tensor<1x8x32xf32>, tensor<1x8x125x128xi8>, tensor<1x8x125x128xi8>) -> tensor<1x32x1x128xbf16>
  return %o : tensor<1x32x1x128xbf16>
}
