// HTML rendering of the explain report: one self-contained page (the diff report's shell, CSP and
// escaping, docs/html-report.md) with the terminal view's content, and the same as a section of
// another page (zoom --explain's flips page).
#pragma once

#include <string>

#include "diff/explain_report.h"

namespace ds::viewer {

std::string explain_html(const diff::ExplainReport& r);
std::string explain_html_section(const diff::ExplainReport& r);

}  // namespace ds::viewer
