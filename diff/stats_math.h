// The formulas behind `driftscope stats`, over plain numbers (docs/metrics.md, "N-way
// statistics"): divergence index, standard deviations, and the pass-rate estimators Pass@k,
// G-Pass@k_τ and mG-Pass@k with their binomials in log space.
#pragma once

#include <cstdint>
#include <vector>

namespace ds::diff {

// Div_Index of N responses: the first position at which any two differ; when none differ, the
// full length. A response that ends where another goes on differs there (its length).
int div_index(const std::vector<const std::vector<int32_t>*>& responses);

// Standard deviation of `x`: sample (ddof = 1) or population (ddof = 0). Exactly 0 when every
// value is equal; NaN when there are fewer than ddof + 1 values.
double stddev(const std::vector<double>& x, int ddof);

// log C(n, k) (lgamma); -inf when k < 0 or k > n.
double log_choose(int64_t n, int64_t k);

// Pass@k of one question with c correct among n samples: 1 − C(n−c, k)/C(n, k).
double pass_at_k(int n, int c, int k);

// G-Pass@k_τ of one question: Σ_{j=⌈τk⌉}^{c} C(c,j)·C(n−c,k−j)/C(n,k), the probability that at
// least ⌈τk⌉ of k samples drawn without replacement are correct.
double g_pass_at_k(int n, int c, int k, double tau);

// mG-Pass@k of one question: (2/k)·Σ_{i=⌈0.5k⌉+1}^{k} G-Pass@k_{i/k}.
double mg_pass_at_k(int n, int c, int k);

}  // namespace ds::diff
