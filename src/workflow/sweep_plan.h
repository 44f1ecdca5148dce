// What a sweep runs: a grid of run configurations over a base config, each run into its own trace
// named by its differing knobs, with its state in DIR/sweep.json (docs/cli.md, `driftscope sweep`).
// How the configurations are run: src/workflow/sweep.h.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "src/experiment/run_config.h"

namespace ds {

// One knob of the grid and its values, e.g. dtype = {bf16, fp16, fp32}.
struct GridKnob {
  std::string name;  // a run-config field, '-' written as '_'
  std::vector<std::string> values;
};

// Parses "dtype=bf16,fp16,fp32 batch=1,8,32" (knobs separated by spaces or newlines), or "@FILE":
// the same items read from a file (a UTF-8 byte order mark skipped), '#' starting a comment. Each
// value is parsed by its field and kept in canonical form ("04" -> "4"). Throws ds::Error for a
// knob that is not a run-config field (`option_of(knob)`: the command's option of that name, as
// "--force", which the message then names; "" for none), a knob given twice, a value its field
// does not take, two values that make one configuration, or an empty value list.
std::vector<GridKnob> parse_grid(
    const std::string& spec,
    const std::function<std::string(const std::string& knob)>& option_of = {});

// The most configurations one sweep may hold (the product of its knobs' value counts, samples
// included): checked before anything is expanded, so a grid's size cannot exhaust memory or disk.
inline constexpr uint64_t kMaxSweepConfigurations = 100000;

// Adds seed = S, S+1, ..., S+K-1 to the grid: K sampled runs of each configuration. Throws
// ds::Error for K < 1, K above kMaxSweepConfigurations, or S+K-1 past 2^64-1 (never wrapped).
void add_samples(std::vector<GridKnob>& grid, int samples, uint64_t seed);

// One configuration of a sweep.
struct SweepEntry {
  std::string name;  // its knobs with more than one value: "dtype-bf16_batch-8_tp-2" ("base")
  std::vector<std::pair<std::string, std::string>> knobs;  // every grid knob with its value
  RunConfig config;                                        // base config with the knobs set
  std::string status = "pending";  // pending, done, missing (failed or cancelled), submitted
};

// Every combination of the grid's values (the first knob varies slowest), each validated. Throws
// ds::Error for a knob without values and for more than kMaxSweepConfigurations combinations.
std::vector<SweepEntry> expand_grid(const RunConfig& base, const std::vector<GridKnob>& grid);

// The sweep's state, DIR/sweep.json.
struct SweepState {
  std::vector<GridKnob> grid;
  RunConfig base;
  std::string prompts;             // absolute path of the prompts file
  std::string model;               // absolute path, or empty: the bundled model
  std::string tokenizer;           // absolute path, or empty: found beside the model
  std::string probes = "default";  // --probes of every run (run's values: default, all, none, ...)
  std::vector<SweepEntry> entries;
  std::vector<std::string> slurm_jobs;  // ids of the job arrays submitted, oldest first
};

std::filesystem::path sweep_json_path(const std::filesystem::path& dir);
std::filesystem::path entry_trace(const std::filesystem::path& dir, const SweepEntry& e);
std::filesystem::path entry_config(const std::filesystem::path& dir, const SweepEntry& e);

void write_sweep_state(const std::filesystem::path& dir, const SweepState& s);
// Throws ds::Error with a hint when DIR holds no readable sweep.json.
SweepState read_sweep_state(const std::filesystem::path& dir);

// Whether `trace` is a complete trace of `config`: it opens, has complete=1, is not cut short,
// its recorded run config equals `config` field by field (and, when `probes` is given, it
// recorded those probes), and every row of it reads (trace::read_whole). Anything else (absent,
// unreadable, interrupted, cut short, damaged, another config or other probes) means the
// configuration must be run (again). Reads a trace from anyone: callers run with watched reads
// (trace/read_supervisor.h), where a read that crashes HDF5 is reported, not a segfault.
// `read_rows` false leaves the rows unread (stats, which reads what it needs itself and lists the
// rest as missing); a resume keeps a trace only after reading it whole.
bool trace_done(const std::filesystem::path& trace, const RunConfig& config,
                const std::string& probes = {}, bool read_rows = true);

}  // namespace ds
