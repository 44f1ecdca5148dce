// The attribution report as JSON ({"format":"driftscope-attribute","version":1,...}; fields in
// docs/metrics.md §10). Numbers that are not finite are written as null.
#pragma once

#include <string>

#include "diff/attribution.h"

namespace ds::viewer {

inline constexpr const char* kAttributionJsonFormat = "driftscope-attribute";
inline constexpr int kAttributionJsonVersion = 1;

std::string render_attribution_json(const diff::AttributionReport& r, int indent = 2);

}  // namespace ds::viewer
