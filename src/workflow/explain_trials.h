// explain's trials: child runs that each write one trace (a knob trial: A's configuration with a
// set of knobs at B's, replaying every explained sequence with its batch neighbours; an op trial:
// one sequence under a numerics plan), run here -j at a time or as a Slurm job array, kept across
// runs of explain (a trial whose trace is complete and records what the trial asks for is done);
// and the outcome a trace gives at a flip row: whose token wins there, by how much.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "diff/cause_search.h"
#include "src/workflow/slurm.h"
#include "src/workflow/zoom_recorder.h"
#include "trace/reader.h"

namespace ds {

struct Trial {
  std::string name;  // its log: DIR/logs/trial-<name>.log
  std::vector<std::string> argv;
  bool sets_threads = false;  // argv holds its own --threads (a recorder's)
  std::filesystem::path trace;
  // What its trace records when it is done: the config_json without its "trace" object
  // (driftscope run), or, for a recorder's trial, that recorder's options.
  std::string config_json;
  std::optional<RecorderReplay> recorder;
  // files its command reads, written before it runs (its configuration, prompts, plan)
  std::vector<std::pair<std::filesystem::path, std::string>> inputs;
};

// Whether `t`'s trace is complete and records what `t` asks for.
bool trial_done(const Trial& t);

// Where and how trials run, and what they cost.
struct TrialRunner {
  std::filesystem::path dir;
  int jobs = 2;
  bool slurm = false, wait = false, quiet = false;
  SlurmOptions slurm_opt;
  int poll_s = 5;
  int runs = 0;        // trials run by this process
  double seconds = 0;  // their wall time, summed over rounds
};

// Runs the trials of `round` that are not done yet (after settling the Slurm jobs of an earlier
// explain in DIR). Returns nothing when all are done; else the exit code explain stops with: 0
// when submitted to Slurm without --wait, 130 when interrupted (resumable). Throws ds::Error with
// a hint naming a trial whose run failed (its trace removed, its log kept; the trials done so far
// are kept, so the same command resumes).
std::optional<int> run_trials(TrialRunner& r, const std::vector<Trial>& round);

// A flip row as a trial's trace holds it: the sequence at `replay_index`, logits row `row`,
// A's token and B's, and the tokens before it (for a repetition penalty).
struct FlipRow {
  int replay_index = 0;
  int64_t row = 0;
  int32_t token_a = 0, token_b = 0;
  std::vector<int32_t> history;
};

// The outcome at `f` in trace `t`, chosen by t's own rule (its recorded tie_break and
// repetition_penalty) over its recorded top-K: b_wins, a_wins, or unresolved (a third token, or a
// choice that could lie outside the top-K); the margin is logit(B's) − logit(A's) as that rule
// sees them (NaN when either is outside the top-K).
diff::TrialOutcome flip_outcome(const trace::TraceReader& t, const FlipRow& f);

// Whether two traces hold the same logits rows 0..last of their sequences ia and ib, bit for bit:
// top-K ids, top-K logits and log-sum-exp.
bool same_logits(const trace::TraceReader& a, int ia, const trace::TraceReader& b, int ib,
                 int64_t last);

}  // namespace ds
