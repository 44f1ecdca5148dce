// The diff report as JSON ({"format":"driftscope-diff","version":1,...}; fields in
// docs/metrics.md). Numbers that are not finite (NaN, Inf) are written as null.
#pragma once

#include <string>

#include "diff/report.h"

namespace ds::viewer {

inline constexpr const char* kJsonFormat = "driftscope-diff";
inline constexpr int kJsonVersion = 1;

std::string render_json(const diff::Report& r, int indent = 2);

}  // namespace ds::viewer
