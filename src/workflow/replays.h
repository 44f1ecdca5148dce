// What zoom and calibrate share to replay the runs of a trace: the run configuration and model a
// driftscope trace records, its prompts as JSONL lines forced on its tokens, the `driftscope run`
// command line of a replay, and running the replays still missing, here (-j at a time) or as one
// Slurm job array.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "src/experiment/run_config.h"
#include "src/workflow/child_runs.h"
#include "src/workflow/slurm.h"
#include "trace/reader.h"

namespace ds {

// A run configuration from a driftscope trace's recorded config_json (the "trace" object, the
// "plan" and test-only keys left out). Throws ds::Error naming the trace when a field is unknown
// or invalid.
RunConfig recorded_config(const trace::TraceReader& t);

// One line of a replay's JSONL prompts: {"ids": the prompt, "forced": the next `forced` tokens}
// of `tokens` (prompt_len prompt tokens, then generated ones).
std::string forced_prompt_line(const std::vector<int32_t>& tokens, int prompt_len, int forced);

// The model and tokenizer a replay loads (paths; empty: the bundled model, the model's own
// tokenizer): what the trace records (recorded_model.h), resolved and verified.
struct ReplayModel {
  std::string model, tokenizer;
};
// The model and tokenizer `t` records, each file's sha256 verified against the recorded one
// (recorded_model.h): a file that changed since is refused with `hint`.
ReplayModel verified_replay_model(const trace::TraceReader& t, const std::string& hint);

// The `driftscope run` command line of a replay with every probe: --config, --prompts, the
// model, -o trace --force -q, then `extra` (argv, the executable first).
std::vector<std::string> replay_argv(const std::filesystem::path& config,
                                     const std::filesystem::path& prompts, const ReplayModel& m,
                                     const std::filesystem::path& trace,
                                     const std::vector<std::string>& extra = {});

// How the replays of a command run: here, `jobs` at a time, or on Slurm.
struct ReplayOptions {
  std::string what;  // the command: "zoom", "calibrate" (progress lines, DIR/<what>.sbatch)
  int jobs = 2;      // -j
  bool slurm = false;
  bool wait = false;
  SlurmOptions slurm_opt;
  int poll_s = 5;
  bool quiet = false;
};

// Refuses -j below 1 and what check_slurm_flags refuses (`dir`: where the command writes).
void check_replay_options(const ReplayOptions& r, const std::string& dir);

enum class ReplayEnd { finished, submitted, interrupted };

// Runs runs[i] for each i in `todo`: here (`finished(i, exited_ok)` records each as it ends and
// says whether its output is complete), or submitted as one Slurm array (its job id appended to
// `slurm_jobs`, then `submitted()` records that) and, with opt.wait, waited for. Returns
// `submitted` when the jobs were submitted and not waited for, `interrupted` on Ctrl-C (the runs
// going were stopped, as run_children does), else `finished`.
ReplayEnd run_replays(const std::filesystem::path& dir, const std::vector<ChildRun>& runs,
                      const std::vector<size_t>& todo, const ReplayOptions& opt,
                      std::vector<std::string>& slurm_jobs,
                      const std::function<bool(size_t, bool)>& finished,
                      const std::function<void()>& submitted);

}  // namespace ds
