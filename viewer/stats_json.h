// The N-way statistics report as JSON ({"format":"driftscope-stats","version":1,...}; fields in
// docs/metrics.md). Numbers that are not finite are written as null.
#pragma once

#include <string>

#include "diff/stats.h"

namespace ds::viewer {

inline constexpr const char* kStatsJsonFormat = "driftscope-stats";
inline constexpr int kStatsJsonVersion = 1;

std::string render_stats_json(const diff::StatsReport& r, int indent = 2);

}  // namespace ds::viewer
