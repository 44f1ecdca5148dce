// `driftscope zoom A.h5 B.h5 -o DIR`: re-run A's and B's configurations on A's tokens, with every
// probe, only for the sequences that flipped and only up to the flip plus --after tokens; then
// diff and attribute each pair and explain the flips in aggregate. Resumable like sweep. Its
// steps: the plan and DIR/zoom.json (zoom_plan.h; a recorder trace's replay, zoom_recorder.h), the
// two replays (child_runs.h, or slurm.h), each sequence's reports (zoom_analysis.h) and the
// aggregate (zoom_flips.h).
#pragma once

#include <string>
#include <vector>

#include "src/workflow/slurm.h"

namespace ds {

// A zoom as the command line gives it; its flags already checked by the command.
struct ZoomOptions {
  std::string a, b, output;
  std::vector<int> seqs;
  int after = 8;
  int jobs = 2;
  bool slurm = false;
  bool wait = false;
  SlurmOptions slurm_opt;
  int poll_s = 5;
  bool quiet = false;
  // After the analysis, explain the flips (explain.h): `driftscope explain` (command "explain")
  // prints its report and writes no flips report; `zoom --explain` writes both, the flips
  // report's onset column then naming each flip's cause.
  bool explain = false;
  std::string command = "zoom";
};

// Runs the zoom into `o.output`. Returns the exit code: 0 when the reports are written (or the
// replays were submitted to Slurm without --wait), 1 when a replay is missing (explain: an
// error), 130 when interrupted (resumable). Throws ds::Error with a hint on traces zoom cannot
// replay or compare.
int run_zoom(const ZoomOptions& o);

}  // namespace ds
