// The explain report as JSON ({"format":"driftscope-explain","version":1,...}; fields in
// docs/metrics.md §13). Numbers that are not finite are written as null.
#pragma once

#include <nlohmann/json.hpp>

#include "diff/explain_report.h"

namespace ds::viewer {

inline constexpr const char* kExplainJsonFormat = "driftscope-explain";
inline constexpr int kExplainJsonVersion = 1;

nlohmann::json explain_json(const diff::ExplainReport& r);

}  // namespace ds::viewer
