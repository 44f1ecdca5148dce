// The knobs `driftscope explain` can set, from A's and B's sides of a zoom: the run-configuration
// fields that differ between two driftscope runs (docs/configurations.md), or the options that
// differ between two runs of one Python recorder (transformers: dtype, batch,
// attn_implementation, threads, ...; llama.cpp: the weights file, kv_type, threads); and a
// trial's configuration or command: A's with a set of knobs at B's values.
#pragma once

#include <string>
#include <vector>

#include "diff/explain_report.h"
#include "src/workflow/zoom_plan.h"

namespace ds {

struct KnobSpace {
  std::string engine;                    // driftscope, transformers, llama.cpp
  std::vector<diff::ExplainKnob> knobs;  // in the order of the configuration's fields
  std::vector<std::string> left_out;     // fields that differ but are no knobs, each with why
};

// The knobs in which side b differs from side a. Throws ds::Error with a hint when the two cannot
// be mixed: one side a driftscope run and the other a recorder's (or two recorders' engines),
// or a sampled run (temperature > 0: its choice is a draw, not the row's top token).
KnobSpace knob_space(const ZoomSide& a, const ZoomSide& b);

// Side a's configuration with the knobs of `set` (indices into s.knobs) at side b's values.
RunConfig trial_config(const RunConfig& a, const KnobSpace& s, const std::vector<int>& set);
// The same for a recorder: side a's options with those of `set` at side b's values.
std::vector<std::string> trial_options(const RecorderReplay& a, const KnobSpace& s,
                                       const std::vector<int>& set);

// Whether the set holds the batch knob (its trial's batch neighbours then ride on B's tokens).
bool sets_batch(const KnobSpace& s, const std::vector<int>& set);

// Whether a driftscope knob acts on an op's numerics (the plan can take it op by op): dtype,
// accum, batch, gemm_policy, split_k, tp, allreduce, attn_splits, kernel, test_perturb. The
// others decide the choice (tie_break, repetition_penalty, add_bos), the passes (prefill_chunk,
// prefix_cache) or the device (device, tf32).
bool op_level_knob(const std::string& name);

}  // namespace ds
