// The flips of a zoom explained in aggregate (diff/flip_aggregate.h): DIR/flips.txt, flips.json,
// flips.html, and the terminal rendering on stdout.
#pragma once

#include <filesystem>
#include <vector>

#include "diff/attribution.h"
#include "diff/explain_report.h"
#include "diff/report.h"
#include "src/workflow/zoom_plan.h"

namespace ds {

// `diffs[i]` and (when B ran on the CPU) `attributions[i]` belong to plan.seqs[i]. Without the
// attributions there is no aggregate: one verdict line per sequence on stdout, and a note.
// `explained` (zoom --explain; may be null): each flip's cause, in the sequences' onset column
// and as a section of every rendering.
void write_zoom_flips(const std::filesystem::path& dir, const ZoomPlan& plan,
                      const std::vector<diff::Report>& diffs,
                      const std::vector<diff::AttributionReport>& attributions,
                      const diff::ExplainReport* explained, bool quiet);

}  // namespace ds
