// Top-K and log-sum-exp of one logits row, as stored in a trace's logits/ group.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace ds::trace {

struct TopK {
  std::vector<int32_t> ids;    // sorted by logit descending, ties by lower id
  std::vector<double> logits;  // the logits of those ids
};

// The k largest logits (k is capped at the row length).
TopK top_k(std::span<const double> row, int k);

// log(sum_i exp(row_i)), computed as max + log(sum exp(row_i - max)) in double, i in order.
double log_sum_exp(std::span<const double> row);

}  // namespace ds::trace
