// Replays of a trace's runs, shared by zoom and calibrate (replays.h).
#include "src/workflow/replays.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/json_error.h"
#include "src/console/output.h"
#include "src/workflow/recorded_model.h"

namespace ds {
RunConfig recorded_config(const trace::TraceReader& t) {
  RunConfig c;
  try {
    c = config_from_json(t.config_json(), {}, {"trace", "plan"});
    validate(c);
  } catch (const std::exception& e) {
    const auto* json_error = dynamic_cast<const nlohmann::json::exception*>(&e);
    throw Error(fmt::format("trace '{}' records a run configuration driftscope cannot rebuild: {}",
                            t.path().string(),
                            json_error != nullptr ? json_error_cause(*json_error) : e.what()),
                "replays need traces written by driftscope run or sweep of this version");
  }
  return c;
}

ReplayModel verified_replay_model(const trace::TraceReader& t, const std::string& hint) {
  const RecordedModel m = recorded_model(t);
  verify_recorded_model(m, hint);
  if (m.tokenizer) {
    if (const std::string why = tokenizer_changed(m); !why.empty()) throw Error(why, hint);
  }
  return {m.model.string(), m.tokenizer ? m.tokenizer->path.string() : std::string()};
}

void check_replay_options(const ReplayOptions& r, const std::string& dir) {
  if (r.jobs < 1) throw Error(fmt::format("-j {} must be >= 1", r.jobs), "-j takes N >= 1");
  check_slurm_flags(r.slurm, r.slurm_opt, r.poll_s, dir);
}

std::string forced_prompt_line(const std::vector<int32_t>& tokens, int prompt_len, int forced) {
  nlohmann::json j;
  j["ids"] = std::vector<int32_t>(tokens.begin(), tokens.begin() + prompt_len);
  j["forced"] =
      std::vector<int32_t>(tokens.begin() + prompt_len, tokens.begin() + prompt_len + forced);
  return j.dump() + "\n";
}

std::vector<std::string> replay_argv(const std::filesystem::path& config,
                                     const std::filesystem::path& prompts, const ReplayModel& m,
                                     const std::filesystem::path& trace,
                                     const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {self_exe().string(), "run",       "--config",
                                   config.string(),     "--prompts", prompts.string()};
  if (!m.model.empty()) argv.insert(argv.end(), {"--model", m.model});
  if (!m.tokenizer.empty()) argv.insert(argv.end(), {"--tokenizer", m.tokenizer});
  argv.insert(argv.end(), {"--probes", "all", "-o", trace.string(), "--force", "-q"});
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

ReplayEnd run_replays(const std::filesystem::path& dir, const std::vector<ChildRun>& runs,
                      const std::vector<size_t>& todo, const ReplayOptions& opt,
                      std::vector<std::string>& slurm_jobs,
                      const std::function<bool(size_t, bool)>& finished,
                      const std::function<void()>& submitted) {
  if (opt.slurm) {
    const std::string job = submit_slurm_array(dir, opt.what + ".sbatch", "driftscope-" + opt.what,
                                               runs, todo, opt.slurm_opt);
    slurm_jobs.push_back(job);
    submitted();
    if (!opt.quiet) {
      print_note("{}: submitted Slurm job array {} ({} replays)\n", opt.what, job, todo.size());
    }
    if (!opt.wait) return ReplayEnd::submitted;
    wait_while_active(job, opt.poll_s);
    return ReplayEnd::finished;
  }
  std::vector<ChildRun> mine;
  for (size_t i : todo) mine.push_back(runs[i]);
  const bool interrupted = run_children(dir, mine, opt.jobs, opt.quiet, opt.what,
                                        [&](size_t k, bool ok) { return finished(todo[k], ok); });
  return interrupted ? ReplayEnd::interrupted : ReplayEnd::finished;
}

}  // namespace ds
