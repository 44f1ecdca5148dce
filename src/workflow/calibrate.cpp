// Running a calibration: its checks, the replays still missing (here or on Slurm), each measured
// as it ends, then the floor.
#include "src/workflow/calibrate.h"

#include <fmt/format.h>

#include <chrono>
#include <filesystem>

#include "common/error.h"
#include "common/output_file.h"
#include "diff/noise_floor.h"
#include "src/console/output.h"
#include "src/workflow/calibrate_measure.h"
#include "src/workflow/calibrate_plan.h"
#include "src/workflow/child_runs.h"
#include "src/workflow/replays.h"

namespace ds {
namespace {

// Writes the configuration, prompts and plans; returns the runs still to do (the reference first).
std::vector<size_t> prepare(const std::filesystem::path& dir, CalibratePlan& p,
                            const trace::TraceReader& a) {
  const char* hint = "check that the folder of -o is writable and the disk is not full";
  std::filesystem::create_directories(dir / "plans");
  write_file_or_fail(calibrate_config(dir), to_toml(p.config), hint);
  write_file_or_fail(calibrate_prompts(dir), calibrate_prompts_text(p, a), hint);
  std::vector<size_t> todo;
  for (CalibrateRun& r : p.state) {
    if (r.k > 0)
      write_file_or_fail(run_plan(dir, r.k), replay_plan_json(p.perturbation, r.k), hint);
    const bool done = r.k == 0 ? reference_done(dir, p) : replay_measured(dir, r.k);
    if (done) {
      r.status = "done";
      continue;
    }
    if (r.status != "submitted") r.status = "missing";
    todo.push_back(static_cast<size_t>(r.k));
  }
  write_calibrate_state(dir, p);
  return todo;
}

// Measures every replay whose trace is complete and not yet measured (the reference recorded);
// a replay that cannot be measured is marked missing. Returns whether all of 1..N are measured.
bool measure_finished(const std::filesystem::path& dir, CalibratePlan& p) {
  if (!reference_done(dir, p)) return false;
  bool all = true;
  for (CalibrateRun& r : p.state) {
    if (r.k == 0 || r.status == "done") continue;
    if (std::filesystem::exists(run_trace(dir, r.k))) {
      try {
        measure_replay(dir, p, r.k);
        r.status = "done";
      } catch (const Error&) {
        r.status = "missing";  // an incomplete or unreadable replay: run again
      }
    } else if (replay_measured(dir, r.k)) {
      r.status = "done";
    }
    all &= r.status == "done";
  }
  write_calibrate_state(dir, p);
  return all;
}

void check_output(const CalibrateOptions& o) {
  if (o.output.empty()) throw Error("calibrate needs an output file", "pass -o floor.h5");
  if (o.runs < diff::kMinFloorRuns || o.runs > 100000) {
    throw Error(fmt::format("--runs {} is outside {}..100000: a floor's p-values cannot go below "
                            "1/(N+1)",
                            o.runs, diff::kMinFloorRuns),
                "--runs takes N >= 20; 99 (the default) lets a p-value reach 0.01");
  }
  const TargetState t = target_state(o.output);
  if (t == TargetState::other) {
    throw Error(fmt::format("'{}' is not a regular file", o.output),
                "-o takes the path of the floor file to write");
  }
  if (t != TargetState::absent && !o.force) {
    throw Error(fmt::format("floor '{}' already exists", o.output),
                "pass --force to replace it, or choose another -o");
  }
  check_replay_options(o.replay, calibrate_dir(o.output).string());
}

}  // namespace

int run_calibrate(const CalibrateOptions& o) {
  check_output(o);
  const auto start = std::chrono::steady_clock::now();
  const auto a = trace::TraceReader::open(o.a);
  CalibratePlan p = make_calibrate_plan(a, o.output, o.seqs, o.runs, o.perturbation);
  const std::filesystem::path dir = calibrate_dir(o.output);
  if (std::filesystem::exists(dir / "calibrate.json")) merge_calibrate_state(dir, p);
  // everything above reads and checks; from here on the work folder is written
  std::filesystem::create_directories(dir);
  const SweepLock lock(dir, "calibrate");
  settle_slurm_jobs(p.slurm_jobs, "calibrate", o.replay.wait, true, o.replay.poll_s, o.replay.quiet,
                    "wait for it (the same command with --wait), then run calibrate again");
  const std::vector<size_t> todo = prepare(dir, p, a);
  if (!o.replay.quiet) {
    print_note(
        "calibrate: {} sequence(s) ({} replayed with their batch neighbours), {} {} "
        "replays and a reference; {} to run\n",
        p.sequences.size(), p.replay.size(), p.runs, p.perturbation, todo.size());
  }
  if (!todo.empty()) {
    std::vector<ChildRun> runs;
    for (const CalibrateRun& r : p.state) runs.push_back(calibrate_child(dir, p, r.k));
    const ReplayEnd end = run_replays(
        dir, runs, todo, o.replay, p.slurm_jobs,
        [&](size_t k, bool exited_ok) {
          CalibrateRun& r = p.state[k];
          if (!exited_ok) {
            r.status = "missing";
            write_calibrate_state(dir, p);
            return false;
          }
          if (k == 0 || reference_done(dir, p)) {
            measure_finished(dir, p);  // this replay, or (the reference) those that waited for it
          } else {
            r.status = "recorded";  // measured once the reference is
          }
          const bool ok = k == 0 ? reference_done(dir, p) : r.status != "missing";
          if (k == 0) r.status = ok ? "done" : "missing";
          write_calibrate_state(dir, p);
          return ok;
        },
        [&] {
          for (size_t k : todo) p.state[k].status = "submitted";
          write_calibrate_state(dir, p);
        });
    if (end == ReplayEnd::submitted) return 0;
    if (end == ReplayEnd::interrupted) {
      print_note("calibrate: interrupted; resume with the same command\n");
      return 130;
    }
  }
  if (!measure_finished(dir, p)) {
    std::string missing;
    int n = 0;
    for (const CalibrateRun& r : p.state) {
      if (r.status == "done") continue;
      if (n++ < 5) missing += (missing.empty() ? "" : ", ") + run_name(r.k);
    }
    print_note("driftscope: calibrate: {} replay(s) missing: {}{} (logs in {}/logs)\n", n, missing,
               n > 5 ? ", ..." : "", dir.string());
    return 1;
  }
  if (const std::string why = reference_mismatch(dir, p, a); !why.empty()) {
    print_note(
        "driftscope: calibrate: warning: the reference replay does not reproduce A "
        "({}): the floor measures the replays around the reference\n",
        why);
  }
  const trace::FloorFile f = write_calibrated_floor(dir, p, a, o.force);
  std::filesystem::remove(run_trace(dir, 0));  // measured: the reference is not needed again
  if (!o.replay.quiet) {
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    print_note("calibrate: wrote {} ({} replays, {} sites, {} choice rows; {:.1f} s)\n", o.output,
               f.runs(), f.sites.size(), f.rows.size(), secs);
  }
  return 0;
}

}  // namespace ds
