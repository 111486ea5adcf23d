//===- Metrics.h - Error metrics --------------------------------*- C++ -*-===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//
//
// How far a result O is from its reference R, both as float64:
//
//   max_abs = max |O - R|
//   rel_fro = ||O - R||_F / ||R||_F
//   sqnr    = 10 log10(sum R^2 / sum (O - R)^2) dB
//
// An exact result has rel_fro 0 and sqnr +inf; equal infinities count as
// exact. A NaN anywhere in O makes every metric NaN, so that no threshold
// can pass it.
//
//===----------------------------------------------------------------------===//

#ifndef QATTN_RUNTIME_METRICS_H
#define QATTN_RUNTIME_METRICS_H

#include <cstdint>
#include <string>
#include <vector>

namespace qattn::rt {

struct ErrorMetrics {
  double maxAbs = 0;
  double relFro = 0;
  double sqnrDb = 0;
};

/// Compares `actual` with `expected`, which must have the same size.
ErrorMetrics compare(const std::vector<double> &actual,
                     const std::vector<double> &expected);

/// "max_abs=1.234e-02 rel_fro=3.100e-02 sqnr=30.2 dB"; an exact result's
/// SQNR prints as "inf".
std::string formatMetrics(const ErrorMetrics &metrics);

/// The number of NaN values in `values`.
int64_t countNaN(const std::vector<double> &values);

} // namespace qattn::rt

#endif // QATTN_RUNTIME_METRICS_H
