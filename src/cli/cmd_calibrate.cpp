// `driftscope calibrate A.h5 -o FLOOR`: its options; the calibration itself is
// src/workflow/calibrate.h.
#include <CLI/CLI.hpp>

#include "src/cli/commands.h"
#include "src/cli/slurm_args.h"
#include "src/workflow/calibrate.h"

namespace ds {

CommandRun register_calibrate(CLI::App* cmd) {
  auto args = std::make_shared<CalibrateOptions>();
  cmd->description(
      "A trace's noise floor: replay A's recorded configuration on A's tokens with every probe, "
      "once in A's own order and --runs times under a benign perturbation drawn from a seed "
      "(another valid reduction order at every op, or +-1 ulp stochastic rounding of op "
      "outputs), and gather how far each replay moves from A, per site and position, into "
      "FLOOR. Then diff A.h5 B.h5 --floor FLOOR says whether B differs from A more than such "
      "a reordering would (docs/metrics.md, \"Noise floors\"). The replays run in FLOOR.calibrate/ "
      "(CPU traces only); resumable: the same command again runs what is missing.");
  cmd->add_option("a", args->a, "trace to calibrate (.h5), written by driftscope run or sweep")
      ->required();
  cmd->add_option("-o,--output", args->output, "floor file to write (.h5); required");
  cmd->add_option("--runs", args->runs,
                  "benign replays N (>= 20; p-values go down to 1/(N+1): 99 reaches 0.01)")
      ->capture_default_str();
  cmd->add_option("--seq", args->seqs, "calibrate only these sequence indices (e.g. 0,3)")
      ->allow_extra_args(false)
      ->delimiter(',');
  cmd->add_option("--perturb", args->perturbation,
                  "the benign perturbation: reorder (another valid reduction order at every op), "
                  "sr (+-1 ulp stochastic rounding of every op's output) or reorder+sr")
      ->capture_default_str();
  add_replay_options(*cmd, args->replay, "replays run at once on this machine",
                     "write FLOOR.calibrate/calibrate.sbatch (one array task per replay still "
                     "missing) and submit it; run calibrate again once it is done for the floor",
                     "wait for the calibration's Slurm jobs, then write the floor");
  cmd->add_flag("--force", args->force, "replace an existing floor file");
  return [args] { return run_calibrate(*args); };
}

}  // namespace ds
