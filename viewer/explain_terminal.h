// Terminal rendering of the explain report (diff/explain_report.h; docs/metrics.md §13): the
// knobs, the summary line, the causes with their counts and first ops, the knobs' effects on the
// margin, one row per flip (its knob sets, op set, margins and trials; the onset column naming
// where the cause is), and the op level's one line when there is none.
#pragma once

#include <string>

#include "diff/explain_report.h"

namespace ds::viewer {

std::string render_explain_terminal(const diff::ExplainReport& r, int width = 100);

// The causes and flips sections alone (zoom --explain appends them to the flips report).
std::string render_explain_sections(const diff::ExplainReport& r, int width = 100);

}  // namespace ds::viewer
