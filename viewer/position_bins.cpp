// Positions binned into columns (see viewer/position_bins.h).
#include "viewer/position_bins.h"

namespace ds::viewer {

Binning::Binning(int64_t p, int max_cols) : positions(p) {
  if (p <= 0) return;
  per = std::max<int64_t>(1, (p + max_cols - 1) / std::max(1, max_cols));
  n = static_cast<int>((p + per - 1) / per);
}

}  // namespace ds::viewer
