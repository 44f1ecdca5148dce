// HTML rendering of a diff report: one self-contained page (inline CSS and SVG, a few lines of
// inline JavaScript for hover details and collapsing; nothing fetched) with the header (traces,
// model, config and tokenizer differences, verdict), a histogram of first-flip steps, a table of
// sequences, one section per sequence sorted by first flip (the flip and both continuations,
// top-5s side by side, a layers × positions drift heat map, margin, KL and Jaccard over
// positions), and the kernels that differ. Every text from the report is HTML-escaped.
#pragma once

#include <string>

#include "diff/report.h"

namespace ds::viewer {

struct HtmlOptions {
  int max_sections = 40;  // sequences given a section, earliest flips first (the rest: table only)
  int max_columns = 240;  // positions per chart are binned (max / min per bin) into this many
  int max_table_rows = 1000;     // rows of the sequence table
  size_t max_bytes = 2'000'000;  // sections stop before the page would outgrow this (the first
                                 // section is always shown; the kernels table comes on top)
  // The report's noise floor (diff --floor), set by render_html: each sequence's heat map is
  // drawn a second time in floor units.
  const diff::NoiseReport* noise = nullptr;
};

std::string render_html(const diff::Report& r, const HtmlOptions& opt = {});

}  // namespace ds::viewer
