// Inputs of the op cases: seeded uniform values, rounded to a storage type so that every side
// (CPU op, CUDA op, float64 reference) reads the same numbers.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "common/float_formats.h"

namespace ds::test {

// n values uniform in [lo, hi) from a seed.
inline std::vector<float> random_values(size_t n, uint32_t seed, float lo = -1.f, float hi = 1.f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

inline std::vector<float> rounded(std::vector<float> v, Storage t) {
  for (float& x : v) x = round_to(x, t);
  return v;
}

}  // namespace ds::test
