// A noise floor calibrated in one process, for the floor's statistical tests: trace A of the
// bundled kjv-llama under a configuration, replays of A teacher-forced on A's tokens with every
// probe under a numerics plan (run_traced, as `driftscope run --plan` runs them), each measured
// against A as calibrate measures its replays (diff_traces with the noise sums), the floor built
// and written and read back as calibrate does. Only the child processes are left out.
#pragma once

#include <string>
#include <vector>

#include "diff/noise_floor.h"
#include "diff/report.h"
#include "src/experiment/plan_file.h"
#include "src/experiment/prompts.h"
#include "src/experiment/run_config.h"
#include "src/workflow/loaded_model.h"
#include "tests/support/temp_dir.h"
#include "trace/floor_file.h"

namespace ds::test {

class FloorFixture {
 public:
  // A of `config` over the first `n_prompts` bundled prompts, `max_new` tokens each.
  FloorFixture(const RunConfig& config, int n_prompts, int max_new);

  const std::string& a() const { return a_; }
  const std::vector<int>& sequences() const { return seqs_; }

  // A replay of A's configuration on A's tokens under `plan`, recorded as `name`.h5.
  std::string replay(const PlanSpec& plan, const std::string& name);
  // A run of another configuration on A's tokens (bf16-bs8 against a bf16-bs1 floor).
  std::string replay_as(const RunConfig& config, const PlanSpec* plan, const std::string& name);
  // The diff of A and `b` with the noise sums.
  diff::Report diff_with_sums(const std::string& b) const;

  // The floor of `runs` replays under `perturbation` (reorder, sr, reorder+sr), seeds
  // first_seed.., written to `path` and read back.
  trace::FloorFile calibrate(int runs, const std::string& perturbation, int first_seed = 1);

  // B judged against the floor at level alpha.
  diff::NoiseReport judge(const std::string& b, const trace::FloorFile& floor,
                          double alpha = 0.01) const;

  // The plan of a benign replay of class `perturbation` and seed k.
  static PlanSpec benign(const std::string& perturbation, uint64_t k);

 private:
  TempDir dir_;
  RunConfig config_;
  LoadedModel lm_;
  std::vector<Prompt> forced_;
  std::vector<int> seqs_;
  std::string a_;
};

}  // namespace ds::test
