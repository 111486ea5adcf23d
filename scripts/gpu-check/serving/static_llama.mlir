// The static form of serving.py's timing shape (the tile layer on a static
// shape): B 8, Hq 32, Hkv 8, d 128, N 32768, 4-bit K/V, group 32.
func.func @static_llama(
    %q: tensor<8x32x1x128xf16> {qattn.name = "q"},
    %kp: tensor<8x32768x512xi8> {qattn.name = "k_codes"}, %ks: tensor<8x8x512xf32> {qattn.name = "k_scales"},
    %ks2: tensor<8x8x1024x128xi8> {qattn.name = "k_group_scales"}, %kz2: tensor<8x8x1024x128xi8> {qattn.name = "k_zeros"},
    %vp: tensor<8x32768x512xi8> {qattn.name = "v_codes"}, %vs: tensor<8x8x512xf32> {qattn.name = "v_scales"},
    %vs2: tensor<8x8x1024x128xi8> {qattn.name = "v_group_scales"}, %vz2: tensor<8x8x1024x128xi8> {qattn.name = "v_zeros"})
    -> (tensor<8x32x1x128xf16> {qattn.name = "o"}) {
  %o = qattn.attention %q keys(%kp, %ks, %ks2, %kz2) values(%vp, %vs, %vs2, %vz2)
      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4], group = 32>, v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [4], group = 32>}
      : (tensor<8x32x1x128xf16>, tensor<8x32768x512xi8>, tensor<8x8x512xf32>, tensor<8x8x1024x128xi8>, tensor<8x8x1024x128xi8>, tensor<8x32768x512xi8>, tensor<8x8x512xf32>, tensor<8x8x1024x128xi8>, tensor<8x8x1024x128xi8>) -> tensor<8x32x1x128xf16>
  return %o : tensor<8x32x1x128xf16>
}
