//===- Random.cpp - Seeded test data --------------------------------------===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//

#include "qattn/Runtime/Random.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

using namespace qattn::rt;

std::optional<Distribution>
qattn::rt::parseDistribution(std::string_view name) {
  if (name == "normal")
    return Distribution::Normal;
  if (name == "uniform")
    return Distribution::Uniform;
  if (name == "outlier")
    return Distribution::Outlier;
  return std::nullopt;
}

const char *qattn::rt::distributionName(Distribution dist) {
  switch (dist) {
  case Distribution::Normal:
    return "normal";
  case Distribution::Uniform:
    return "uniform";
  case Distribution::Outlier:
    return "outlier";
  }
  return "?"; // Unreachable: the switch covers every Distribution.
}

uint64_t qattn::rt::deriveSeed(uint64_t seed, uint64_t index) {
  // SplitMix64's finalizer: nearby (seed, index) pairs map to unrelated
  // mt19937_64 seeds.
  uint64_t z = seed + 0x9E3779B97F4A7C15ull * (index + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

namespace {
class Generator {
public:
  explicit Generator(uint64_t seed) : engine(seed) {}

  /// Uniform in [0, 1): the top 53 bits of one draw, so every value is a
  /// multiple of 2^-53 and exactly representable.
  double unit() { return double(engine() >> 11) * 0x1p-53; }

  double uniform() { return 2 * unit() - 1; }

  /// Standard normal by the Box-Muller transform, which turns two uniform
  /// draws into two independent normals; the second is kept for the next
  /// call.
  double normal() {
    if (spare) {
      double value = *spare;
      spare.reset();
      return value;
    }
    constexpr double kTwoPi = 6.283185307179586476925;
    double u1 = 1 - unit(); // In (0, 1], so the log is finite.
    double u2 = unit();
    double radius = std::sqrt(-2 * std::log(u1));
    spare = radius * std::sin(kTwoPi * u2);
    return radius * std::cos(kTwoPi * u2);
  }

  /// Uniform in [0, n), by rejecting the draws that would make a plain
  /// modulo favour small values.
  uint64_t below(uint64_t n) {
    assert(n > 0 && "empty range");
    uint64_t limit = std::numeric_limits<uint64_t>::max() / n * n;
    uint64_t draw;
    do
      draw = engine();
    while (draw >= limit);
    return draw % n;
  }

private:
  std::mt19937_64 engine;
  std::optional<double> spare;
};

/// Scales and shifts a seeded max(1, C / 8) of the C channels of `values`
/// (the last axis, row-major), continuing `gen`'s stream.
void addOutlierChannels(std::vector<double> &values, size_t channels,
                        Generator &gen) {
  // The first `count` entries of a partial Fisher-Yates shuffle are the
  // chosen channels.
  size_t count = std::max<size_t>(1, channels / 8);
  std::vector<size_t> order(channels);
  std::iota(order.begin(), order.end(), size_t(0));
  for (size_t i = 0; i < count; ++i)
    std::swap(order[i], order[i + gen.below(channels - i)]);

  std::vector<bool> isOutlier(channels, false);
  std::vector<double> offset(channels, 0.0);
  for (size_t i = 0; i < count; ++i) {
    isOutlier[order[i]] = true;
    offset[order[i]] = 5 * gen.uniform();
  }
  for (size_t i = 0; i < values.size(); ++i)
    if (isOutlier[i % channels])
      values[i] = 10 * values[i] + offset[i % channels];
}
} // namespace

Tensor qattn::rt::randomTensor(DType dtype, const Shape &shape,
                               Distribution dist, uint64_t seed) {
  assert(isFloat(dtype) && "random data is only generated for floats");
  Tensor tensor(dtype, shape);
  Generator gen(seed);
  std::vector<double> values(size_t(tensor.getNumElements()));
  for (double &value : values)
    value = dist == Distribution::Uniform ? gen.uniform() : gen.normal();
  if (dist == Distribution::Outlier && !values.empty())
    addOutlierChannels(values, shape.empty() ? 1 : size_t(shape.back()), gen);
  for (size_t i = 0; i < values.size(); ++i)
    tensor.setDouble(int64_t(i), values[i]);
  return tensor;
}
