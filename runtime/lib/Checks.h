//===- Checks.h - Checking tensors against a signature ----------*- C++ -*-===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//
//
// The checks that Function::call makes on host tensors, shared with the
// targets' other entry points (cuda: device pointers), so that every way in
// reports a mismatch in the same words.
//
//===----------------------------------------------------------------------===//

#ifndef QATTN_RUNTIME_LIB_CHECKS_H
#define QATTN_RUNTIME_LIB_CHECKS_H

#include "qattn/Runtime/Dims.h"
#include "qattn/Runtime/Types.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace qattn::rt {

/// Throws Error unless `function` gets as many `kind`s ("argument",
/// "result") as it takes.
void checkCount(const char *kind, size_t expected, size_t got,
                const std::string &function);

/// Throws Error naming the tensor, the function and both signatures unless a
/// tensor of `dtype` and shape[0..rank) matches `spec`: its dtype, rank and
/// static sizes. Binds `spec`'s symbols in `bindings`, or checks them against
/// their bindings (a mismatch names the dimension and both sizes). A call
/// checks its arguments, then its results, with one `bindings`.
void checkTensor(const char *kind, const TensorSpec &spec, DType dtype,
                 const int64_t *shape, size_t rank,
                 const std::string &function, DimBindings &bindings);

} // namespace qattn::rt

#endif // QATTN_RUNTIME_LIB_CHECKS_H
