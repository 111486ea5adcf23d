// Attention as an embedding compiler might hand it over: plain linalg on f32
// tensors (QK^T / sqrt(d), linalg.softmax, P.V), B=1 H=2 Nq=8 Nk=128 d=32.
// test/Install/embed.test raises it with qattn-raise-attention inside
// examples/embed and compiles it there.
#q = affine_map<(b, h, i, j, c) -> (b, h, i, c)>
#k = affine_map<(b, h, i, j, c) -> (b, h, j, c)>
#s = affine_map<(b, h, i, j, c) -> (b, h, i, j)>
#p = affine_map<(b, h, i, c, j) -> (b, h, i, j)>
#v = affine_map<(b, h, i, c, j) -> (b, h, j, c)>
#o = affine_map<(b, h, i, c, j) -> (b, h, i, c)>

func.func @attention(%q: tensor<1x2x8x32xf32> {qattn.name = "q"}, %k: tensor<1x2x128x32xf32> {qattn.name = "k"}, %v: tensor<1x2x128x32xf32> {qattn.name = "v"}) -> (tensor<1x2x8x32xf32> {qattn.name = "o"}) {
  %zero = arith.constant 0.0 : f32
  %s_init = tensor.empty() : tensor<1x2x8x128xf32>
  %s_zero = linalg.fill ins(%zero : f32) outs(%s_init : tensor<1x2x8x128xf32>) -> tensor<1x2x8x128xf32>
  %s = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<1x2x8x32xf32>, tensor<1x2x128x32xf32>) outs(%s_zero : tensor<1x2x8x128xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %c = arith.constant 0.17677669 : f32
    %m = arith.mulf %a, %b : f32
    %ms = arith.mulf %m, %c : f32
    %r = arith.addf %acc, %ms : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x128xf32>
  %p_init = tensor.empty() : tensor<1x2x8x128xf32>
  %p = linalg.softmax dimension(3) ins(%s : tensor<1x2x8x128xf32>) outs(%p_init : tensor<1x2x8x128xf32>) -> tensor<1x2x8x128xf32>
  %o_init = tensor.empty() : tensor<1x2x8x32xf32>
  %o_zero = linalg.fill ins(%zero : f32) outs(%o_init : tensor<1x2x8x32xf32>) -> tensor<1x2x8x32xf32>
  %o = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<1x2x8x128xf32>, tensor<1x2x128x32xf32>) outs(%o_zero : tensor<1x2x8x32xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x32xf32>
  return %o : tensor<1x2x8x32xf32>
}
