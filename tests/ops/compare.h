// How far an op's output is from another side's (the CPU op, or a float64 reference), by a
// case's metric; plain C++ so the tests and the benchmark share it. Non-finite reference values
// must be matched exactly and stay out of the error; a non-finite value where the reference is
// finite fails.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include "tests/ops/op_cases.h"

namespace ds::test {

struct Comparison {
  bool ok = false;
  double error = 0;    // by the metric
  std::string detail;  // why it failed: the first mismatch, or the worst element and first pairs
};

template <typename R>
Comparison compare(const std::vector<float>& got, const std::vector<R>& ref, Metric metric,
                   double bound) {
  Comparison c;
  if (got.size() != ref.size()) {
    c.detail = "size " + std::to_string(got.size()) + " vs " + std::to_string(ref.size());
    return c;
  }
  double err = 0, norm = 0, worst = -1;
  size_t worst_i = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = got[i], r = static_cast<double>(ref[i]);
    if (!std::isfinite(r)) {
      if (!(g == r || (std::isnan(g) && std::isnan(r)))) {
        c.detail = "at " + std::to_string(i) + " the reference has " + std::to_string(r) +
                   ", the op " + std::to_string(g);
        return c;
      }
      continue;
    }
    if (!std::isfinite(g)) {
      c.detail = "non-finite value at " + std::to_string(i) + ": " + std::to_string(g) +
                 " (reference " + std::to_string(r) + ")";
      return c;
    }
    const double d = std::abs(g - r);
    if (metric == Metric::nmse) {
      err += d * d;
      norm += r * r;
    } else {
      const double rel = r != 0 ? d / std::abs(r) : d;
      err = std::max(err, rel);
    }
    if (d > worst) {
      worst = d;
      worst_i = i;
    }
  }
  c.error = metric == Metric::nmse && norm > 0 ? err / norm : err;
  c.ok = c.error <= bound;
  if (!c.ok) {
    c.detail = (metric == Metric::nmse ? "nmse " : "max relative error ") +
               std::to_string(c.error) + " > " + std::to_string(bound) + "; worst at " +
               std::to_string(worst_i) + ": " + std::to_string(got[worst_i]) + " vs " +
               std::to_string(static_cast<double>(ref[worst_i])) + "; first (op, reference):";
    for (size_t i = 0; i < got.size() && i < 6; ++i) {
      c.detail +=
          " (" + std::to_string(got[i]) + ", " + std::to_string(static_cast<double>(ref[i])) + ")";
    }
  }
  return c;
}

}  // namespace ds::test
