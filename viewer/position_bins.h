// Positions binned into columns, so that a long sequence fits a chart or a terminal line: the
// HTML charts and the terminal heat map share one binning.
#pragma once

#include <algorithm>
#include <cstdint>

namespace ds::viewer {

// Positions binned into at most `max_cols` columns of `per` positions each.
struct Binning {
  int64_t positions = 0;
  int64_t per = 1;
  int n = 0;
  Binning(int64_t positions, int max_cols);
  int64_t begin(int col) const { return col * per; }
  int64_t end(int col) const { return std::min<int64_t>((col + 1) * per, positions); }
};

}  // namespace ds::viewer
