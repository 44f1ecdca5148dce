// `driftscope explain --slurm` against a real Slurm (the one-node cluster of
// tests/support/slurm_cluster.h). B plants one cause at one op (test-only) in A's configuration:
// explain --slurm --wait runs the zoom's replays, then each round of trials (the knob level's,
// then the op level's), as job arrays that Slurm's controller log shows it completed, none of it
// locally; the report finds the planted cause. The same command again submits nothing.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/support/run_cli.h"
#include "tests/support/slurm_cluster.h"
#include "tests/support/temp_dir.h"
#include "tests/support/text.h"
#include "tests/support/zoom_fixture.h"

namespace fs = std::filesystem;

TEST_CASE("explain --slurm: the replays and each round of trials as job arrays, then resumed",
          "[cli][explain][slurm]") {
  ds::test::TempDir tmp("driftscope-slurm");
  ds::test::SlurmCluster cluster(tmp.path() / "cluster");
  const fs::path prompts = ds::test::single_token_prompts(tmp);
  const std::string run = "run -q -n 32 --probes none --prompts " + prompts.string() + " -o ";
  const fs::path a = tmp.path() / "a.h5", b = tmp.path() / "b.h5";
  REQUIRE(ds::test::run_cli(run + a.string()).exit_code == 0);
  REQUIRE(ds::test::run_cli(run + b.string() + " --test-perturb L2/mlp_add:+ulp").exit_code == 0);
  const fs::path x = tmp.path() / "x";
  const std::string explain = "explain " + a.string() + " " + b.string() + " -o " + x.string() +
                              " --slurm --wait --poll 1 --partition debug --time 00:05:00";
  auto r = ds::test::run_cli(explain);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json report = ds::test::slurp_json(x / "explain.json");
  REQUIRE(report["sequences"].size() >= 1);
  for (const auto& f : report["sequences"]) {
    CHECK(f["knob_sets"] == nlohmann::json::parse(R"([["test_perturb"]])"));
    CHECK(f["ops"]["set"] == nlohmann::json::parse(R"(["L2/mlp_add"])"));
  }
  // three job arrays (the replays, the knob trial, the op trials), each completed by Slurm
  const auto jobs = ds::test::slurp_json(x / "trials" / "slurm.json")["slurm_jobs"];
  CHECK(jobs.size() == 2);
  const std::string log = cluster.controller_log();
  INFO(log);
  for (const auto& job : jobs) {
    CHECK(ds::test::has(log, "_job_complete: JobId=" + job.get<std::string>() + "_0("));
  }
  CHECK(fs::exists(x / "explain.sbatch"));
  CHECK_FALSE(fs::exists(x / "logs" / "trial-knobs-1.log"));  // nothing ran here
  // again: nothing is submitted, the same report
  const std::string before = ds::test::slurp(x / "explain.txt");
  r = ds::test::run_cli(explain);
  CHECK(r.exit_code == 0);
  CHECK_FALSE(ds::test::has(r.err, "submitted"));
  CHECK(ds::test::slurp_json(x / "trials" / "slurm.json")["slurm_jobs"] == jobs);
  CHECK(r.out == before);
}
