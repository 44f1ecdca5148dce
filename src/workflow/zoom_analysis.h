// The second half of `driftscope zoom`: once both replays are complete, each zoomed sequence's
// diff (A' vs B') and attribution (B on A''s tokens, every layer shadowed), written per sequence
// to DIR/seq-<i>/, then the flips explained in aggregate (DIR/flips.*).
#pragma once

#include <filesystem>

#include "diff/report.h"
#include "src/workflow/zoom_plan.h"

namespace ds {

// `original`: the diff of A vs B the plan was made from (its first flips go into the per-sequence
// reports). Prints progress on stderr unless `quiet`; the aggregate on stdout.
void analyse_zoom(const std::filesystem::path& dir, const ZoomPlan& plan,
                  const diff::Report& original, bool quiet);

}  // namespace ds
