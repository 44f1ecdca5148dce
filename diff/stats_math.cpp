// The N-way formulas: divergence index, standard deviations, Pass@k, G-Pass@k_τ, mG-Pass@k.
#include "diff/stats_math.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/error.h"

namespace ds::diff {

int div_index(const std::vector<const std::vector<int32_t>*>& responses) {
  if (responses.empty()) return 0;
  size_t shortest = responses[0]->size(), longest = shortest;
  for (const auto* r : responses) {
    shortest = std::min(shortest, r->size());
    longest = std::max(longest, r->size());
  }
  for (size_t t = 0; t < shortest; ++t) {
    for (const auto* r : responses) {
      if ((*r)[t] != (*responses[0])[t]) return static_cast<int>(t);
    }
  }
  return static_cast<int>(shortest == longest ? longest : shortest);
}

double stddev(const std::vector<double>& x, int ddof) {
  if (x.size() < static_cast<size_t>(ddof) + 1) return std::numeric_limits<double>::quiet_NaN();
  if (std::all_of(x.begin(), x.end(), [&](double v) { return v == x[0]; })) return 0.0;
  double mean = 0;
  for (double v : x) mean += v;
  mean /= static_cast<double>(x.size());
  double ss = 0;
  for (double v : x) ss += (v - mean) * (v - mean);
  return std::sqrt(ss / static_cast<double>(x.size() - static_cast<size_t>(ddof)));
}

double log_choose(int64_t n, int64_t k) {
  if (k < 0 || k > n || n < 0) return -std::numeric_limits<double>::infinity();
  return std::lgamma(static_cast<double>(n) + 1) - std::lgamma(static_cast<double>(k) + 1) -
         std::lgamma(static_cast<double>(n - k) + 1);
}

namespace {

void check_nck(int n, int c, int k) {
  if (n < 1 || c < 0 || c > n || k < 1 || k > n) {
    throw Error("pass-rate estimators need 0 <= c <= n and 1 <= k <= n",
                "--k takes values between 1 and the number of samples per configuration");
  }
}

// The smallest whole j with j >= τk, robust to τk landing a rounding error above a whole number.
int ceil_tau_k(double tau, int k) {
  const double x = tau * k;
  const double r = std::round(x);
  return std::abs(x - r) < 1e-9 ? static_cast<int>(r) : static_cast<int>(std::ceil(x));
}

}  // namespace

double pass_at_k(int n, int c, int k) {
  check_nck(n, c, k);
  if (n - c < k) return 1.0;
  return 1.0 - std::exp(log_choose(n - c, k) - log_choose(n, k));
}

double g_pass_at_k(int n, int c, int k, double tau) {
  check_nck(n, c, k);
  const double denom = log_choose(n, k);
  double sum = 0;
  for (int j = std::max(0, ceil_tau_k(tau, k)); j <= std::min(c, k); ++j) {
    const double l = log_choose(c, j) + log_choose(n - c, k - j) - denom;
    if (std::isfinite(l)) sum += std::exp(l);
  }
  return std::min(sum, 1.0);
}

double mg_pass_at_k(int n, int c, int k) {
  check_nck(n, c, k);
  double sum = 0;
  for (int i = ceil_tau_k(0.5, k) + 1; i <= k; ++i) {
    sum += g_pass_at_k(n, c, k, static_cast<double>(i) / k);
  }
  return 2.0 / k * sum;
}

}  // namespace ds::diff
