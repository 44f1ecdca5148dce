// Numeric comparison helpers for tests: relative error of whole rows of values.
#pragma once

#include <algorithm>
#include <cmath>
#include <span>

namespace ds::test {

// max_i |a_i - b_i| / max_i |b_i|: the error relative to the row's scale, with b the reference.
// Infinite when any value is NaN, so NaN always fails a tolerance.
inline double max_rel_error(std::span<const double> a, std::span<const double> b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (std::isnan(a[i]) || std::isnan(b[i])) return INFINITY;
    num = std::max(num, std::abs(a[i] - b[i]));
    den = std::max(den, std::abs(b[i]));
  }
  if (a.size() != b.size()) return INFINITY;
  return den == 0 ? num : num / den;
}

}  // namespace ds::test
