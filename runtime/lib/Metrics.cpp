//===- Metrics.cpp - Error metrics ----------------------------------------===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//

#include "qattn/Runtime/Metrics.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdio>
#include <limits>

using namespace qattn::rt;

ErrorMetrics qattn::rt::compare(const std::vector<double> &actual,
                                const std::vector<double> &expected) {
  assert(actual.size() == expected.size() && "comparing different sizes");
  double maxAbs = 0, errorSq = 0, signalSq = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    // Equal values, infinities included, are exact; inf - inf would be NaN.
    double diff = actual[i] == expected[i] ? 0 : actual[i] - expected[i];
    maxAbs = std::max(maxAbs, std::fabs(diff));
    errorSq += diff * diff;
    signalSq += expected[i] * expected[i];
  }
  if (std::isnan(errorSq)) {
    // std::max skipped the NaN differences; make every metric show them.
    double nan = std::numeric_limits<double>::quiet_NaN();
    return {nan, nan, nan};
  }
  if (errorSq == 0) // Exact, even against an all-zero reference.
    return {0, 0, std::numeric_limits<double>::infinity()};
  // Against an all-zero reference any error is infinitely large: the
  // divisions give +inf and log10(0) = -inf dB.
  return {maxAbs, std::sqrt(errorSq) / std::sqrt(signalSq),
          10 * std::log10(signalSq / errorSq)};
}

namespace {
/// printf's `format` for finite values; "inf", "-inf" and "nan" otherwise,
/// which C lets printf spell in more than one way.
std::string formatNumber(const char *format, double value) {
  if (std::isnan(value))
    return "nan";
  if (std::isinf(value))
    return value > 0 ? "inf" : "-inf";
  char text[32];
  std::snprintf(text, sizeof(text), format, value);
  return text;
}
} // namespace

std::string qattn::rt::formatMetrics(const ErrorMetrics &metrics) {
  return "max_abs=" + formatNumber("%.3e", metrics.maxAbs) +
         " rel_fro=" + formatNumber("%.3e", metrics.relFro) +
         " sqnr=" + formatNumber("%.1f", metrics.sqnrDb) + " dB";
}

int64_t qattn::rt::countNaN(const std::vector<double> &values) {
  return std::count_if(values.begin(), values.end(),
                       [](double value) { return std::isnan(value); });
}
