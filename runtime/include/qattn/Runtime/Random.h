//===- Random.h - Seeded test data ------------------------------*- C++ -*-===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//
//
// Seeded generators for float test tensors. Every step is specified here
// (std::mt19937_64 is fully specified by the standard; the uniform and normal
// transforms are written out instead of using std::*_distribution, whose
// algorithms are left to each standard library), so a seed gives the same
// values with every compiler and standard library, up to the last bit of
// libm's log, sin and cos.
//
//===----------------------------------------------------------------------===//

#ifndef QATTN_RUNTIME_RANDOM_H
#define QATTN_RUNTIME_RANDOM_H

#include "qattn/Runtime/Tensor.h"

#include <cstdint>
#include <optional>
#include <string_view>

namespace qattn::rt {

enum class Distribution {
  /// Normal with mean 0 and standard deviation 1 (Box-Muller).
  Normal,
  /// Uniform in [-1, 1).
  Uniform,
  /// Normal, then a seeded set of max(1, C / 8) of the C channels (the last
  /// axis) is scaled by 10 and shifted by a per-channel offset uniform in
  /// [-5, 5), like the outlier channels of real K caches.
  Outlier,
};

/// "normal", "uniform" or "outlier"; nullopt for anything else.
std::optional<Distribution> parseDistribution(std::string_view name);
const char *distributionName(Distribution dist);

/// A float tensor of `dtype` and `shape` drawn from `dist`. The values are
/// generated in float64 and rounded to `dtype` (to nearest even). `seed`
/// selects the stream; see deriveSeed for giving each tensor its own.
Tensor randomTensor(DType dtype, const Shape &shape, Distribution dist,
                    uint64_t seed);

/// The seed of tensor number `index` of a run with seed `seed`: distinct
/// tensors get unrelated streams, and a tensor's values do not depend on
/// which other tensors are generated.
uint64_t deriveSeed(uint64_t seed, uint64_t index);

} // namespace qattn::rt

#endif // QATTN_RUNTIME_RANDOM_H
