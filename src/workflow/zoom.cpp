// Running a zoom: its checks, the replays still missing (here or on Slurm), then the reports.
#include "src/workflow/zoom.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <filesystem>
#include <optional>

#include "common/error.h"
#include "common/output_file.h"
#include "src/console/output.h"
#include "src/model/model.h"
#include "src/workflow/child_runs.h"
#include "src/workflow/command_files.h"
#include "src/workflow/diff_report.h"
#include "src/workflow/explain.h"
#include "src/workflow/recorded_model.h"
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

// Every file a zoom writes into DIR, checked before anything is written: none may be one of its
// inputs (the traces A and B, the model and tokenizer the replays load), whatever their names.
void check_outputs(const std::filesystem::path& dir, const ZoomPlan& p) {
  CommandFiles files;
  files.input(p.a, "the input trace");
  files.input(p.b, "the input trace");
  files.model_inputs(p.model, p.tokenizer);
  const auto own = [&](const std::filesystem::path& path, const std::string& what) {
    files.output(path, what, "-o", /*may_replace=*/true);  // DIR is new or this zoom's
  };
  own(zoom_json_path(dir), "zoom file");
  own(dir / "zoom.sbatch", "batch script");
  own(dir / "flips.txt", "report");
  own(dir / "flips.json", "report");
  own(dir / "flips.html", "report");
  for (const ZoomSide* s : {&p.side_a, &p.side_b}) {
    own(side_trace(dir, *s), "replay trace");
    own(side_prompts(dir, *s), "prompts file");
    own(dir / "configs" / (s->name + ".toml"), "configuration file");
    own(dir / "logs" / ("replay-" + s->name + ".log"), "log");
  }
  for (const auto& z : p.seqs) {
    const auto d = dir / fmt::format("seq-{}", z.seq);
    for (const char* f : {"diff.json", "diff.txt", "attribution.json", "attribution.txt"}) {
      own(d / f, "report");
    }
  }
  files.check();
}

// The models the replays load, verified before anything runs: A's recorded model (driftscope's
// replays load it for both sides) and the model of each recorder trace (its recorder loads it),
// each file's sha256 against what the trace recorded, and A's tokenizer, which the replays record
// and the reports decode with. A file that changed since is refused, naming it.
void verify_models(const ZoomPlan& p, const trace::TraceReader& ta, const trace::TraceReader& tb) {
  const char* hint =
      "zoom replays the model the traces record: put it back at that path (relative paths are "
      "read from the folder the trace was recorded in), or record A and B again";
  verified_replay_model(ta, hint);  // what driftscope's replays load, and A's recorder if any
  if (p.side_b.recorder) verify_recorded_model(recorded_model(tb), hint);
}

// Each side's replay configuration checked against the model the replays load (tp against its
// heads, the stop token against its vocabulary), before anything is written.
void check_configs(const ZoomPlan& p) {
  const std::filesystem::path model =
      p.model.empty() ? default_model_path() : std::filesystem::path(p.model);
  std::optional<ModelConfig> m;
  for (const ZoomSide* s : {&p.side_a, &p.side_b}) {
    if (s->recorder) continue;  // the recorder checks its own options
    if (!m) m = read_model_config(model);
    try {
      validate_for_model(s->config, *m);
    } catch (const Error& e) {
      throw Error(fmt::format("the replay of {} ('{}'): {}", s->name == "a" ? "A" : "B", s->source,
                              e.what()),
                  e.hint());
    }
  }
}

// Each side's files: its configuration (TOML; none for a recorder's replay, whose options go on
// its command line) and its prompts, made before anything is written.
struct SideFiles {
  std::optional<std::string> config;
  std::string prompts;
};

std::array<SideFiles, 2> side_files(const ZoomPlan& p, const trace::TraceReader& ta,
                                    const trace::TraceReader& tb) {
  std::array<SideFiles, 2> out;
  for (size_t i = 0; i < 2; ++i) {
    const ZoomSide& s = i == 0 ? p.side_a : p.side_b;
    if (!s.recorder) out[i].config = to_toml(s.config);
    out[i].prompts = replay_prompts(p, ta, i == 0 ? ta : tb, i == 0);
  }
  return out;
}

// Writes the state first (an interrupted zoom leaves a folder it resumes), then each side's
// configuration and prompts, then the state with each side's status; returns the sides still to
// run.
std::vector<size_t> prepare(const std::filesystem::path& dir, ZoomPlan& p,
                            const std::array<SideFiles, 2>& files) {
  const char* hint = "check that -o names a writable folder and the disk is not full";
  write_zoom_state(dir, p);
  std::vector<size_t> todo;
  for (size_t i = 0; i < 2; ++i) {
    ZoomSide& s = side(p, i);
    if (files[i].config) {
      std::filesystem::create_directories(dir / "configs");
      write_file_or_fail(dir / "configs" / (s.name + ".toml"), *files[i].config, hint);
    }
    write_file_or_fail(side_prompts(dir, s), files[i].prompts, hint);
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
  check_workflow_folder(dir, a.command, "zoom.json");
  verify_models(p, ta, tb);
  if (std::filesystem::exists(std::filesystem::symlink_status(zoom_json_path(dir)))) {
    merge_zoom_state(dir, p);
  }
  check_configs(p);
  find_recorders(dir, p);
  check_outputs(dir, p);
  const std::array<SideFiles, 2> files = side_files(p, ta, tb);
  // everything above reads and checks; from here on DIR is written
  std::filesystem::create_directories(dir);
  const SweepLock lock(dir, a.command);
  if (!p.slurm_jobs.empty()) wait_for_jobs(a, p);
  const std::vector<size_t> todo = prepare(dir, p, files);
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
