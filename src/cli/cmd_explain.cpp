// `driftscope explain A.h5 B.h5 -o DIR`: its options and their checks; the explanation itself is
// src/workflow/explain.h (run as a zoom with its trials, src/workflow/zoom.h).
#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "common/error.h"
#include "src/cli/commands.h"
#include "src/cli/slurm_args.h"
#include "src/workflow/zoom.h"

namespace ds {

CommandRun register_explain(CLI::App* cmd) {
  auto args = std::make_shared<ZoomOptions>();
  args->explain = true;
  args->command = "explain";
  args->replay.what = "explain";
  args->after = 0;
  cmd->description(
      "Say why two runs part: for every sequence that flipped between A and B (or each of "
      "--seq), which configuration knobs make B's token win at the flip (trials: A's "
      "configuration with some knobs at B's values, replayed teacher-forced to the flip row; a "
      "full factorial up to 6 knobs, ddmin beyond), and within them which ops (numerics plans "
      "that take B's decisions at some ops only, bisected). Built on zoom's replays (DIR holds "
      "them); report in DIR/explain.{txt,json,html} and on stdout (docs/metrics.md §13). "
      "Resumable: complete replays and trials are kept.");
  cmd->add_option("a", args->a, "reference trace (.h5)")->required();
  cmd->add_option("b", args->b, "trace to compare (.h5), of the same model and prompts")
      ->required();
  cmd->add_option("-o,--output", args->output, "explain directory; required");
  cmd->add_option("--seq", args->seqs, "explain these flipped sequences only (e.g. 0,3)")
      ->allow_extra_args(false)
      ->delimiter(',');
  add_replay_options(
      *cmd, args->replay, "replays and trials run at once on this machine",
      "run the replays and each round of trials as a Slurm job array (DIR/*.sbatch); "
      "run explain again once a round is done, or pass --wait",
      "wait for each round's Slurm jobs and go on to the report");
  return [args] {
    if (args->output.empty()) throw Error("explain needs an output directory", "pass -o DIR");
    check_replay_options(args->replay, args->output);
    return run_zoom(*args);
  };
}

}  // namespace ds
