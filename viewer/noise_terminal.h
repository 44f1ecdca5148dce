// The noise floor's part of the terminal diff report (`diff --floor`; docs/metrics.md "Noise
// floors"): the headline, each site in floor units with its p-values, the flips expected and
// observed, and the notes.
#pragma once

#include "diff/noise_report.h"
#include "viewer/text_layout.h"

namespace ds::viewer {

// Appends the section to `o`; `all_sites` lists every site, else the significant ones and the
// five largest in floor units.
void noise_terminal(TerminalText& o, const diff::NoiseReport& n, int width, bool all_sites);

// "3.2e-7 (4.1 × floor)": a drift beside its floor.
std::string floor_units_text(double drift, double floor_units);

}  // namespace ds::viewer
