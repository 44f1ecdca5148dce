// HTML rendering of the N-way statistics report (`driftscope stats --html FILE`): one
// self-contained page like the diff's report (inline CSS and SVG, a Content-Security-Policy that
// allows exactly its stylesheet by hash; no script, nothing fetched) with the runs and missing
// configurations, the groups' table of statistics, the Div_Index distribution of each group as a
// histogram, Avg_Std@top1_prob per group as bars, the runs × runs matrix of pairwise divergence,
// the accuracy per configuration (with an answer key) and the attribution per knob. Every text
// from the report is HTML-escaped.
#pragma once

#include <string>

#include "diff/stats.h"

namespace ds::viewer {

struct StatsHtmlOptions {
  int max_matrix_runs = 200;  // above this many runs the matrix is left to the JSON report
  int max_bins = 40;          // Div_Index histograms bin values into at most this many bars
};

std::string render_stats_html(const diff::StatsReport& r, const StatsHtmlOptions& opt = {});

}  // namespace ds::viewer
