//===- Reference.cpp - Float64 references ---------------------------------===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//

#include "qattn/Runtime/Reference.h"

#include "qattn/Runtime/Dims.h"
#include "qattn/Runtime/Error.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace qattn::rt;

std::string qattn::rt::attentionShapeError(const Shape &q, const Shape &k,
                                           const Shape &v, bool causal) {
  if (q.size() != 4 || k.size() != 4 || v.size() != 4)
    return "attention needs rank-4 [B, H, N, d] operands, got q " +
           formatShape(q) + ", k " + formatShape(k) + ", v " + formatShape(v);
  if (q[0] != k[0] || k[0] != v[0])
    return "q " + formatShape(q) + ", k " + formatShape(k) + " and v " +
           formatShape(v) + " differ in batch size";
  if (k[1] != v[1] || k[2] != v[2])
    return "k " + formatShape(k) + " and v " + formatShape(v) +
           " differ in heads or tokens";
  if (q[1] % k[1] != 0)
    return "q's " + std::to_string(q[1]) + " heads are not a multiple of k's " +
           std::to_string(k[1]);
  if (q[3] != k[3])
    return "q " + formatShape(q) + " and k " + formatShape(k) +
           " differ in head dimension";
  if (causal && q[2] > k[2])
    return "causal attention needs at most as many queries as keys, got " +
           std::to_string(q[2]) + " queries and " + std::to_string(k[2]) +
           " keys";
  return "";
}

Shape qattn::rt::attentionResultShape(const Shape &q, const Shape &v) {
  return {q[0], q[1], q[2], v[3]};
}

namespace {
/// Row-major strides of a rank-4 shape.
struct Strides4 {
  int64_t b, h, n;
  explicit Strides4(const Shape &s)
      : b(s[1] * s[2] * s[3]), h(s[2] * s[3]), n(s[3]) {}
};

/// One query row: out[0, dv) = softmax(scale * q . k_j) v_j over keys
/// j < visible, where k and v point at the KV head's first token.
void attendRow(const double *q, const double *k, const double *v,
               int64_t visible, int64_t d, int64_t dv, double scale,
               double *out) {
  std::vector<double> scores(static_cast<size_t>(visible));
  double maxScore = -std::numeric_limits<double>::infinity();
  for (int64_t j = 0; j < visible; ++j) {
    double dot = 0;
    for (int64_t c = 0; c < d; ++c)
      dot += q[c] * k[j * d + c];
    scores[size_t(j)] = scale * dot;
    maxScore = std::max(maxScore, scores[size_t(j)]);
  }
  // Subtracting the maximum keeps exp from overflowing; it cancels in the
  // normalization.
  double sum = 0;
  std::fill(out, out + dv, 0.0);
  for (int64_t j = 0; j < visible; ++j) {
    double weight = std::exp(scores[size_t(j)] - maxScore);
    sum += weight;
    for (int64_t c = 0; c < dv; ++c)
      out[c] += weight * v[j * dv + c];
  }
  for (int64_t c = 0; c < dv; ++c)
    out[c] /= sum;
}
} // namespace

std::vector<double> qattn::rt::attention(const Tensor &q, const Tensor &k,
                                         const Tensor &v, bool causal,
                                         double scale) {
  std::string shapeError =
      attentionShapeError(q.getShape(), k.getShape(), v.getShape(), causal);
  if (!shapeError.empty())
    fail(shapeError);
  const Shape &qs = q.getShape(), &ks = k.getShape(), &vs = v.getShape();
  int64_t batch = qs[0], heads = qs[1], nq = qs[2], d = qs[3];
  int64_t nk = ks[2], dv = vs[3];
  int64_t group = heads / ks[1];
  Strides4 qStride(qs), kStride(ks), vStride(vs),
      oStride(attentionResultShape(qs, vs));

  std::vector<double> qd = q.toDoubles(), kd = k.toDoubles(),
                      vd = v.toDoubles();
  std::vector<double> out(size_t(batch * heads * nq * dv));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < nq; ++i) {
        int64_t kvHead = h / group;
        // The mask aligns the last query with the last key.
        int64_t visible = causal ? i + (nk - nq) + 1 : nk;
        attendRow(&qd[b * qStride.b + h * qStride.h + i * qStride.n],
                  &kd[b * kStride.b + kvHead * kStride.h],
                  &vd[b * vStride.b + kvHead * vStride.h], visible, d, dv,
                  scale, &out[b * oStride.b + h * oStride.h + i * oStride.n]);
      }
  return out;
}

std::vector<Expectation>
qattn::rt::expectedResults(const FunctionSpec &fn,
                           const std::vector<Tensor> &args) {
  const Reference &ref = fn.reference;
  std::vector<Expectation> expectations;
  switch (ref.kind) {
  case Reference::Kind::None:
    break;
  case Reference::Kind::Attention: {
    const AttentionReference &att = ref.attention;
    const Tensor &q = args[att.q], &k = args[att.k], &v = args[att.v];
    std::vector<double> values = attention(q, k, v, att.causal, att.scale);
    // The manifest reader checked static shapes; symbolic ones only now
    // have sizes.
    if (fn.results[att.result].hasSymbols()) {
      std::vector<Shape> argShapes;
      for (const Tensor &arg : args)
        argShapes.push_back(arg.getShape());
      Shape shape = getResultShapes(fn, argShapes)[att.result];
      Shape expected = attentionResultShape(q.getShape(), v.getShape());
      if (shape != expected)
        fail("result \"", fn.results[att.result].name, "\" has shape ",
             formatShape(shape), " for these arguments; attention gives ",
             formatShape(expected));
    }
    expectations.push_back(
        {att.result, "float64 attention", std::move(values)});
    break;
  }
  case Reference::Kind::Roundtrip:
    for (const RoundtripPair &pair : ref.pairs)
      expectations.push_back({pair.result, "arg " + fn.args[pair.arg].name,
                              args[pair.arg].toDoubles()});
    break;
  }
  return expectations;
}
