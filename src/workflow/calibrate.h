// `driftscope calibrate A.h5 -o FLOOR`: A's noise floor. A's recorded configuration is replayed
// on A's tokens with every probe, once in A's own order (the reference) and N times under a
// benign perturbation drawn from a seed (another valid reduction order at every op, or
// stochastic rounding of op outputs); each replay is measured against the reference and its
// trace removed; the floor file gathers the measures (docs/metrics.md "Noise floors",
// docs/trace-format.md "Floor files"). Its steps: the plan and its state (calibrate_plan.h), the
// replays (here or on Slurm, replays.h), the measures and the floor (calibrate_measure.h).
// Resumable like zoom: the same command again runs only what is missing.
#pragma once

#include <string>
#include <vector>

#include "src/workflow/replays.h"

namespace ds {

struct CalibrateOptions {
  std::string a, output;
  int runs = 99;
  std::vector<int> seqs;
  std::string perturbation = "reorder";
  ReplayOptions replay{"calibrate"};  // -j, --slurm and its options, -q
  bool force = false;                 // replace an existing floor file
};

// Calibrates into o.output. Returns the exit code: 0 when the floor is written (or the replays
// were submitted to Slurm without --wait), 1 when a replay failed, 130 when interrupted
// (resumable). Throws ds::Error with a hint on a trace it cannot calibrate or bad options.
int run_calibrate(const CalibrateOptions& o);

}  // namespace ds
