// N-way statistics over the traces of a sweep (`driftscope stats`): divergence, top-1 probability
// and output-length spread, exact agreement, accuracy and pass rates with an answer key, and the
// attribution of divergence to single knobs. Results are plain data; viewer/ renders them.
// Definitions and sources: docs/metrics.md, "N-way statistics".
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "trace/reader.h"

namespace ds::diff {

// One run (one trace) as the statistics see it.
struct StatsRun {
  std::string name;                           // the trace's file name without .h5
  std::map<std::string, std::string> config;  // resolved run-config fields (/meta config_json)
  std::vector<std::vector<int32_t>> outputs;  // per prompt: the generated tokens
  // Per prompt, per generated step: the probability of the token chosen there, exp(logit − lse);
  // NaN when that token is not among the recorded top-K (a sampled token).
  std::vector<std::vector<double>> token_prob;
  std::vector<std::string> texts;  // per prompt: decoded output; empty = compare tokens
  // Per prompt: the answer extracted from the output (nullopt: no match); empty = no --extract.
  std::vector<std::optional<std::string>> answers;
};

// Reads a trace's generated tokens, their probabilities and its resolved config (the run-config
// fields of config_json; the "trace" object of recording options is left out).
StatsRun read_stats_run(const trace::TraceReader& r);

// Throws ds::Error naming the odd one out when the traces are not of one model (architecture and
// file digests in model_json) or not of one prompt set (the same prompt tokens, in order).
void check_comparable(const std::vector<const trace::TraceReader*>& traces);

// Pass rates of one configuration for one k, averaged over questions.
struct PassAtK {
  int k = 0;
  double pass = 0;                       // Pass@k
  std::map<std::string, double> g_pass;  // "0.25", "0.5", "0.75", "1.0" -> G-Pass@k_τ
  double mg_pass = 0;                    // mG-Pass@k
};

// Accuracy of one configuration (its runs that differ in the seed alone are its samples).
struct ConfigAccuracy {
  std::string label;          // the configuration's varying knobs, e.g. "dtype=bf16 batch=8"
  int samples = 0;            // n
  double accuracy = 0;        // mean over samples of the share of prompts answered right
  std::vector<PassAtK> pass;  // one per k asked for (k <= n)
};

// The statistics over one group of runs (all runs, or those sharing the group knob's value).
struct GroupStats {
  std::string key;                // "all", or e.g. "dtype=bf16"
  std::vector<std::string> runs;  // names
  int prompts = 0;
  std::vector<int> div_index;    // per prompt (none: the longest output's length)
  double div_percent = 0;        // % of prompts whose N outputs are not all identical
  double avg_std_top1_prob = 0;  // NaN when no prompt has a position before its Div_Index
  int top1_prompts = 0;          // prompts that entered Avg_Std@top1_prob
  double avg_std_output_length = 0;
  std::vector<int> unique_outputs;  // per prompt
  double unique_outputs_mean = 0;
  double tarr = 0;                       // TARr@N, %
  std::optional<double> tara;            // TARa@N, % (with --extract)
  std::vector<ConfigAccuracy> accuracy;  // with an answer key
  std::optional<double> std_acc;         // sample std of the configurations' accuracy (%)
};

// Divergence attributed to one knob: over the pairs of runs that differ in that knob alone.
struct Attribution {
  std::string knob;
  int pairs = 0;
  double div_percent = 0;        // mean over pairs
  double avg_std_top1_prob = 0;  // mean over pairs with a value (NaN: none)
};

struct StatsOptions {
  std::string group_by;  // a run-config field; empty = no groups besides "all"
  std::vector<int> ks;   // Pass@k ks; empty = {samples per configuration}
};

struct StatsReport {
  std::vector<std::string> runs;
  std::vector<std::string> missing;  // sweep configurations without a complete trace
  std::vector<std::string> varying;  // run-config fields that differ between runs
  std::string group_by;
  std::vector<GroupStats> groups;  // "all" first, then one per value of group_by
  std::vector<Attribution> attribution;
  // runs × runs, in the order of `runs`: the % of prompts whose two outputs (generated tokens)
  // differ; symmetric, 0 on the diagonal. Div_Percent of the pair (i, j).
  std::vector<std::vector<double>> pairwise_differ;
};

// `expected`: the answer key, one per prompt (null: none). Throws ds::Error on runs of different
// prompt counts, an answer key of the wrong length, or an unknown group_by field.
StatsReport compute_stats(const std::vector<StatsRun>& runs,
                          const std::vector<std::string>* expected, const StatsOptions& opt);

}  // namespace ds::diff
