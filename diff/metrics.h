// The diff metrics on plain arrays (docs/metrics.md has the formulas): hidden-state drift of one
// position, and the logits comparisons of one row. Everything is accumulated in double.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace ds::diff {

// Drift of one position at one site; a = A's row (the reference), b = B's row.
struct RowDrift {
  double rel_l2 = 0;        // ‖a−b‖/‖a‖; 0 when both are 0, +inf when only ‖a‖ is 0
  double cos = 1;           // a·b/(‖a‖‖b‖); 1 when both are 0, 0 when exactly one is
  double max_abs = 0;       // max_i |a_i − b_i|
  bool non_finite = false;  // a NaN or Inf on either side: all three are NaN
  bool identical = true;    // a_i == b_i for every i
};
RowDrift row_drift(std::span<const float> a, std::span<const float> b);

// One logits row of one trace: the stored top-K (sorted by logit, descending), the log-sum-exp
// of the full row, and optionally the full row.
struct LogitsRow {
  std::span<const int32_t> ids;
  std::span<const float> logits;
  double lse = 0;
  std::span<const float> full;  // empty unless the trace stored full logits

  // log p(id) = logit − lse when the id's logit is known (top-K or full), else nothing.
  bool logprob(int32_t id, double& out) const;
};

// |T_a ∩ T_b| / |T_a ∪ T_b| over the first n ids of each row (1 when both are empty).
double jaccard(std::span<const int32_t> a, std::span<const int32_t> b, int n);

// Top-1 minus top-2, in logit and in probability; NaN when the row keeps fewer than 2.
struct Margin {
  double logit, prob;
};
Margin margin(const LogitsRow& r);

// How B moves A's top-1/top-2 logit margin: (ℓ_B(y1) − ℓ_B(y2)) − (ℓ_A(y1) − ℓ_A(y2)) for y1, y2 =
// A's top-1 and top-2 ids (raw logits). An id outside B's top-K (and no full row) takes B's K-th
// logit, which bounds it from above. NaN when either row keeps fewer than 2 ids.
double margin_change(const LogitsRow& a, const LogitsRow& b);

// log p_B(y) − log p_A(y) for y = A's top-1 id. When y is outside B's top-K and B has no full
// row, B's K-th logit stands in for y's (an upper bound on log p_B(y)) and `bounded` is set.
double top1_logprob_delta(const LogitsRow& a, const LogitsRow& b, bool& bounded);

// KL(A‖B) in nats. Exact (over the whole vocabulary) when both rows are full. Otherwise each id
// of the union of the top-K ids whose probability is known on both sides is its own bucket, and
// all remaining mass (1 − Σ known) is lumped into one bucket: by the log-sum inequality this
// never exceeds the exact KL (a lower bound). `exact` tells which was computed.
double kl_divergence(const LogitsRow& a, const LogitsRow& b, bool& exact);

// The observed logit drift of a row: max over A's first n ids whose log-probability is known on
// B of |log p_B(i) − log p_A(i)| (log-probabilities, so a shift of all logits counts as zero).
double logit_drift(const LogitsRow& a, const LogitsRow& b, int n);

// The median of the values that are not NaN (NaN when there are none); `v` is reordered.
double median_finite(std::vector<double>& v);

}  // namespace ds::diff
