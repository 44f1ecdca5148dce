// CLI flags of the run configuration (the field names with dashes), shared by generate, run and
// demo, plus --config FILE (TOML, src/experiment/run_config_file.h) and --dry-run.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "src/experiment/run_config.h"

namespace CLI {
class App;
class Validator;
}  // namespace CLI

namespace ds {

struct RunConfigArgs {
  RunConfig config;
  std::string config_file;
  bool dry_run = false;
  std::optional<int> threads;  // --threads: CPU backend threads (not part of the configuration)
};

// The options of the run-configuration fields (one per row of the field table, run_config.h,
// each parsed by its field; the defaults shown are args.config's), --config FILE, --dry-run and
// --threads.
void add_run_config_options(CLI::App& cmd, RunConfigArgs& args);

// Sets the CPU backend's threads from --threads when given (else every core) and starts them, so
// that loading the model uses them too; throws ds::Error for N outside 1..ops::kMaxCpuThreads, or
// when the system refuses a thread. Every command that runs the model calls it first.
void apply_threads(const RunConfigArgs& args);

// --compression NAME, for the commands that write traces (run, demo, sweep): the filters of every
// dataset of the trace, parsed by trace::parse_compression ("deflate" by default). Like --threads
// it is not a run-configuration field: it changes how the trace's bytes are stored, never the
// values a run computes, so it is recorded in the trace's config_json "trace" object beside
// hidden_dtype, and --config files do not take it.
void add_compression_option(CLI::App& cmd, std::string& compression);

// Refuses a --seed outside 0..2^64-1 (parse_seed), which CLI11 would store in a uint64_t as
// 2^64 - 1: a negative one wrapped, a larger one clamped.
CLI::Validator seed_in_range();

// The option of `cmd` that a config file's key or a grid knob names when it is no field
// ("force" -> "--force", "dry_run" -> "--dry-run"), or "" when `cmd` has none.
std::string option_named(const CLI::App* cmd, const std::string& key);

// Applies --config FILE (TOML, run_config_file.h; keys are the field names, with '_' or '-') to
// the fields that were not given on the command line: flags win over the file. Throws ds::Error
// naming an unknown key (a key naming an option of `cmd`, such as `force`, as that option) or a
// bad value. Call after parsing, before using args.config.
void apply_config_file(CLI::App& cmd, RunConfigArgs& args);

// The run-configuration flags given on `cmd`'s command line whose long name (without "--") passes
// `pick`, applied to `base` with the fields' parsing. For commands that build more than one
// configuration from one command line (demo).
RunConfig with_given_flags(const CLI::App& cmd, RunConfig base,
                           const std::function<bool(const std::string&)>& pick);

// `base` with the fields of a TOML file applied (keys and checks as --config; a key naming an
// option of `cmd` is refused as that option); "" = none.
RunConfig with_config_file(RunConfig base, const std::string& file, const CLI::App* cmd = nullptr);

// With --dry-run: prints the resolved config (TOML, as --config reads it) and returns true.
bool print_dry_run(const RunConfigArgs& args);

}  // namespace ds
