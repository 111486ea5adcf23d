// qattn.attention with decode buffers (buffers(%kb, %kbs, %vb, %vbs)) compiled for the CPU
// against the NumPy model of docs/FORMAT.md. The cache's k / v are float arguments quantized
// inside the function; the buffers hold the new tokens quantized with a fixed per-head scale
// (the stage-1 scale of the cache's last block, so that some new values clamp), written by
// make_inputs.py. The second function first appends the last 3 new tokens to buffers whose
// last rows are stale (qattn.buffer_append at row 5), then attends over cache + buffer.
// check_attention.py: (a) against the model's float64 attention on the same dequantized
// operands (cache tokens then buffer tokens), (8 A + 64) u max|V'| + half an ulp of the output
// type; (b) against float64 exact attention on the unquantized cache + new tokens.

// REQUIRES: numpy
// RUN: rm -rf %t && qattn-compile %s -o %t/art

// RUN: %python %S/Inputs/make_inputs.py attn-buffer --seed 51 --q 1,4,4,64 --kv 1,2,100,64 --nb 16 --block 32 --out %t/buf-in
// RUN: qattn-run %t/art --function attn_buf --input q=%t/buf-in/q.npy --input k=%t/buf-in/k.npy --input v=%t/buf-in/v.npy --input kb=%t/buf-in/kb.npy --input kbs=%t/buf-in/kbs.npy --input vb=%t/buf-in/vb.npy --input vbs=%t/buf-in/vbs.npy --output-dir %t/buf
// RUN: %python %S/Inputs/check_attention.py --case attn_buf --art %t/art --function attn_buf --out %t/buf --in %t/buf-in --buffers --k block=32,bits=4,group=16 --v block=32,bits=4-2,group=8 --causal --max-rel-fro 0.32 --min-sqnr 9.9 | FileCheck %s --check-prefix=BUF
// attn_buf: B=1 Hq=4 Hkv=2 Nq=4 Nk=100 + Nb=16 d=64, Q f32, K 4-bit group 16, V 4/2-bit group 8,
// block 32, causal (the last query sees all 116 keys), exact softmax, f32 output.
// BUF: attn_buf: vs model on dequantized operands {{.*}} OK
// BUF: attn_buf: vs float64 attention {{.*}} OK
// BUF: attn_buf: all checks passed
func.func @attn_buf(%q: tensor<1x4x4x64xf32> {qattn.name = "q"},
                    %k: tensor<1x2x100x64xf32> {qattn.name = "k"},
                    %v: tensor<1x2x100x64xf32> {qattn.name = "v"},
                    %kb: tensor<1x2x16x64xi8> {qattn.name = "kb"}, %kbs: tensor<1x2xf32> {qattn.name = "kbs"},
                    %vb: tensor<1x2x16x64xi8> {qattn.name = "vb"}, %vbs: tensor<1x2xf32> {qattn.name = "vbs"})
    -> (tensor<1x4x4x64xf32> {qattn.name = "o"}) {
  %k8, %ks = qattn.quantize %k {scheme = #qattn.stage1<block = 32>}
      : tensor<1x2x100x64xf32> -> tensor<1x2x100x64xi8>, tensor<1x2x4xf32>
  %kp, %ks2, %kz2 = qattn.progressive_quantize %k8 {scheme = #qattn.stage2<bits = [4], group = 16>}
      : tensor<1x2x100x64xi8> -> tensor<1x100x64xi8>, tensor<1x2x7x64xi8>, tensor<1x2x7x64xi8>
  %v8, %vs = qattn.quantize %v {scheme = #qattn.stage1<block = 32>}
      : tensor<1x2x100x64xf32> -> tensor<1x2x100x64xi8>, tensor<1x2x4xf32>
  %vp, %vs2, %vz2 = qattn.progressive_quantize %v8 {scheme = #qattn.stage2<bits = [4, 2], group = 8>}
      : tensor<1x2x100x64xi8> -> tensor<1x100x48xi8>, tensor<1x2x13x64xi8>, tensor<1x2x13x64xi8>
  %o = qattn.attention %q keys(%kp, %ks, %ks2, %kz2) values(%vp, %vs, %vs2, %vz2)
      buffers(%kb, %kbs, %vb, %vbs)
      {k_stage1 = #qattn.stage1<block = 32>, k_stage2 = #qattn.stage2<bits = [4], group = 16>,
       v_stage1 = #qattn.stage1<block = 32>, v_stage2 = #qattn.stage2<bits = [4, 2], group = 8>,
       causal}
      : (tensor<1x4x4x64xf32>, tensor<1x100x64xi8>, tensor<1x2x4xf32>, tensor<1x2x7x64xi8>,
         tensor<1x2x7x64xi8>, tensor<1x100x48xi8>, tensor<1x2x4xf32>, tensor<1x2x13x64xi8>,
         tensor<1x2x13x64xi8>, tensor<1x2x16x64xi8>, tensor<1x2xf32>, tensor<1x2x16x64xi8>,
         tensor<1x2xf32>) -> tensor<1x4x4x64xf32>
  return %o : tensor<1x4x4x64xf32>
}

// RUN: %python %S/Inputs/make_inputs.py attn-buffer --seed 52 --q 1,4,1,128 --kv 1,1,37,128 --nb 8 --append 3 --block 16 --dtype float16 --out %t/app-in
// RUN: qattn-run %t/art --function attn_buf_append --input q=%t/app-in/q.npy --input k=%t/app-in/k.npy --input v=%t/app-in/v.npy --input kb=%t/app-in/kb.npy --input kbs=%t/app-in/kbs.npy --input vb=%t/app-in/vb.npy --input vbs=%t/app-in/vbs.npy --input knew_t=%t/app-in/knew_t.npy --input vnew_t=%t/app-in/vnew_t.npy --output-dir %t/app
// RUN: %python %S/Inputs/check_attention.py --case attn_buf_append --art %t/art --function attn_buf_append --out %t/app --in %t/app-in --buffers --append 3 --k block=16,gran=channel --v block=16,bits=2,group=8 --softmax sas:-6.0:4 --max-rel-fro 0.32 --min-sqnr 9.9 | FileCheck %s --check-prefix=APP
// attn_buf_append: B=1 Hq=4 Hkv=1 Nq=1 Nk=37 + Nb=8 d=128, Q f16, K int8 only (channel scales),
// V 2-bit group 8, block 16, not causal, SAS softmax (threshold -6, degree 4), f16 output;
// rows 5..7 of both buffers appended in the function.
// APP: attn_buf_append: vs model on dequantized operands {{.*}} OK
// APP: attn_buf_append: vs float64 attention {{.*}} OK
// APP: attn_buf_append: all checks passed
func.func @attn_buf_append(%q: tensor<1x4x1x128xf16> {qattn.name = "q"},
                           %k: tensor<1x1x37x128xf32> {qattn.name = "k"},
                           %v: tensor<1x1x37x128xf32> {qattn.name = "v"},
                           %kb: tensor<1x1x8x128xi8> {qattn.name = "kb"}, %kbs: tensor<1x1xf32> {qattn.name = "kbs"},
                           %vb: tensor<1x1x8x128xi8> {qattn.name = "vb"}, %vbs: tensor<1x1xf32> {qattn.name = "vbs"},
                           %knew: tensor<1x1x3x128xf32> {qattn.name = "knew_t"},
                           %vnew: tensor<1x1x3x128xf32> {qattn.name = "vnew_t"})
    -> (tensor<1x4x1x128xf16> {qattn.name = "o"}) {
  %c5 = arith.constant 5 : index
  %kb1 = qattn.buffer_append %knew, %kbs into %kb[%c5]
      : tensor<1x1x3x128xf32>, tensor<1x1xf32> into tensor<1x1x8x128xi8>
  %vb1 = qattn.buffer_append %vnew, %vbs into %vb[%c5]
      : tensor<1x1x3x128xf32>, tensor<1x1xf32> into tensor<1x1x8x128xi8>
  %k8, %ks = qattn.quantize %k {scheme = #qattn.stage1<block = 16, granularity = channel>}
      : tensor<1x1x37x128xf32> -> tensor<1x1x37x128xi8>, tensor<1x1x3x128xf32>
  %v8, %vs = qattn.quantize %v {scheme = #qattn.stage1<block = 16>}
      : tensor<1x1x37x128xf32> -> tensor<1x1x37x128xi8>, tensor<1x1x3xf32>
  %vp, %vs2, %vz2 = qattn.progressive_quantize %v8 {scheme = #qattn.stage2<bits = [2], group = 8>}
      : tensor<1x1x37x128xi8> -> tensor<1x37x32xi8>, tensor<1x1x5x128xi8>, tensor<1x1x5x128xi8>
  %o = qattn.attention %q keys(%k8, %ks) values(%vp, %vs, %vs2, %vz2)
      buffers(%kb1, %kbs, %vb1, %vbs)
      {k_stage1 = #qattn.stage1<block = 16, granularity = channel>,
       v_stage1 = #qattn.stage1<block = 16>, v_stage2 = #qattn.stage2<bits = [2], group = 8>,
       softmax = #qattn.softmax<sas, threshold = -6.0, degree = 4>}
      : (tensor<1x4x1x128xf16>, tensor<1x1x37x128xi8>, tensor<1x1x3x128xf32>,
         tensor<1x37x32xi8>, tensor<1x1x3xf32>, tensor<1x1x5x128xi8>, tensor<1x1x5x128xi8>,
         tensor<1x1x8x128xi8>, tensor<1x1xf32>, tensor<1x1x8x128xi8>, tensor<1x1xf32>)
      -> tensor<1x4x1x128xf16>
  return %o : tensor<1x4x1x128xf16>
}
