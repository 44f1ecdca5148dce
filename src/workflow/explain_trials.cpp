// explain's trials: running them (here or on Slurm), and reading a flip row's outcome.
#include "src/workflow/explain_trials.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/output_file.h"
#include "src/console/output.h"
#include "src/experiment/sampler.h"

namespace ds {
namespace {

std::filesystem::path slurm_state(const std::filesystem::path& dir) {
  return dir / "trials" / "slurm.json";
}

std::vector<std::string> read_jobs(const std::filesystem::path& dir) {
  try {
    std::ifstream in(slurm_state(dir));
    if (!in) return {};
    return nlohmann::json::parse(in).at("slurm_jobs").get<std::vector<std::string>>();
  } catch (const std::exception&) {
    return {};  // unreadable: no job of ours to wait for
  }
}

void write_jobs(const std::filesystem::path& dir, const std::vector<std::string>& jobs) {
  std::filesystem::create_directories(dir / "trials");
  write_file_or_fail(slurm_state(dir), nlohmann::json{{"slurm_jobs", jobs}}.dump() + "\n",
                     "check that -o names a writable folder and the disk is not full");
}

std::filesystem::path log_of(const std::filesystem::path& dir, const Trial& t) {
  return dir / "logs" / ("trial-" + t.name + ".log");
}

// The last "driftscope: ..." line of a log (what the run said when it stopped), else its last line.
std::string last_words(const std::filesystem::path& log) {
  std::ifstream in(log);
  std::string line, said, last;
  while (std::getline(in, line)) {
    if (line.rfind("driftscope:", 0) == 0) said = line;
    if (!line.empty()) last = line;
  }
  return !said.empty() ? said : last.empty() ? "no output" : last;
}

void remove_trace(const Trial& t) {
  std::error_code ec;
  std::filesystem::remove(t.trace, ec);  // nothing half-written stays
}

[[noreturn]] void failed(const TrialRunner& r, const Trial& t) {
  remove_trace(t);
  throw Error(fmt::format("explain trial {} failed: {}", t.name, last_words(log_of(r.dir, t))),
              fmt::format("its log is {}; the same command resumes (the trials done are kept)",
                          log_of(r.dir, t).string()));
}

}  // namespace

bool trial_done(const Trial& t) {
  if (!std::filesystem::exists(t.trace)) return false;
  try {
    const auto tr = trace::TraceReader::open(t.trace);
    if (!tr.complete()) return false;
    if (t.recorder) return recorder_replay_done(t.trace, *t.recorder);
    auto recorded = nlohmann::json::parse(tr.config_json());
    recorded.erase("trace");
    return recorded == nlohmann::json::parse(t.config_json);
  } catch (const std::exception&) {
    return false;  // unreadable (killed mid-write): run it again
  }
}

std::optional<int> run_trials(TrialRunner& r, const std::vector<Trial>& round) {
  std::vector<std::string> jobs = read_jobs(r.dir);
  if (!jobs.empty()) {
    settle_slurm_jobs(jobs, "explain", r.wait, true, r.poll_s, r.quiet,
                      "wait for it (the same command with --wait), then run explain again");
  }
  std::vector<Trial> todo;
  for (const Trial& t : round) {
    if (!trial_done(t)) todo.push_back(t);
  }
  if (todo.empty()) return std::nullopt;
  std::vector<ChildRun> runs;
  for (const Trial& t : todo) runs.push_back({"trial-" + t.name, t.argv, t.sets_threads});
  const auto start = std::chrono::steady_clock::now();
  if (r.slurm) {
    std::vector<size_t> all(runs.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = i;
    const std::string job =
        submit_slurm_array(r.dir, "explain.sbatch", "driftscope-explain", runs, all, r.slurm_opt);
    jobs.push_back(job);
    write_jobs(r.dir, jobs);
    if (!r.quiet)
      print_note("explain: submitted Slurm job array {} ({} trials)\n", job, all.size());
    if (!r.wait) return 0;
    wait_while_active(job, r.poll_s);
    std::optional<size_t> bad;
    for (size_t i = 0; i < todo.size(); ++i) {
      if (trial_done(todo[i])) continue;
      remove_trace(todo[i]);
      if (!bad) bad = i;
    }
    if (bad) failed(r, todo[*bad]);
  } else {
    std::optional<size_t> bad;
    const bool interrupted =
        run_children(r.dir, runs, r.jobs, /*quiet=*/true, "explain", [&](size_t i, bool ok) {
          const bool done = ok && trial_done(todo[i]);
          if (!done) {
            remove_trace(todo[i]);
            if (!bad) bad = i;
          }
          return done;
        });
    if (interrupted) {
      print_note("explain: interrupted; resume with the same command\n");
      return 130;
    }
    if (bad) failed(r, todo[*bad]);
  }
  r.runs += static_cast<int>(todo.size());
  r.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return std::nullopt;
}

diff::TrialOutcome flip_outcome(const trace::TraceReader& t, const FlipRow& f) {
  diff::TrialOutcome o;
  o.margin = NAN;
  const trace::TopKRows top = t.topk(f.replay_index, f.row, 1);
  if (top.k < 1 || top.ids.empty()) {
    o.why = fmt::format("the trial's trace holds no logits at row {}", f.row);
    return o;
  }
  const auto config = nlohmann::json::parse(t.config_json(), nullptr, false);
  SamplingParams choice;
  if (config.is_object()) {
    choice.highest_id_ties = config.value("tie_break", "lowest_id") == "highest_id";
    if (config.contains("repetition_penalty") && config["repetition_penalty"].is_number()) {
      choice.repetition_penalty = config["repetition_penalty"].get<double>();
    }
  }
  // the row as far as the trace knows it: its top-K, every other logit below the K-th
  int32_t top_id = 0;
  for (int32_t id : top.ids) top_id = std::max(top_id, id);
  for (int32_t id : f.history) top_id = std::max(top_id, id);
  top_id = std::max({top_id, f.token_a, f.token_b});
  std::vector<double> row(static_cast<size_t>(top_id) + 1,
                          -std::numeric_limits<double>::infinity());
  for (int k = 0; k < top.k; ++k) row[top.ids[k]] = top.logits[k];
  const int32_t chosen = sample_next(row, choice, 0, 0, f.history);
  auto penalised = [&](int32_t id) {
    double l = row[id];
    if (choice.repetition_penalty != 1.0 &&
        std::find(f.history.begin(), f.history.end(), id) != f.history.end()) {
      l = l > 0 ? l / choice.repetition_penalty : l * choice.repetition_penalty;
    }
    return l;
  };
  const double kth = top.logits[top.k - 1];
  // a logit outside the recorded top-K is at most the K-th: when the penalty took the chosen one
  // below the K-th, an unrecorded one may be above it
  if (choice.repetition_penalty != 1.0 && penalised(chosen) < kth) {
    o.why = fmt::format("the choice under the repetition penalty lies outside the top-{}", top.k);
    return o;
  }
  const double la = penalised(f.token_a), lb = penalised(f.token_b);
  if (std::isfinite(la) && std::isfinite(lb)) o.margin = lb - la;
  if (chosen == f.token_b) {
    o.verdict = diff::TrialVerdict::b_wins;
  } else if (chosen == f.token_a) {
    o.verdict = diff::TrialVerdict::a_wins;
  } else {
    o.why = fmt::format("a third token ({}) wins", chosen);
  }
  return o;
}

bool same_logits(const trace::TraceReader& a, int ia, const trace::TraceReader& b, int ib,
                 int64_t last) {
  const trace::TopKRows ta = a.topk(ia, 0, last + 1), tb = b.topk(ib, 0, last + 1);
  const std::vector<float> la = a.lse(ia, 0, last + 1), lb = b.lse(ib, 0, last + 1);
  auto bits = [](const std::vector<float>& x, const std::vector<float>& y) {
    return x.size() == y.size() && std::equal(x.begin(), x.end(), y.begin(), [](float p, float q) {
             return std::memcmp(&p, &q, sizeof p) == 0;
           });
  };
  return ta.k == tb.k && ta.ids == tb.ids && bits(ta.logits, tb.logits) && bits(la, lb);
}

}  // namespace ds
