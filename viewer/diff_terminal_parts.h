// Pieces shared by the terminal diff report's files (viewer/diff_terminal.cpp, the report's
// header, summary table and kernels; viewer/diff_terminal_sequence.cpp, one sequence's page).
#pragma once

#include <string>

#include "diff/report.h"
#include "viewer/diff_terminal.h"
#include "viewer/text_layout.h"

namespace ds::viewer::terminal {

// `v` (the verdict text, maybe padded) in the verdict's colour.
std::string verdict_colored(const TerminalText& o, const diff::SequenceReport& s,
                            const std::string& v);

// The page of one sequence: its rule, prompt, tokens, flip, logits, onset, heat map, and with
// opt.sites its per-site table.
void sequence_page(TerminalText& o, const diff::SequenceReport& s, const TerminalOptions& opt);

}  // namespace ds::viewer::terminal
