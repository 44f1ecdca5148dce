// Renderings of an attribution report (driftscope attribute): terminal text (the verdict, the
// blocks ranked by local error, and local vs total per block as a pair of bars) and JSON
// ({"format":"driftscope-attribute","version":1,...}; fields in docs/metrics.md §10).
#pragma once

#include <string>
#include <utility>

#include "diff/attribution.h"

namespace ds::viewer {

inline constexpr const char* kAttributionJsonFormat = "driftscope-attribute";
inline constexpr int kAttributionJsonVersion = 1;

std::string render_attribution_terminal(const diff::AttributionReport& r, int width = 100);
std::string render_attribution_json(const diff::AttributionReport& r, int indent = 2);

// One self-contained HTML page (viewer/html_attribution.cpp; the diff report's shell, CSP and
// escaping, docs/html-report.md): the header (A, B's differences, the verdict), the blocks ranked
// by local error with the origins marked, and local vs total per block as a pair of bars on the
// terminal's log scale (attention, MLP and whole layers apart; final_norm; logits in KL on their
// own scale).
std::string render_attribution_html(const diff::AttributionReport& r);

// The log scale of the bars of every block but logits: from a decade below the noise floor (or
// half the smallest positive local error, if lower) to the largest finite local or total.
std::pair<double, double> attribution_bar_scale(const diff::AttributionReport& r);

// Length (0..cells) of the bar of `v` on a log scale from `lo` (empty) to `hi` (full); 0 for
// v <= 0 or NaN. Exposed for its test.
int log_bar_cells(double v, double lo, double hi, int cells);

}  // namespace ds::viewer
