// A noise floor calibrated in one process (floor_fixture.h).
#include "tests/support/floor_fixture.h"

#include <fmt/format.h>

#include <filesystem>

#include "diff/diff.h"
#include "src/experiment/attribution_run.h"
#include "src/workflow/calibrate_measure.h"
#include "src/workflow/traced_command.h"
#include "tests/support/paths.h"
#include "trace/reader.h"

namespace ds::test {

FloorFixture::FloorFixture(const RunConfig& config, int n_prompts, int max_new)
    : dir_("driftscope-floor"), config_(config) {
  config_.max_new = max_new;
  ModelArgs args;
  args.model = model_bin();
  lm_ = load_model_and_prompt(args, /*need_tokenizer=*/true, /*want_prompt=*/false);
  std::vector<Prompt> ps =
      read_prompts_file(test::prompts(), lm_.tokenizer.get(), true, lm_.model.config.max_seq_len);
  ps.resize(static_cast<size_t>(n_prompts));
  apply_add_bos(ps, config_.add_bos, lm_.bos_id());
  a_ = (dir_.path() / "a.h5").string();
  trace::WriterOptions w;
  w.path = a_;
  run_traced_command("test", config_, "all", w, lm_, ps);
  forced_ = forced_prompts(trace::TraceReader::open(a_));
  for (int i = 0; i < n_prompts; ++i) seqs_.push_back(i);
}

std::string FloorFixture::replay_as(const RunConfig& config, const PlanSpec* plan,
                                    const std::string& name) {
  trace::WriterOptions w;
  w.path = dir_.path() / (name + ".h5");
  w.force = true;
  std::optional<PlanSpec> p;
  if (plan) p = *plan;
  run_traced_command("test", config, "all", w, lm_, forced_, a_, "auto", nullptr, p);
  return w.path.string();
}

std::string FloorFixture::replay(const PlanSpec& plan, const std::string& name) {
  return replay_as(config_, &plan, name);
}

diff::Report FloorFixture::diff_with_sums(const std::string& b) const {
  diff::DiffOptions opt;
  opt.noise_sums = true;
  return diff::diff_traces(trace::TraceReader::open(a_), trace::TraceReader::open(b), opt);
}

PlanSpec FloorFixture::benign(const std::string& perturbation, uint64_t k) {
  PlanSpec p;
  if (perturbation != "sr") p.reorder_seed = k;
  if (perturbation != "reorder") p.sr_seed = k;
  return p;
}

trace::FloorFile FloorFixture::calibrate(int runs, const std::string& perturbation,
                                         int first_seed) {
  std::vector<diff::ReplayMeasure> measures;
  const std::vector<int32_t> seqs(seqs_.begin(), seqs_.end());
  for (int k = first_seed; k < first_seed + runs; ++k) {
    const std::string r = replay(benign(perturbation, static_cast<uint64_t>(k)), "replay");
    measures.push_back(diff::replay_measure(diff_with_sums(r), seqs, k));
    std::filesystem::remove(r);
  }
  const auto a = trace::TraceReader::open(a_);
  const auto floor = dir_.path() / "floor.h5";
  trace::write_floor(floor, diff::build_floor(floor_source(a, seqs_, perturbation), measures),
                     true);
  trace::FloorFile f = trace::read_floor(floor);
  diff::check_floor(f, floor.string(), a);
  return f;
}

diff::NoiseReport FloorFixture::judge(const std::string& b, const trace::FloorFile& floor,
                                      double alpha) const {
  return diff::evaluate_floor(diff_with_sums(b), floor, "floor.h5", alpha);
}

}  // namespace ds::test
