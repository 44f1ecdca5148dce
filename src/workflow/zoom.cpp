// Running a zoom: its checks, the replays still missing (here or on Slurm), then the reports.
#include "src/workflow/zoom.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <optional>

#include "common/error.h"
#include "common/output_file.h"
#include "src/console/output.h"
#include "src/workflow/child_runs.h"
#include "src/workflow/diff_report.h"
#include "src/workflow/explain.h"
#include "src/workflow/zoom_analysis.h"
#include "src/workflow/zoom_flips.h"
#include "src/workflow/zoom_plan.h"

namespace ds {
namespace {

ZoomSide& side(ZoomPlan& p, size_t i) {
  return i == 0 ? p.side_a : p.side_b;
}

// The replay of one side: `driftscope run` of its recorded configuration on its prompts file, or
// the recorder's command for a recorder trace.
ChildRun replay_run(const std::filesystem::path& dir, const ZoomPlan& p, const ZoomSide& s,
                    bool certify) {
  const auto abs = std::filesystem::absolute(dir);
  if (s.recorder) {
    return {"replay-" + s.name,
            recorder_argv(*s.recorder, side_prompts(abs, s), side_trace(abs, s)),
            /*sets_threads=*/true};
  }
  return {
      "replay-" + s.name,
      replay_argv(abs / "configs" / (s.name + ".toml"), side_prompts(abs, s),
                  {p.model, p.tokenizer}, side_trace(abs, s),
                  certify ? std::vector<std::string>{"--certify"} : std::vector<std::string>{})};
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

void wait_for_jobs(const ZoomOptions& a, const ZoomPlan& p) {
  settle_slurm_jobs(p.slurm_jobs, "zoom", a.replay.wait, true, a.replay.poll_s, a.replay.quiet,
                    "wait for it (driftscope zoom A.h5 B.h5 -o DIR --wait), then run zoom again");
}

// Runs (or submits) the replays still missing; returns the exit code when zoom stops here.
std::optional<int> run_replays(const ZoomOptions& a, const std::filesystem::path& dir, ZoomPlan& p,
                               const std::vector<size_t>& todo) {
  std::vector<ChildRun> runs = {replay_run(dir, p, p.side_a, a.certify),
                                replay_run(dir, p, p.side_b, a.certify)};
  const ReplayEnd end = run_replays(
      dir, runs, todo, a.replay, p.slurm_jobs,
      [&](size_t i, bool exited_ok) {
        ZoomSide& s = side(p, i);
        const bool ok = exited_ok && replay_done(dir, s);
        s.status = ok ? "done" : "missing";
        write_zoom_state(dir, p);
        return ok;
      },
      [&] {
        for (size_t i : todo) side(p, i).status = "submitted";
        write_zoom_state(dir, p);
      });
  if (end == ReplayEnd::submitted) return 0;
  if (end == ReplayEnd::interrupted) {
    print_note("zoom: interrupted; resume with the same command\n");
    return 130;
  }
  std::string missing;
  for (size_t i = 0; i < 2; ++i) {
    ZoomSide& s = side(p, i);
    s.status = replay_done(dir, s) ? "done" : "missing";
    if (s.status == "missing") missing += (missing.empty() ? "" : ", ") + s.name;
  }
  write_zoom_state(dir, p);
  if (!missing.empty() && a.explain) {
    for (size_t i = 0; i < 2; ++i) {  // nothing half-written stays
      std::error_code ec;
      if (side(p, i).status == "missing") std::filesystem::remove(side_trace(dir, side(p, i)), ec);
    }
    throw Error(fmt::format("replay(s) of {} failed (logs in {}/logs)", missing, dir.string()),
                "the log says why; the same command resumes (complete replays are kept)");
  }
  if (!missing.empty()) {
    print_note("driftscope: zoom replay(s) missing: {} (logs in {}/logs)\n", missing, dir.string());
    return 1;
  }
  return std::nullopt;
}

}  // namespace

int run_zoom(const ZoomOptions& a) {
  const std::filesystem::path dir = a.output;
  const auto ta = trace::TraceReader::open(a.a);
  const auto tb = trace::TraceReader::open(a.b);
  check_whole(ta, tb);
  diff::DiffOptions opt;
  opt.allow_model_mismatch = true;  // refused below, with zoom's hint
  const diff::Report original = diff_with_recorded_tokenizer(ta, tb, opt);
  check_comparable(original);
  if (a.explain) check_explainable(original, a.seqs);
  ZoomPlan p = make_zoom_plan(ta, tb, original, a.seqs, a.after, /*whole_blocks=*/a.explain);
  if (a.explain) check_explainable(p);
  if (std::filesystem::exists(zoom_json_path(dir))) merge_zoom_state(dir, p);
  find_recorders(dir, p);
  // everything above reads and checks; from here on DIR is written
  std::filesystem::create_directories(dir);
  const SweepLock lock(dir, a.command);
  if (!p.slurm_jobs.empty()) wait_for_jobs(a, p);
  const std::vector<size_t> todo = prepare(dir, p, ta, tb);
  if (!a.replay.quiet) {
    print_note(
        "zoom: {} sequence(s), {} replayed with their batch neighbours; {} replay(s) to "
        "run\n",
        p.seqs.size(), p.replay.size(), todo.size());
  }
  if (!todo.empty()) {
    if (const auto rc = run_replays(a, dir, p, todo)) return *rc;
  }
  const ZoomAnalysis analysis = analyse_zoom(dir, p, original, a.replay.quiet);
  std::optional<diff::ExplainReport> explained;
  if (a.explain) {
    TrialRunner runner{.dir = dir,
                       .jobs = a.replay.jobs,
                       .slurm = a.replay.slurm,
                       .wait = a.replay.wait,
                       .quiet = a.replay.quiet,
                       .slurm_opt = a.replay.slurm_opt,
                       .poll_s = a.replay.poll_s};
    ExplainResult e = explain_flips(dir, p, original, analysis, runner);
    if (!e.report) return e.exit_code;
    explained = std::move(e.report);
  }
  if (a.command == "zoom") {
    write_zoom_flips(dir, p, analysis.diffs, analysis.attributions,
                     explained ? &*explained : nullptr, a.replay.quiet);
  }
  if (explained) write_explain_reports(dir, *explained, a.command == "explain", a.replay.quiet);
  return 0;
}

}  // namespace ds
