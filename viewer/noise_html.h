// The noise floor's part of the HTML diff report (`diff --floor`; docs/html-report.md): the
// verdict, each site against the floor with its p-values, the flips expected and observed; and
// the heat map's rows in floor units.
#pragma once

#include <string>
#include <vector>

#include "diff/noise_report.h"
#include "diff/report.h"

namespace ds::viewer {

std::string noise_html(const diff::NoiseReport& n);

// The layer view's rows in floor units: each position's relative L2 divided by the replays'
// median relative L2 at the row's site and position bucket (NaN where the floor has none, or is
// 0 and the value is not: then +Inf; 0 over 0 is 0). Rows of sites the floor lacks are left out.
std::vector<diff::LayerDrift> in_floor_units(const std::vector<diff::LayerDrift>& layers,
                                             const diff::NoiseReport& n);

}  // namespace ds::viewer
