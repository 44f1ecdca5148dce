// HTML rendering of an attribution report (driftscope attribute --html).
#pragma once

#include <string>

#include "diff/attribution.h"

namespace ds::viewer {

// One self-contained HTML page (viewer/attribution_html.cpp; the diff report's shell, CSP and
// escaping, docs/html-report.md): the header (A, B's differences, the verdict), the blocks ranked
// by local error with the origins marked, and local vs total per block as a pair of bars on the
// terminal's log scale (attention, MLP and whole layers apart; final_norm; logits in KL on their
// own scale).
std::string render_attribution_html(const diff::AttributionReport& r);

}  // namespace ds::viewer
