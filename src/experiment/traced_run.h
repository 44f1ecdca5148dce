// A traced run: every prompt generated under one run config, every wanted site recorded into a
// trace file. The writer is finished in all cases, so an interrupted run leaves a readable trace.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "src/experiment/generate.h"
#include "src/experiment/plan_file.h"
#include "src/experiment/prompts.h"
#include "src/experiment/run_config.h"
#include "src/model/model.h"
#include "trace/writer.h"

namespace ds {

struct TracedRunOptions {
  RunConfig config;  // batch, prefill_chunk, prefix_cache and the numerics knobs all apply
  std::vector<std::string> sites;  // hidden sites to record (see resolve_probes)
  trace::WriterOptions writer;
  trace::RunInfo info;
  std::optional<int32_t> eos_id;
  // CUPTI kernel records into /kernels: auto (on for --device cuda when CUPTI is built), on
  // (required: an error when they cannot be recorded), off.
  std::string kernels = "auto";
  // A numerics plan (--plan, plan_file.h) the runtime decides by instead of the config alone.
  std::optional<PlanSpec> plan;
  std::function<bool()> should_stop;                                 // e.g. SIGINT seen
  std::function<void(int seq, int n_seqs, int generated)> progress;  // after every token
  // Set, on a write failure, to the failed HDF5 call and HDF5's error stack (for --verbose;
  // the thrown error holds only the reason, e.g. "No space left on device").
  std::string* write_error_detail = nullptr;
};

struct TracedRunResult {
  std::vector<GenerateResult> sequences;  // those started (the last may be partial)
  bool complete = false;                  // every prompt ran to its own stop
};

// The fully resolved configuration recorded as /meta config_json: the run config's fields plus
// a "trace" object of recording options (probes, hidden_dtype, topk, full_logits, kernels,
// force_tokens: the trace whose tokens were consumed, or null; compression: the datasets'
// filters, "none" or "deflate1" ... "deflate9"), and a "plan" object when a numerics plan
// decided the run (plan_file.h).
std::string traced_config_json(const RunConfig& config, const std::string& probes,
                               const trace::WriterOptions& writer,
                               const std::string& force_tokens = {},
                               const std::string& kernels = "auto",
                               const std::optional<PlanSpec>& plan = std::nullopt);

// Whether a run records kernels: `kernels` (auto, on, off) on `device`. Throws ds::Error for an
// unknown value, or for "on" where kernels cannot be recorded (CPU device, no CUPTI in the build).
bool records_kernels(const std::string& kernels, Device device);

TracedRunResult run_traced(const Model& model, const std::vector<Prompt>& prompts,
                           const TracedRunOptions& opt);

}  // namespace ds
