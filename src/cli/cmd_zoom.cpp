// `driftscope zoom A.h5 B.h5 -o DIR`: its options and their checks; the zoom itself is
// src/workflow/zoom.h.
#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "common/error.h"
#include "src/cli/commands.h"
#include "src/cli/slurm_args.h"
#include "src/workflow/zoom.h"
#include "trace/schema.h"

namespace ds {
namespace {

void check_flags(const ZoomOptions& a) {
  if (a.output.empty()) throw Error("zoom needs an output directory", "pass -o DIR");
  if (a.after < 0) {
    throw Error(fmt::format("--after {} must be >= 0", a.after),
                "--after N replays N tokens past each flip");
  }
  if (a.after > trace::kMaxSequenceTokens) {  // no trace holds more: the flip + after never wraps
    throw Error(
        fmt::format("--after {} is more than the {} tokens a trace's sequence holds at most",
                    a.after, trace::kMaxSequenceTokens),
        "--after N replays N tokens past each flip (the replay stops at the end of A's "
        "sequence anyway)");
  }
  check_replay_options(a.replay, a.output);
}

}  // namespace

CommandRun register_zoom(CLI::App* cmd) {
  auto args = std::make_shared<ZoomOptions>();
  cmd->description(
      "Zoom into where two runs part: for every sequence that flipped between A and B (or "
      "--seq), re-run A's and B's recorded configurations teacher-forced on A's tokens up to "
      "the flip plus --after tokens, with every probe; then diff and attribute each pair "
      "(DIR/seq-<i>/) and explain the flips in aggregate (DIR/flips.*). A trace of the Python "
      "recorder is replayed by the recorder (driftscope-trace on PATH, or $DRIFTSCOPE_TRACE). "
      "The cheap first pass is a sweep with --probes none. Resumable: complete replays are "
      "kept.");
  cmd->add_option("a", args->a, "reference trace (.h5)")->required();
  cmd->add_option("b", args->b, "trace to compare (.h5), of the same model and prompts")
      ->required();
  cmd->add_option("-o,--output", args->output, "zoom directory; required");
  cmd->add_option("--seq", args->seqs, "zoom into these sequence indices instead (e.g. 0,3)")
      ->allow_extra_args(false)
      ->delimiter(',');
  cmd->add_option("--after", args->after, "tokens replayed past each flip")->capture_default_str();
  add_replay_options(*cmd, args->replay, "replays run at once on this machine (there are two)",
                     "write DIR/zoom.sbatch (one array task per replay still missing) and submit "
                     "it; run zoom again once it is done for the reports",
                     "wait for the zoom's Slurm jobs, then write the reports");
  cmd->add_flag("--certify", args->certify,
                "each driftscope replay proves that tapping changed nothing (run --certify)");
  cmd->add_flag("--explain", args->explain,
                "also say why each flip flips, as driftscope explain does (its trials, "
                "DIR/explain.*): the flips report's onset column then names each cause");
  return [args] {
    check_flags(*args);
    return run_zoom(*args);
  };
}

}  // namespace ds
