//===- Reference.h - Float64 references -------------------------*- C++ -*-===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//
//
// What a function's results should be, computed in float64 from its
// arguments as the manifest's "reference" entry says (docs/ARTIFACT.md).
//
//===----------------------------------------------------------------------===//

#ifndef QATTN_RUNTIME_REFERENCE_H
#define QATTN_RUNTIME_REFERENCE_H

#include "qattn/Runtime/Manifest.h"
#include "qattn/Runtime/Tensor.h"

#include <string>
#include <vector>

namespace qattn::rt {

/// Why `q` [B, Hq, Nq, d], `k` [B, Hkv, Nk, d] and `v` [B, Hkv, Nk, dv] do
/// not fit together for attention; empty if they do. Hq must be a multiple
/// of Hkv, and causal attention needs Nq <= Nk, since the mask aligns the
/// last query with the last key and earlier queries would see no key.
std::string attentionShapeError(const Shape &q, const Shape &k, const Shape &v,
                                bool causal);

/// The shape of attention's result, [B, Hq, Nq, dv], for shapes that
/// attentionShapeError accepts.
Shape attentionResultShape(const Shape &q, const Shape &v);

/// O[b, h, i, :] = softmax(scale * q_i . k_j + mask) V in float64, with
/// query head h reading KV head h / (Hq / Hkv), and, when `causal`, key j
/// masked for query i if j > i + (Nk - Nq). Returns O row-major. Throws
/// Error if the shapes do not fit.
std::vector<double> attention(const Tensor &q, const Tensor &k, const Tensor &v,
                              bool causal, double scale);

/// The values one result should have.
struct Expectation {
  size_t result;
  /// What the values are, for reports: "float64 attention", "arg x".
  std::string source;
  std::vector<double> values;
};

/// The expectations of `fn`'s reference for arguments `args`, whose shapes
/// must match `fn.args`. Empty for reference kind "none".
std::vector<Expectation> expectedResults(const FunctionSpec &fn,
                                         const std::vector<Tensor> &args);

} // namespace qattn::rt

#endif // QATTN_RUNTIME_REFERENCE_H
