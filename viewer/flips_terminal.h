// Terminal rendering of the flips' aggregate (diff/flip_aggregate.h; docs/metrics.md §12): the
// summary line, the first-flip steps, the margins against the near-tie threshold, where the drift
// sets in and where the local error is born (by kind and by layer), and the drift per layer.
#pragma once

#include <cstdio>
#include <string>

#include "diff/explain_report.h"
#include "diff/flip_aggregate.h"

namespace ds::viewer {

// The report as text, `width` columns wide. With `explained` (zoom --explain), each flip's onset
// column names where its cause is (the first op of its op set, else the block where its error
// is born) and the explanation's sections follow.
std::string render_flips_terminal(const diff::FlipAggregate& a, int width = 100,
                                  const diff::ExplainReport* explained = nullptr);

// The same, written to `out`.
void print_flips_terminal(std::FILE* out, const diff::FlipAggregate& a, int width);

}  // namespace ds::viewer
