// Comparison of a CUDA op's output with the CPU reference (ggml test-backend-ops style): NaN/Inf
// first, then normalized MSE against the threshold; on failure the worst index and first pairs.
#pragma once

#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace ds::test {

// n values uniform in [lo, hi) from a seed.
inline std::vector<float> random_values(size_t n, uint32_t seed, float lo = -1.f, float hi = 1.f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

inline void check_op(const std::string& name, const std::vector<float>& gpu,
                     const std::vector<float>& cpu, double threshold) {
  INFO(name);
  REQUIRE(gpu.size() == cpu.size());
  // Non-finite reference values (fp16 overflow to inf, NaN) must be matched exactly and stay
  // out of the MSE; a non-finite GPU value where the reference is finite always fails.
  double err = 0, ref = 0, worst = -1;
  size_t worst_i = 0;
  for (size_t i = 0; i < gpu.size(); ++i) {
    if (!std::isfinite(cpu[i])) {
      if (!(gpu[i] == cpu[i] || (std::isnan(gpu[i]) && std::isnan(cpu[i])))) {
        FAIL("at " << i << " the CPU has " << cpu[i] << ", the GPU " << gpu[i]);
      }
      continue;
    }
    if (!std::isfinite(gpu[i]))
      FAIL("non-finite GPU value at " << i << ": " << gpu[i] << " (CPU " << cpu[i] << ")");
    const double d = static_cast<double>(gpu[i]) - cpu[i];
    err += d * d;
    ref += static_cast<double>(cpu[i]) * cpu[i];
    if (std::abs(d) > worst) {
      worst = std::abs(d);
      worst_i = i;
    }
  }
  const double nmse = ref > 0 ? err / ref : err;
  if (!(nmse <= threshold)) {
    std::string pairs;
    for (size_t i = 0; i < gpu.size() && i < 6; ++i) {
      pairs += " (" + std::to_string(gpu[i]) + ", " + std::to_string(cpu[i]) + ")";
    }
    FAIL("nmse " << nmse << " > " << threshold << "; worst at " << worst_i << ": gpu "
                 << gpu[worst_i] << " cpu " << cpu[worst_i] << "; first (gpu, cpu):" << pairs);
  }
  SUCCEED("nmse " << nmse);
}

}  // namespace ds::test
