// qattn.key_chunk's reference lowering run on the CPU for every slot of a
// few batches, against its rule written out again (Inputs/check_chunks.py):
// the chunk size is the fewest whole 32-key tiles that cut the batch into at
// most K chunks. The gate's varlen batch (bench/decode_gate.py: B 32, 1797 ..
// 32464 keys) at 6 and 2 chunks a sequence, where T ceil(W / (K T)) makes
// too many chunks and the size is bisected (6 a sequence: 3392 keys, where
// T ceil(W / ((K - B) T)) would take 3744); one long sequence beside short
// and empty ones; equal lengths (the even size); K = B. Both lowerings of the
// op build the size with the same builder (balancedChunkKeys).

// REQUIRES: numpy
// RUN: rm -rf %t && mkdir -p %t
// RUN: qattn-compile %s -o %t/art
// RUN: %python %S/Inputs/check_chunks.py make %t gate6 192 32422,30756,5623,8974,1797,21113,15675,7061,24025,4975,25258,22369,29814,12350,26995,30172,3634,8617,9847,32464,2651,11491,20722,6893,31566,19111,23478,25047,31296,15114,24227,29977
// RUN: %python %S/Inputs/check_chunks.py make %t gate2 64 32422,30756,5623,8974,1797,21113,15675,7061,24025,4975,25258,22369,29814,12350,26995,30172,3634,8617,9847,32464,2651,11491,20722,6893,31566,19111,23478,25047,31296,15114,24227,29977
// RUN: %python %S/Inputs/check_chunks.py make %t skew 16 40000,1,2,33,0,97,64,65
// RUN: %python %S/Inputs/check_chunks.py make %t even 32 1000,1000,1000,1000,1000,1000,1000,1000
// RUN: %python %S/Inputs/check_chunks.py make %t one 4 5000,3,3,3
// RUN: qattn-run %t/art --function chunks --input kv_lens=%t/gate6_lens.npy --input chunks=%t/gate6_k.npy --output-dir %t/gate6 --quiet
// RUN: %python %S/Inputs/check_chunks.py check %t gate6 %t/gate6/o.npy | FileCheck %s --check-prefix=GATE6
// RUN: qattn-run %t/art --function chunks --input kv_lens=%t/gate2_lens.npy --input chunks=%t/gate2_k.npy --output-dir %t/gate2 --quiet
// RUN: %python %S/Inputs/check_chunks.py check %t gate2 %t/gate2/o.npy | FileCheck %s
// RUN: qattn-run %t/art --function chunks --input kv_lens=%t/skew_lens.npy --input chunks=%t/skew_k.npy --output-dir %t/skew --quiet
// RUN: %python %S/Inputs/check_chunks.py check %t skew %t/skew/o.npy | FileCheck %s
// RUN: qattn-run %t/art --function chunks --input kv_lens=%t/even_lens.npy --input chunks=%t/even_k.npy --output-dir %t/even --quiet
// RUN: %python %S/Inputs/check_chunks.py check %t even %t/even/o.npy | FileCheck %s --check-prefix=EVEN
// RUN: qattn-run %t/art --function chunks --input kv_lens=%t/one_lens.npy --input chunks=%t/one_k.npy --output-dir %t/one --quiet
// RUN: %python %S/Inputs/check_chunks.py check %t one %t/one/o.npy | FileCheck %s

// GATE6: gate6: B=32 W=595514 K=192 C=3392 chunks=192: OK
// EVEN: even: B=8 W=8000 K=32 C=256 chunks=32: OK
// CHECK: : OK

func.func @chunks(%lens: tensor<?xi32> {qattn.name = "kv_lens", qattn.dims = ["B"]},
                  %k: tensor<1xi32> {qattn.name = "chunks", qattn.dims = [""]})
    -> (tensor<256x3xi32> {qattn.name = "o", qattn.dims = ["", ""]}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c256 = arith.constant 256 : index
  %k0 = tensor.extract %k[%c0] : tensor<1xi32>
  %chunks = arith.index_castui %k0 : i32 to index
  %init = tensor.empty() : tensor<256x3xi32>
  %out = scf.for %slot = %c0 to %c256 step %c1 iter_args(%acc = %init) -> (tensor<256x3xi32>) {
    %seq, %lo, %hi = qattn.key_chunk %lens[%slot] of %chunks {tile_keys = 32} : tensor<?xi32>
    %s = arith.index_castui %seq : index to i32
    %l = arith.index_castui %lo : index to i32
    %h = arith.index_castui %hi : index to i32
    %a0 = tensor.insert %s into %acc[%slot, %c0] : tensor<256x3xi32>
    %a1 = tensor.insert %l into %a0[%slot, %c1] : tensor<256x3xi32>
    %a2 = tensor.insert %h into %a1[%slot, %c2] : tensor<256x3xi32>
    scf.yield %a2 : tensor<256x3xi32>
  }
  return %out : tensor<256x3xi32>
}
