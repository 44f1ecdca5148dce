// Top-K selection and log-sum-exp of a logits row.
#include "trace/topk.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace ds::trace {

TopK top_k(std::span<const double> row, int k) {
  const size_t n = std::min(row.size(), static_cast<size_t>(std::max(0, k)));
  std::vector<int32_t> order(row.size());
  std::iota(order.begin(), order.end(), 0);
  auto before = [&](int32_t a, int32_t b) {
    return row[a] > row[b] || (row[a] == row[b] && a < b);
  };
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n), order.end(),
                    before);
  TopK t;
  t.ids.assign(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n));
  for (int32_t id : t.ids) t.logits.push_back(row[id]);
  return t;
}

double log_sum_exp(std::span<const double> row) {
  if (row.empty()) return -INFINITY;
  const double m = *std::max_element(row.begin(), row.end());
  if (!std::isfinite(m)) return m;
  double s = 0;
  for (double v : row) s += std::exp(v - m);
  return m + std::log(s);
}

}  // namespace ds::trace
