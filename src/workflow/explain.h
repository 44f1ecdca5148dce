// `driftscope explain A.h5 B.h5 -o DIR` (and `zoom --explain`): for each flipped sequence, which
// knobs and which ops make B's token win at the flip row (docs/metrics.md §13). It is a zoom
// (zoom.h: the teacher-forced replays, each sequence's diff and attribution; resume, -j, --slurm
// and the lock as zoom has them) followed by trials: A's configuration with a set of knobs at B's
// values (explain_knobs.h), replayed to the flip row (explain_trials.h) over a full factorial or
// by ddmin (diff/cause_search.h); then, inside a flip's knob set, numerics plans that take B's
// decisions at some ops only (explain_ops.h), bisected to a minimal set of ops. The report:
// diff/explain_report.h, rendered by viewer/explain_*.
#pragma once

#include <filesystem>
#include <optional>
#include <vector>

#include "diff/explain_report.h"
#include "src/workflow/explain_trials.h"
#include "src/workflow/zoom_analysis.h"
#include "src/workflow/zoom_plan.h"

namespace ds {

// What explain checks before anything is written: that a sequence flipped (or each of `seqs`,
// when given, flipped), from the diff of A vs B; then, once zoom's plan is made, that the two
// sides' knobs can be mixed (explain_knobs.h knob_space). Throw ds::Error with a hint.
void check_explainable(const diff::Report& original, const std::vector<int>& seqs);
void check_explainable(const ZoomPlan& plan);

// The explanation of a zoom's flips, once its replays and analysis are done. Returns the report;
// or, when it stops before the report, the exit code (0: trials submitted to Slurm without
// --wait; 130: interrupted). Throws ds::Error with a hint when a trial's run fails.
struct ExplainResult {
  std::optional<diff::ExplainReport> report;
  int exit_code = 0;
};
ExplainResult explain_flips(const std::filesystem::path& dir, const ZoomPlan& plan,
                            const diff::Report& original, const ZoomAnalysis& analysis,
                            TrialRunner& runner);

// DIR/explain.txt, explain.json, explain.html; the text on stdout when `to_stdout`.
void write_explain_reports(const std::filesystem::path& dir, const diff::ExplainReport& r,
                           bool to_stdout, bool quiet);

}  // namespace ds
