// The second half of `driftscope zoom`: once both replays are complete, each zoomed sequence's
// diff (A' vs B') and attribution (B on A''s tokens, every layer shadowed), written per sequence
// to DIR/seq-<i>/ (the flips in aggregate, DIR/flips.*: zoom_flips.h).
#pragma once

#include <filesystem>

#include "diff/attribution.h"
#include "diff/report.h"
#include "src/workflow/zoom_plan.h"

namespace ds {

// Per zoomed sequence (plan.seqs[i]): the diff of A' vs B', and, when B ran on the CPU in
// driftscope, the attribution (else none at all).
struct ZoomAnalysis {
  std::vector<diff::Report> diffs;
  std::vector<diff::AttributionReport> attributions;
};

// `original`: the diff of A vs B the plan was made from (its first flips go into the per-sequence
// reports), written to DIR/seq-<i>/. Prints progress on stderr unless `quiet`.
ZoomAnalysis analyse_zoom(const std::filesystem::path& dir, const ZoomPlan& plan,
                          const diff::Report& original, bool quiet);

}  // namespace ds
