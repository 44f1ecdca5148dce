// Pieces shared by the HTML report's files (viewer/html.cpp, viewer/html_sequence.cpp).
#pragma once

#include <string>

#include "diff/report.h"
#include "viewer/html.h"

namespace ds::viewer::html {

// Numbers as the report shows them: "1.23e-04" / "0.1235"; NaN and infinities spelled out.
std::string sci(double x);
std::string fix(double x, int digits = 4);

// The <section class="seq"> of one sequence; `open` leaves its details expanded.
std::string sequence_section(const diff::SequenceReport& s, const HtmlOptions& opt, bool open);

}  // namespace ds::viewer::html
