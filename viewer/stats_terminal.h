// Terminal rendering of the N-way statistics report: one column per group (all runs, then one per
// value of the group-by knob, as the seed papers set BF16/FP16/FP32 side by side), accuracy and
// pass rates per configuration with an answer key, attribution by knob, and missing runs.
#pragma once

#include <string>

#include "diff/stats.h"

namespace ds::viewer {

std::string render_stats_terminal(const diff::StatsReport& r);

}  // namespace ds::viewer
