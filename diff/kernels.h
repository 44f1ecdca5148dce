// Kernels that differ, by site (docs/metrics.md §6): the /kernels tables of two CUDA
// traces aggregated per tap site over the forward passes both recorded, keyed by (op, kernel
// name) and by launch configuration (grid, block), set next to the drift at each site.
#pragma once

#include <string>
#include <vector>

#include "diff/report.h"
#include "trace/kernel_records.h"
#include "trace/reader.h"

namespace ds::diff {

// Compares two kernel tables (both present). `sequences` supplies each site's drift.
KernelReport diff_kernels(const std::vector<trace::KernelRecord>& a,
                          const std::vector<trace::KernelRecord>& b,
                          const std::vector<SequenceReport>& sequences);

// Reads the tables of two traces and compares them when both have one; otherwise the report
// only says which have one. A malformed table is not fatal to the diff: its error is added to
// `warnings` and the table counts as absent.
KernelReport diff_kernels(const trace::TraceReader& a, const trace::TraceReader& b,
                          const std::vector<SequenceReport>& sequences,
                          std::vector<std::string>& warnings);

}  // namespace ds::diff
