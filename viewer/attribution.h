// Renderings of an attribution report (driftscope attribute): terminal text (the verdict, the
// blocks ranked by local error, and local vs total per block as a pair of bars) and JSON
// ({"format":"driftscope-attribute","version":1,...}; fields in docs/metrics.md §10).
#pragma once

#include <string>

#include "diff/attribution.h"

namespace ds::viewer {

inline constexpr const char* kAttributionJsonFormat = "driftscope-attribute";
inline constexpr int kAttributionJsonVersion = 1;

std::string render_attribution_terminal(const diff::AttributionReport& r, int width = 100);
std::string render_attribution_json(const diff::AttributionReport& r, int indent = 2);

// Length (0..cells) of the bar of `v` on a log scale from `lo` (empty) to `hi` (full); 0 for
// v <= 0 or NaN. Exposed for its test.
int log_bar_cells(double v, double lo, double hi, int cells);

}  // namespace ds::viewer
