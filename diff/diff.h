// Pairwise diff of two traces of the same model and prompts (A is the reference): alignment and
// checks, then every metric of docs/metrics.md, streamed over row blocks so memory stays bounded
// by the block size (plus a few numbers per position and site), whatever the trace size.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "diff/identity.h"
#include "diff/report.h"
#include "trace/reader.h"

namespace ds::diff {

// Turns token ids into text for the report (the caller owns the tokenizer; diff never loads one).
using Decoder = std::function<std::string(const std::vector<int32_t>&)>;

struct DiffOptions {
  bool allow_model_mismatch = false;  // else different model files are an error
  Decoder decode;                     // optional; without it the report carries ids only
  std::vector<int> sequences;         // only these indices (empty: every common sequence)
  int64_t block_bytes = 2 << 20;      // bytes per side read at once for one dataset
  int context_tokens = 12;            // decoded tokens shown before and after the flip
  std::function<void(int done, int total)> progress;  // optional; after each compared sequence
  // Also the noise floor's sums of every sequence (SequenceReport::noise; diff/noise_sums.h):
  // what calibrate keeps of each replay and diff --floor measures of B.
  bool noise_sums = false;
};

// Throws ds::Error (with a hint) when the traces are of different models and that is not
// allowed, or when a requested sequence is missing. Everything else is reported.
Report diff_traces(const trace::TraceReader& a, const trace::TraceReader& b,
                   const DiffOptions& options = {});

}  // namespace ds::diff
