// HTML rendering of the flips' aggregate: one self-contained page (the diff report's shell, CSP
// and escaping, docs/html-report.md) with the summary line, the histogram of first-flip steps,
// the margins against the near-tie threshold, onset and birth histograms over layers and block
// kinds, the drift per layer, and one row per zoomed sequence.
#pragma once

#include <string>

#include "diff/explain_report.h"
#include "diff/flip_aggregate.h"

namespace ds::viewer {

// With `explained` (zoom --explain): the sequences' onset column names each flip's cause, and the
// explanation's section follows.
std::string flips_html(const diff::FlipAggregate& a,
                       const diff::ExplainReport* explained = nullptr);

}  // namespace ds::viewer
