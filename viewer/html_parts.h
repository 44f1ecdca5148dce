// Pieces shared by the HTML pages' files (viewer/diff_html.cpp, viewer/diff_html_sequence.cpp,
// viewer/attribution_html.cpp).
#pragma once

#include <string>

#include "diff/report.h"
#include "viewer/diff_html.h"
#include "viewer/text_layout.h"

namespace ds::viewer::html {

// Numbers as the terminal report shows them (viewer/text_layout.h).
using viewer::fix;
using viewer::sci;

// The page shell shared by every HTML page: the doctype, the Content-Security-Policy (the constant
// stylesheet and script allowed by hash, nothing else), the stylesheet and the title (escaped);
// page_close adds the footer line (escaped), the tooltip element and the script.
std::string page_open(const std::string& title);
std::string page_close(const std::string& footer);

// The <section class="seq"> of one sequence; `open` leaves its details expanded.
std::string sequence_section(const diff::SequenceReport& s, const HtmlOptions& opt, bool open);

}  // namespace ds::viewer::html
