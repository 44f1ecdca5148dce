// The flips' aggregate as JSON ({"format":"driftscope-flips","version":1,...}; fields in
// docs/metrics.md §12). Numbers that are not finite are written as null.
#pragma once

#include <nlohmann/json.hpp>

#include "diff/explain_report.h"
#include "diff/flip_aggregate.h"

namespace ds::viewer {

inline constexpr const char* kFlipsJsonFormat = "driftscope-flips";
inline constexpr int kFlipsJsonVersion = 1;

// With `explained` (zoom --explain): each sequence's "cause" (the onset column's place; its raw
// "onset" kept) and the explain report under "explain".
nlohmann::json flips_json(const diff::FlipAggregate& a,
                          const diff::ExplainReport* explained = nullptr);

}  // namespace ds::viewer
