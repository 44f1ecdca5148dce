// The noise floor's sums of one pair of traces (noise_sums.h).
#include "diff/noise_sums.h"

#include <algorithm>
#include <bit>

namespace ds::diff {

int position_bucket(int64_t row) {
  if (row <= 0) return 0;
  return std::bit_width(static_cast<uint64_t>(row));  // 1 -> 1, 2..3 -> 2, 4..7 -> 3, ...
}

int64_t bucket_first_row(int bucket) {
  return bucket <= 0 ? 0 : int64_t{1} << (bucket - 1);
}

void add_bucket(BucketSums& into, const BucketSums& from) {
  into.rows += from.rows;
  into.rel_l2 += from.rel_l2;
  into.elements += from.elements;
  into.differ += from.differ;
  into.up += from.up;
  into.max_ulps = std::max(into.max_ulps, from.max_ulps);
  into.nan += from.nan;
}

void add_margin(MarginSums& into, const MarginSums& from) {
  into.rows += from.rows;
  into.abs_change += from.abs_change;
  into.changed += from.changed;
  into.top1 += from.top1;
}

}  // namespace ds::diff
