// Terminal rendering of a diff report: a header with the config differences, a summary table of
// sequences, one screen per sequence (verdict, flip with its text and top-5 tables, a layers ×
// positions heat map of log10 relative drift with per-layer growth bars, and margins), and for
// two CUDA traces with /kernels tables the kernels that differ, by site.
#pragma once

#include <string>

#include "diff/report.h"

namespace ds::viewer {

struct TerminalOptions {
  int width = 100;          // columns available (the CLI passes the terminal's)
  bool color = false;       // ANSI colours (the CLI decides from --color and NO_COLOR)
  int max_pages = 3;        // sequences shown in detail, earliest flips first
  bool sites = false;       // also print the per-site table of every sequence shown
  int max_table_rows = 40;  // rows of the multi-sequence summary table
};

std::string render_terminal(const diff::Report& r, const TerminalOptions& opt = {});

// The characters of the heat map, one per decade of relative L2 (exposed for the legend test).
char heat_char(double rel_l2, double noise_floor);

}  // namespace ds::viewer
