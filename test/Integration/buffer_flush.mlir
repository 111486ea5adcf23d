// qattn.buffer_flush compiled for the CPU against the NumPy model of docs/FORMAT.md: a full
// decode buffer compressed to stage 2 and written into a cache of ragged length at a
// block-aligned position (4+2 bits lsb_first with f32 block scales; 3 bits msb_first with f16
// channel scales, next to the ragged tail; mixed 2/4/3/4 bits with f32 channel scales). The
// written token rows, blocks and groups bit-exact against the model's stage 2 of the buffer
// (block scales: the buffer's scale converted to the scale type, repeated per channel); every
// untouched byte of the cache unchanged. Inputs from make_inputs.py (seeded).

// REQUIRES: numpy
// RUN: rm -rf %t && qattn-compile %s -o %t/art

// RUN: %python %S/Inputs/make_inputs.py flush --seed 42 --shape 1,2,100,64 --nb 32 --block 16 --group 8 --bits 4-2 --out %t/flush1-in
// RUN: qattn-run %t/art --function flush1 --input buf=%t/flush1-in/buf.npy --input s=%t/flush1-in/s.npy --input codes=%t/flush1-in/codes.npy --input bs=%t/flush1-in/bs.npy --input s2=%t/flush1-in/s2.npy --input z2=%t/flush1-in/z2.npy --output-dir %t/flush1
// RUN: %python %S/Inputs/check_buffer.py flush --case flush1 --art %t/art --function flush1 --in %t/flush1-in --out %t/flush1 --pos 64 --stage1 block=16 --stage2 bits=4-2,group=8 | FileCheck %s --check-prefix=FLUSH1
// FLUSH1: flush1: codes: written token rows 64..95 OK
// FLUSH1: flush1: codes: other token rows unchanged OK
// FLUSH1: flush1: block scales: written blocks/groups 4..5 OK
// FLUSH1: flush1: block scales: other blocks/groups unchanged OK
// FLUSH1: flush1: group scales s2: written blocks/groups 8..11 OK
// FLUSH1: flush1: group scales s2: other blocks/groups unchanged OK
// FLUSH1: flush1: zero points z2: written blocks/groups 8..11 OK
// FLUSH1: flush1: zero points z2: other blocks/groups unchanged OK
// FLUSH1: flush1: all checks passed
func.func @flush1(%buf: tensor<1x2x32x64xi8> {qattn.name = "buf"}, %s: tensor<1x2xf32> {qattn.name = "s"},
                  %codes: tensor<1x100x48xi8> {qattn.name = "codes"},
                  %bs: tensor<1x2x7xf32> {qattn.name = "bs"},
                  %s2: tensor<1x2x13x64xi8> {qattn.name = "s2"},
                  %z2: tensor<1x2x13x64xi8> {qattn.name = "z2"})
    -> (tensor<1x100x48xi8> {qattn.name = "new_codes"}, tensor<1x2x7xf32> {qattn.name = "new_bs"},
        tensor<1x2x13x64xi8> {qattn.name = "new_s2"}, tensor<1x2x13x64xi8> {qattn.name = "new_z2"}) {
  %pos = arith.constant 64 : index
  %p, %b, %g, %z = qattn.buffer_flush %buf, %s into %codes, %bs, %s2, %z2 [%pos]
      {stage1 = #qattn.stage1<block = 16>, stage2 = #qattn.stage2<bits = [4, 2], group = 8>}
      : tensor<1x2x32x64xi8>, tensor<1x2xf32> into tensor<1x100x48xi8>, tensor<1x2x7xf32>,
        tensor<1x2x13x64xi8>, tensor<1x2x13x64xi8>
  return %p, %b, %g, %z : tensor<1x100x48xi8>, tensor<1x2x7xf32>, tensor<1x2x13x64xi8>, tensor<1x2x13x64xi8>
}

// RUN: %python %S/Inputs/make_inputs.py flush --seed 43 --shape 2,3,301,32 --nb 64 --block 32 --scale f16 --gran channel --group 16 --bits 3 --order msb --out %t/flush2-in
// RUN: qattn-run %t/art --function flush2 --input buf=%t/flush2-in/buf.npy --input s=%t/flush2-in/s.npy --input codes=%t/flush2-in/codes.npy --input bs=%t/flush2-in/bs.npy --input s2=%t/flush2-in/s2.npy --input z2=%t/flush2-in/z2.npy --output-dir %t/flush2
// RUN: %python %S/Inputs/check_buffer.py flush --case flush2 --art %t/art --function flush2 --in %t/flush2-in --out %t/flush2 --pos 224 --stage1 block=32,scale=f16,gran=channel --stage2 bits=3,group=16,order=msb | FileCheck %s --check-prefix=FLUSH2
// FLUSH2: flush2: codes: written token rows 224..287 OK
// FLUSH2: flush2: codes: other token rows unchanged OK
// FLUSH2: flush2: block scales: written blocks/groups 7..8 OK
// FLUSH2: flush2: block scales: other blocks/groups unchanged OK
// FLUSH2: flush2: group scales s2: written blocks/groups 14..17 OK
// FLUSH2: flush2: group scales s2: other blocks/groups unchanged OK
// FLUSH2: flush2: zero points z2: written blocks/groups 14..17 OK
// FLUSH2: flush2: zero points z2: other blocks/groups unchanged OK
// FLUSH2: flush2: all checks passed
func.func @flush2(%buf: tensor<2x3x64x32xi8> {qattn.name = "buf"}, %s: tensor<2x3xf32> {qattn.name = "s"},
                  %codes: tensor<2x301x36xi8> {qattn.name = "codes"},
                  %bs: tensor<2x3x10x32xf16> {qattn.name = "bs"},
                  %s2: tensor<2x3x19x32xi8> {qattn.name = "s2"},
                  %z2: tensor<2x3x19x32xi8> {qattn.name = "z2"})
    -> (tensor<2x301x36xi8> {qattn.name = "new_codes"}, tensor<2x3x10x32xf16> {qattn.name = "new_bs"},
        tensor<2x3x19x32xi8> {qattn.name = "new_s2"}, tensor<2x3x19x32xi8> {qattn.name = "new_z2"}) {
  %pos = arith.constant 224 : index
  %p, %b, %g, %z = qattn.buffer_flush %buf, %s into %codes, %bs, %s2, %z2 [%pos]
      {stage1 = #qattn.stage1<block = 32, scale = f16, granularity = channel>,
       stage2 = #qattn.stage2<bits = [3], group = 16, order = msb_first>}
      : tensor<2x3x64x32xi8>, tensor<2x3xf32> into tensor<2x301x36xi8>, tensor<2x3x10x32xf16>,
        tensor<2x3x19x32xi8>, tensor<2x3x19x32xi8>
  return %p, %b, %g, %z : tensor<2x301x36xi8>, tensor<2x3x10x32xf16>, tensor<2x3x19x32xi8>, tensor<2x3x19x32xi8>
}

// RUN: %python %S/Inputs/make_inputs.py flush --seed 44 --shape 1,4,37,16 --nb 16 --block 8 --gran channel --group 8 --bits 2-4-3-4 --out %t/flush3-in
// RUN: qattn-run %t/art --function flush3 --input buf=%t/flush3-in/buf.npy --input s=%t/flush3-in/s.npy --input codes=%t/flush3-in/codes.npy --input bs=%t/flush3-in/bs.npy --input s2=%t/flush3-in/s2.npy --input z2=%t/flush3-in/z2.npy --output-dir %t/flush3
// RUN: %python %S/Inputs/check_buffer.py flush --case flush3 --art %t/art --function flush3 --in %t/flush3-in --out %t/flush3 --pos 16 --stage1 block=8,gran=channel --stage2 bits=2-4-3-4,group=8 | FileCheck %s --check-prefix=FLUSH3
// FLUSH3: flush3: codes: written token rows 16..31 OK
// FLUSH3: flush3: codes: other token rows unchanged OK
// FLUSH3: flush3: block scales: written blocks/groups 2..3 OK
// FLUSH3: flush3: block scales: other blocks/groups unchanged OK
// FLUSH3: flush3: group scales s2: written blocks/groups 2..3 OK
// FLUSH3: flush3: group scales s2: other blocks/groups unchanged OK
// FLUSH3: flush3: zero points z2: written blocks/groups 2..3 OK
// FLUSH3: flush3: zero points z2: other blocks/groups unchanged OK
// FLUSH3: flush3: all checks passed
func.func @flush3(%buf: tensor<1x4x16x16xi8> {qattn.name = "buf"}, %s: tensor<1x4xf32> {qattn.name = "s"},
                  %codes: tensor<1x37x26xi8> {qattn.name = "codes"},
                  %bs: tensor<1x4x5x16xf32> {qattn.name = "bs"},
                  %s2: tensor<1x4x5x16xi8> {qattn.name = "s2"},
                  %z2: tensor<1x4x5x16xi8> {qattn.name = "z2"})
    -> (tensor<1x37x26xi8> {qattn.name = "new_codes"}, tensor<1x4x5x16xf32> {qattn.name = "new_bs"},
        tensor<1x4x5x16xi8> {qattn.name = "new_s2"}, tensor<1x4x5x16xi8> {qattn.name = "new_z2"}) {
  %pos = arith.constant 16 : index
  %p, %b, %g, %z = qattn.buffer_flush %buf, %s into %codes, %bs, %s2, %z2 [%pos]
      {stage1 = #qattn.stage1<block = 8, granularity = channel>,
       stage2 = #qattn.stage2<bits = [2, 4, 3, 4], group = 8>}
      : tensor<1x4x16x16xi8>, tensor<1x4xf32> into tensor<1x37x26xi8>, tensor<1x4x5x16xf32>,
        tensor<1x4x5x16xi8>, tensor<1x4x5x16xi8>
  return %p, %b, %g, %z : tensor<1x37x26xi8>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xi8>, tensor<1x4x5x16xi8>
}
