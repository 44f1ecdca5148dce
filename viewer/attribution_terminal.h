// Terminal rendering of an attribution report (driftscope attribute): the verdict, the blocks
// ranked by local error, and local vs total per block as a pair of bars on a log scale (the
// scale and bar length below are shared with the HTML page, viewer/attribution_html.cpp).
#pragma once

#include <string>
#include <utility>

#include "diff/attribution.h"

namespace ds::viewer {

std::string render_attribution_terminal(const diff::AttributionReport& r, int width = 100);

// The log scale of the bars of every block but logits: from a decade below the noise floor (or
// half the smallest positive local error, if lower) to the largest finite local or total.
std::pair<double, double> attribution_bar_scale(const diff::AttributionReport& r);

// Length (0..cells) of the bar of `v` on a log scale from `lo` (empty) to `hi` (full); 0 for
// v <= 0 or NaN. Exposed for its test.
int log_bar_cells(double v, double lo, double hi, int cells);

}  // namespace ds::viewer
