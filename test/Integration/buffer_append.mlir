// qattn.buffer_append compiled for the CPU against the NumPy model of docs/FORMAT.md: two
// appends into a prefilled decode buffer (rows 3..5 from f32 tokens, rows 11..15 from f16 tokens,
// the second ending at the buffer's last row), with outliers beyond 127 s that must clamp.
// Appended rows bit-exact, every other row unchanged. Inputs from make_inputs.py (seeded).

// REQUIRES: numpy
// RUN: rm -rf %t && qattn-compile %s -o %t/art

// RUN: %python %S/Inputs/make_inputs.py append --seed 41 --shape 2,2,16,64 --tokens 3,5 --dtype float16 --out %t/append-in
// RUN: qattn-run %t/art --function append --input x1=%t/append-in/x1.npy --input x2=%t/append-in/x2.npy --input s=%t/append-in/s.npy --input buf=%t/append-in/buf.npy --output-dir %t/append
// RUN: %python %S/Inputs/check_buffer.py append --case append --art %t/art --function append --in %t/append-in --out %t/append --pos1 3 --pos2 11 | FileCheck %s --check-prefix=APPEND
// APPEND: append: b1 = append(x1) at row 3: written rows 3..5 OK
// APPEND: append: b1 = append(x1) at row 3: other rows unchanged OK
// APPEND: append: b2 = append(x2) at row 11: written rows 11..15 OK
// APPEND: append: b2 = append(x2) at row 11: other rows unchanged OK
// APPEND: append: coverage: outliers beyond 127 s clamped OK
// APPEND: append: all checks passed
func.func @append(%x1: tensor<2x2x3x64xf32> {qattn.name = "x1"},
                  %x2: tensor<2x2x5x64xf16> {qattn.name = "x2"},
                  %s: tensor<2x2xf32> {qattn.name = "s"},
                  %buf: tensor<2x2x16x64xi8> {qattn.name = "buf"})
    -> (tensor<2x2x16x64xi8> {qattn.name = "b1"}, tensor<2x2x16x64xi8> {qattn.name = "b2"}) {
  %c3 = arith.constant 3 : index
  %c11 = arith.constant 11 : index
  %b1 = qattn.buffer_append %x1, %s into %buf[%c3]
      : tensor<2x2x3x64xf32>, tensor<2x2xf32> into tensor<2x2x16x64xi8>
  %b2 = qattn.buffer_append %x2, %s into %b1[%c11]
      : tensor<2x2x5x64xf16>, tensor<2x2xf32> into tensor<2x2x16x64xi8>
  return %b1, %b2 : tensor<2x2x16x64xi8>, tensor<2x2x16x64xi8>
}
