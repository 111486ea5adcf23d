//===- Npy.h - NumPy .npy files ---------------------------------*- C++ -*-===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//
//
// Reads and writes NumPy's .npy format (versions 1.0 and 2.0), the way
// tensors enter and leave qattn-run. Only C-order arrays of the dtypes below
// are supported; the runtime assumes a little-endian host.
//
//   .npy type   runtime dtype
//   <f8 <f4 <f2 f64 f32 f16
//   <i8 <i4 |i1 i64 i32 i8
//   <u2         bf16, as raw bit patterns (NumPy has no bfloat16)
//   |u1         i8, the same bytes (qattn's packed codes are int8 tensors
//               holding unsigned values, which NumPy users keep as uint8)
//
//===----------------------------------------------------------------------===//

#ifndef QATTN_RUNTIME_NPY_H
#define QATTN_RUNTIME_NPY_H

#include "qattn/Runtime/Tensor.h"

#include <string>

namespace qattn::rt {

/// The .npy type string written for `dtype`, e.g. "<f4" or "<u2" for bf16.
const char *npyDescr(DType dtype);

/// Reads the .npy file at `path`. Throws Error naming the file and what is
/// wrong with it: missing or unreadable, bad magic, unsupported version or
/// dtype, Fortran order, malformed header, truncated or excess data.
Tensor readNpy(const std::string &path);

/// Writes `tensor` to `path` as a version 1.0 .npy file (2.0 if the header
/// needs it). Throws Error if the file cannot be written.
void writeNpy(const std::string &path, const Tensor &tensor);

} // namespace qattn::rt

#endif // QATTN_RUNTIME_NPY_H
