// `driftscope sweep --slurm` against a real Slurm: a one-node cluster (munged, slurmctld, slurmd
// from Debian's slurm-wlm and munge, scripts/setup_slurm.sh) started in a temp dir by
// tests/support/slurm_cluster.h and stopped at the end, also on failure. A 4-configuration sweep
// runs as a job array and every trace is bit-identical to `driftscope run` of its configuration;
// a cancelled task shows as missing (sweep --wait, stats --require-all: exit 1) and resubmitting
// runs that task alone.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/support/run_cli.h"
#include "tests/support/slurm_cluster.h"
#include "tests/support/temp_dir.h"
#include "tests/support/text.h"
#include "tests/support/trace_digest.h"

namespace fs = std::filesystem;
using ds::test::run_cli;
using ds::test::SlurmCluster;
using nlohmann::json;

using ds::test::has;
using ds::test::slurp;

TEST_CASE("sweep --slurm: a job array on a real Slurm, cancelled task, resubmission",
          "[cli][sweep][slurm]") {
  ds::test::TempDir tmp("driftscope-slurm");
  SlurmCluster cluster(tmp.path() / "cluster");
  const fs::path prompts = tmp.path() / "p.txt";
  ds::test::write_prompts(prompts);
  const std::string grid =
      " --grid 'dtype=fp32,bf16 batch=1,2' -n 12 --prompts " + prompts.string();
  const std::vector<std::pair<std::string, std::string>> configs = {
      {"dtype-fp32_batch-1", "--dtype fp32 --batch 1"},
      {"dtype-fp32_batch-2", "--dtype fp32 --batch 2"},
      {"dtype-bf16_batch-1", "--dtype bf16 --batch 1"},
      {"dtype-bf16_batch-2", "--dtype bf16 --batch 2"}};
  std::map<std::string, std::string> local;
  for (const auto& [name, flags] : configs) {
    const fs::path ref = tmp.path() / (name + "-local.h5");
    REQUIRE(
        run_cli("run -q " + flags + " -n 12 --prompts " + prompts.string() + " -o " + ref.string())
            .exit_code == 0);
    local[name] = ds::test::trace_digest(ref);
  }

  // 1. The whole grid as one job array; --wait returns when it has left the queue.
  const fs::path dir = tmp.path() / "sw";
  auto r = run_cli("sweep --slurm --wait --poll 1 --partition debug --time 00:05:00" + grid +
                   " -o " + dir.string());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(has(slurp(dir / "sweep.sbatch"), "#SBATCH --array=0,1,2,3\n"));
  for (const auto& [name, flags] : configs) {
    INFO(name);
    CHECK(ds::test::trace_digest(dir / (name + ".h5")) == local[name]);
  }
  json state = json::parse(slurp(dir / "sweep.json"));
  CHECK(state["slurm_jobs"].size() == 1);
  for (const auto& c : state["configurations"]) CHECK(c["status"] == "done");

  // 2. A held array with task 2 cancelled before it runs: the other three complete.
  const fs::path dir2 = tmp.path() / "sw2";
  ::setenv("SBATCH_HOLD", "1", 1);
  r = run_cli("sweep --slurm" + grid + " -o " + dir2.string());
  ::unsetenv("SBATCH_HOLD");
  REQUIRE(r.exit_code == 0);
  state = json::parse(slurp(dir2 / "sweep.json"));
  REQUIRE(state["slurm_jobs"].size() == 1);
  const std::string job = state["slurm_jobs"][0];
  std::string out;
  REQUIRE(ds::test::shell("scancel " + job + "_2", out) == 0);
  REQUIRE(ds::test::shell("scontrol release " + job, out) == 0);
  r = run_cli("sweep --wait --poll 1 -o " + dir2.string());
  CHECK(r.exit_code == 1);
  CHECK(has(r.err, "1 of 4 configurations missing: dtype-bf16_batch-1"));
  r = run_cli("stats --require-all " + dir2.string());
  CHECK(r.exit_code == 1);
  CHECK(has(r.out, "missing (1): dtype-bf16_batch-1"));
  const auto kept_time = fs::last_write_time(dir2 / "dtype-fp32_batch-1.h5");

  // 3. Resubmitting runs the missing configuration alone.
  r = run_cli("sweep --slurm --wait --poll 1 -o " + dir2.string());
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(has(slurp(dir2 / "sweep.sbatch"), "#SBATCH --array=2\n"));
  CHECK(fs::last_write_time(dir2 / "dtype-fp32_batch-1.h5") == kept_time);
  for (const auto& [name, flags] : configs) {
    INFO(name);
    CHECK(ds::test::trace_digest(dir2 / (name + ".h5")) == local[name]);
  }
  CHECK(run_cli("stats --require-all " + dir2.string()).exit_code == 0);
}
