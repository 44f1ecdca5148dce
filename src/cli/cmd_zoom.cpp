// `driftscope zoom A.h5 B.h5 -o DIR`: re-run A's and B's configurations on A's tokens, with every
// probe, only for the sequences that flipped and only up to the flip plus --after tokens; then
// diff and attribute each pair and explain the flips in aggregate. Resumable like sweep.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <filesystem>

#include "common/error.h"
#include "common/output_file.h"
#include "src/cli/commands.h"
#include "src/cli/diff_report.h"
#include "src/cli/slurm_args.h"
#include "src/cli/sweep_exec.h"
#include "src/cli/zoom_analysis.h"
#include "src/cli/zoom_plan.h"
#include "src/console/output.h"
#include "src/experiment/sweep.h"

namespace ds {
namespace {

struct ZoomArgs {
  std::string a, b, output;
  std::vector<int> seqs;
  int after = 8;
  int jobs = 2;
  bool slurm = false;
  bool wait = false;
  SlurmOptions slurm_opt;
  int poll_s = 5;
  bool quiet = false;
};

ZoomSide& side(ZoomPlan& p, size_t i) {
  return i == 0 ? p.side_a : p.side_b;
}

// The replay of one side: `driftscope run` of its recorded configuration on its prompts file, or
// the recorder's command for a recorder trace.
ChildRun replay_run(const std::filesystem::path& dir, const ZoomPlan& p, const ZoomSide& s) {
  const auto abs = std::filesystem::absolute(dir);
  if (s.recorder) {
    return {"replay-" + s.name,
            recorder_argv(*s.recorder, side_prompts(abs, s), side_trace(abs, s)),
            /*sets_threads=*/true};
  }
  std::vector<std::string> argv = {
      self_exe().string(), "run",
      "--config",          (abs / "configs" / (s.name + ".toml")).string(),
      "--prompts",         side_prompts(abs, s).string()};
  if (!p.model.empty()) argv.insert(argv.end(), {"--model", p.model});
  if (!p.tokenizer.empty()) argv.insert(argv.end(), {"--tokenizer", p.tokenizer});
  argv.insert(argv.end(), {"--probes", "all", "-o", side_trace(abs, s).string(), "--force", "-q"});
  return {"replay-" + s.name, argv};
}

// The recorder of each recorder side still to replay, found before anything is written (or
// refused, with how to install it and the exact command).
void find_recorders(const std::filesystem::path& dir, ZoomPlan& p) {
  const auto abs = std::filesystem::absolute(dir);
  for (size_t i = 0; i < 2; ++i) {
    ZoomSide& s = side(p, i);
    if (!s.recorder || replay_done(dir, s)) continue;
    find_recorder(*s.recorder, s.source, side_prompts(abs, s), side_trace(abs, s));
  }
}

// A trace zoom cannot replay in full: incomplete or cut short.
void check_whole(const trace::TraceReader& ta, const trace::TraceReader& tb) {
  for (const trace::TraceReader* t : {&ta, &tb}) {
    if (!t->complete()) {
      throw Error(fmt::format("trace '{}' is incomplete (complete=0: its run was interrupted)",
                              t->path().string()),
                  "zoom into two complete traces: run or resume the sweep first");
    }
    if (const auto& cut = t->cut_short()) {
      throw Error(fmt::format("trace '{}' is damaged: cut short ({} of {} bytes on disk)",
                              t->path().string(), cut->on_disk, cut->expected),
                  "copy or record the trace again (driftscope show names what is missing)");
    }
  }
}

// Two runs zoom can compare: of one model (diff's own refusal would hint at a flag zoom does not
// have), every sequence read (a damaged part, skipped, would read as "no flip" or zoom into less
// than was asked).
void check_comparable(const diff::Report& original) {
  if (original.model_known && !original.model_equal) {
    throw Error(fmt::format("the traces are of different models (A: {}; B: {})",
                            fmt::join(original.a.model_files, ", "),
                            fmt::join(original.b.model_files, ", ")),
                "zoom replays two runs of one model: pass two traces of one sweep");
  }
  if (!original.skipped.empty()) {
    const auto& s = original.skipped.front();
    throw Error(fmt::format("a trace is damaged: seq {}, {} not read: {}", s.seq, s.what, s.why),
                "zoom reads every sequence of both traces: record the damaged one again "
                "(driftscope show names what is damaged)");
  }
}

void check_flags(const ZoomArgs& a) {
  if (a.output.empty()) throw Error("zoom needs an output directory", "pass -o DIR");
  if (a.after < 0) {
    throw Error(fmt::format("--after {} must be >= 0", a.after),
                "--after N replays N tokens past each flip");
  }
  if (a.jobs < 1) throw Error(fmt::format("-j {} must be >= 1", a.jobs), "-j takes N >= 1");
  check_slurm_flags(a.slurm, a.slurm_opt, a.poll_s, a.output);
}

// Writes each side's configuration, prompts and the state; returns the sides still to run.
std::vector<size_t> prepare(const std::filesystem::path& dir, ZoomPlan& p,
                            const trace::TraceReader& ta, const trace::TraceReader& tb) {
  const char* hint = "check that -o names a writable folder and the disk is not full";
  std::vector<size_t> todo;
  for (size_t i = 0; i < 2; ++i) {
    ZoomSide& s = side(p, i);
    if (!s.recorder) {  // a recorder's replay takes its options on the command line: no file
      std::filesystem::create_directories(dir / "configs");
      write_file_or_fail(dir / "configs" / (s.name + ".toml"), to_toml(s.config), hint);
    }
    write_file_or_fail(side_prompts(dir, s), replay_prompts(p, ta, i == 0 ? ta : tb, i == 0), hint);
    if (replay_done(dir, s)) {
      s.status = "done";
    } else {
      if (s.status != "submitted") s.status = "missing";
      todo.push_back(i);
    }
  }
  write_zoom_state(dir, p);
  return todo;
}

void wait_for_jobs(const ZoomArgs& a, const ZoomPlan& p) {
  settle_slurm_jobs(p.slurm_jobs, "zoom", a.wait, true, a.poll_s, a.quiet,
                    "wait for it (driftscope zoom A.h5 B.h5 -o DIR --wait), then run zoom again");
}

// Runs (or submits) the replays still missing; returns the exit code when zoom stops here.
std::optional<int> run_replays(const ZoomArgs& a, const std::filesystem::path& dir, ZoomPlan& p,
                               const std::vector<size_t>& todo) {
  std::vector<ChildRun> runs = {replay_run(dir, p, p.side_a), replay_run(dir, p, p.side_b)};
  if (a.slurm) {
    const std::string job =
        submit_slurm_array(dir, "zoom.sbatch", "driftscope-zoom", runs, todo, a.slurm_opt);
    p.slurm_jobs.push_back(job);
    for (size_t i : todo) side(p, i).status = "submitted";
    write_zoom_state(dir, p);
    if (!a.quiet) print_note("zoom: submitted Slurm job array {} ({} replays)\n", job, todo.size());
    if (!a.wait) return 0;
    wait_while_active(job, a.poll_s);
  } else {
    std::vector<ChildRun> mine;
    for (size_t i : todo) mine.push_back(runs[i]);
    const bool interrupted =
        run_children(dir, mine, a.jobs, a.quiet, "zoom", [&](size_t k, bool exited_ok) {
          ZoomSide& s = side(p, todo[k]);
          const bool ok = exited_ok && replay_done(dir, s);
          s.status = ok ? "done" : "missing";
          write_zoom_state(dir, p);
          return ok;
        });
    if (interrupted) {
      print_note("zoom: interrupted; resume with the same command\n");
      return 130;
    }
  }
  std::string missing;
  for (size_t i = 0; i < 2; ++i) {
    ZoomSide& s = side(p, i);
    s.status = replay_done(dir, s) ? "done" : "missing";
    if (s.status == "missing") missing += (missing.empty() ? "" : ", ") + s.name;
  }
  write_zoom_state(dir, p);
  if (!missing.empty()) {
    print_note("driftscope: zoom replay(s) missing: {} (logs in {}/logs)\n", missing, dir.string());
    return 1;
  }
  return std::nullopt;
}

int run_zoom(const ZoomArgs& a) {
  check_flags(a);
  const std::filesystem::path dir = a.output;
  const auto ta = trace::TraceReader::open(a.a);
  const auto tb = trace::TraceReader::open(a.b);
  check_whole(ta, tb);
  diff::DiffOptions opt;
  opt.allow_model_mismatch = true;  // refused below, with zoom's hint
  const diff::Report original = diff_with_recorded_tokenizer(ta, tb, opt);
  check_comparable(original);
  ZoomPlan p = make_zoom_plan(ta, tb, original, a.seqs, a.after);
  if (std::filesystem::exists(zoom_json_path(dir))) merge_zoom_state(dir, p);
  find_recorders(dir, p);
  // everything above reads and checks; from here on DIR is written
  std::filesystem::create_directories(dir);
  const SweepLock lock(dir, "zoom");
  if (!p.slurm_jobs.empty()) wait_for_jobs(a, p);
  const std::vector<size_t> todo = prepare(dir, p, ta, tb);
  if (!a.quiet) {
    print_note(
        "zoom: {} sequence(s), {} replayed with their batch neighbours; {} replay(s) to "
        "run\n",
        p.seqs.size(), p.replay.size(), todo.size());
  }
  if (!todo.empty()) {
    if (const auto rc = run_replays(a, dir, p, todo)) return *rc;
  }
  analyse_zoom(dir, p, original, a.quiet);
  return 0;
}

}  // namespace

CommandRun register_zoom(CLI::App& app) {
  auto args = std::make_shared<ZoomArgs>();
  CLI::App* cmd = app.add_subcommand(
      "zoom",
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
  cmd->add_option("-j,--jobs", args->jobs, "replays run at once on this machine (there are two)")
      ->capture_default_str();
  add_slurm_options(*cmd, args->slurm, args->slurm_opt, args->wait, args->poll_s,
                    "write DIR/zoom.sbatch (one array task per replay still missing) and submit "
                    "it; run zoom again once it is done for the reports",
                    "wait for the zoom's Slurm jobs, then write the reports");
  cmd->add_flag("-q,--quiet", args->quiet, "no progress lines on stderr");
  return [args] { return run_zoom(*args); };
}

}  // namespace ds
