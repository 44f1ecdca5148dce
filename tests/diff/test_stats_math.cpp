// The N-way formulas against hand-computed small cases, and the pass-rate estimators against an
// independent computation in exact rational arithmetic by Python's math.comb and fractions.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>

#include "diff/stats_math.h"

using Catch::Matchers::WithinAbs;
using Catch::Matchers::WithinRel;
using namespace ds::diff;

TEST_CASE("div_index is the first position where any two responses differ", "[stats]") {
  const std::vector<int32_t> a = {5, 6, 7}, b = {5, 6, 8}, c = {5, 6, 7}, d = {5, 6}, e = {};
  CHECK(div_index({&a, &c}) == 3);      // identical: the full length
  CHECK(div_index({&a, &c, &b}) == 2);  // any two differ at 2
  CHECK(div_index({&a, &d}) == 2);      // one ends where the other goes on
  CHECK(div_index({&e, &a}) == 0);
  CHECK(div_index({&a}) == 3);
}

TEST_CASE("stddev: sample and population, exactly 0 for equal values", "[stats]") {
  CHECK_THAT(stddev({1, 2, 3, 4}, 1), WithinRel(std::sqrt(5.0 / 3.0), 1e-15));
  CHECK_THAT(stddev({1, 2, 3, 4}, 0), WithinRel(std::sqrt(1.25), 1e-15));
  CHECK(stddev({0.1, 0.1, 0.1}, 1) == 0.0);  // exact, no rounding residue
  CHECK(std::isnan(stddev({3.0}, 1)));
  CHECK(stddev({3.0}, 0) == 0.0);
}

TEST_CASE("Pass@k, G-Pass@k and mG-Pass@k on hand-computed cases", "[stats]") {
  // n = 5, c = 2, k = 2: 1 - C(3,2)/C(5,2) = 1 - 3/10.
  CHECK_THAT(pass_at_k(5, 2, 2), WithinAbs(0.7, 1e-12));
  CHECK(pass_at_k(5, 0, 3) == 0.0);
  CHECK(pass_at_k(5, 3, 3) == 1.0);  // n - c < k: always one right
  // n = 4, c = 2, k = 2: G-Pass@2_1.0 = C(2,2)C(2,0)/C(4,2) = 1/6;
  // G-Pass@2_0.5 = j from 1: (C(2,1)C(2,1) + C(2,2)C(2,0)) / 6 = 5/6.
  CHECK_THAT(g_pass_at_k(4, 2, 2, 1.0), WithinAbs(1.0 / 6, 1e-12));
  CHECK_THAT(g_pass_at_k(4, 2, 2, 0.5), WithinAbs(5.0 / 6, 1e-12));
  CHECK_THAT(g_pass_at_k(4, 2, 2, 0.0), WithinAbs(1.0, 1e-12));
  // mG-Pass@2 = (2/2) * Σ_{i=⌈1⌉+1}^{2} G-Pass@2_{i/2} = G-Pass@2_1.0.
  CHECK_THAT(mg_pass_at_k(4, 2, 2), WithinAbs(1.0 / 6, 1e-12));
  // mG-Pass@4 with n = k = 4, c = 3: i = ⌈2⌉+1 .. 4 = 3, 4; drawing all four samples,
  // G_{0.75} = [3 >= 3] = 1 and G_{1.0} = [3 >= 4] = 0, so (2/4)(1 + 0) = 0.5.
  CHECK_THAT(mg_pass_at_k(4, 3, 4), WithinAbs(0.5, 1e-12));
  CHECK_THROWS(pass_at_k(4, 2, 5));
}

namespace {

// Runs python3 on `script` and returns its stdout.
std::string python(const std::string& script) {
  const std::string cmd = "python3 - <<'PYEOF'\n" + script + "\nPYEOF\n";
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  REQUIRE(pclose(p) == 0);
  return out;
}

}  // namespace

TEST_CASE("pass-rate estimators agree with exact math.comb arithmetic in Python", "[stats]") {
  // Exact rationals: G-Pass@k_τ as defined, from ⌈τk⌉ by Fraction, and mG-Pass@k from it.
  const std::string out = python(R"(
from fractions import Fraction as F
from math import comb, ceil
def C(a, b):
    return comb(a, b) if 0 <= b <= a else 0
def g(n, c, k, tau):
    lo = ceil(F(tau) * k)
    return sum(F(C(c, j) * C(n - c, k - j), C(n, k)) for j in range(lo, c + 1))
def mg(n, c, k):
    return F(2, k) * sum(g(n, c, k, F(i, k)) for i in range(ceil(F(k, 2)) + 1, k + 1))
def p(n, c, k):
    return 1 - F(C(n - c, k), C(n, k))
cases = [(n, c, k) for n in (1, 2, 5, 8, 16, 48) for c in range(0, n + 1, max(1, n // 6)) for k in (1, 2, 3, 4, 8, 16) if k <= n]
for n, c, k in cases:
    vals = [p(n, c, k)] + [g(n, c, k, t) for t in (F(1, 4), F(1, 2), F(3, 4), F(1))] + [mg(n, c, k)]
    print(n, c, k, ' '.join(repr(float(v)) for v in vals))
)");
  std::istringstream in(out);
  int n, c, k, checked = 0;
  while (in >> n >> c >> k) {
    double pass, g25, g50, g75, g100, mg;
    in >> pass >> g25 >> g50 >> g75 >> g100 >> mg;
    INFO("n=" << n << " c=" << c << " k=" << k);
    CHECK_THAT(pass_at_k(n, c, k), WithinAbs(pass, 1e-12));
    CHECK_THAT(g_pass_at_k(n, c, k, 0.25), WithinAbs(g25, 1e-12));
    CHECK_THAT(g_pass_at_k(n, c, k, 0.5), WithinAbs(g50, 1e-12));
    CHECK_THAT(g_pass_at_k(n, c, k, 0.75), WithinAbs(g75, 1e-12));
    CHECK_THAT(g_pass_at_k(n, c, k, 1.0), WithinAbs(g100, 1e-12));
    CHECK_THAT(mg_pass_at_k(n, c, k), WithinAbs(mg, 1e-12));
    ++checked;
  }
  CHECK(checked > 100);
}
