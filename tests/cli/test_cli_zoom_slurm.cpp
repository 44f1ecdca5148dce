// `driftscope zoom --slurm` against a real Slurm (the one-node cluster of
// tests/support/slurm_cluster.h). Two first-pass traces that part (fp32 batch 1, bf16 batch 4)
// are zoomed with --slurm --wait: the replays are one job array of two tasks, which Slurm's
// controller log shows it allocated and completed; the replayed traces (read with the trace
// reader) hold A's tokens up to each flip plus --after, the flips being where the original
// traces' tokens part; the reports are written. The same command again submits nothing.
#include <catch2/catch.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/support/run_cli.h"
#include "tests/support/slurm_cluster.h"
#include "tests/support/temp_dir.h"
#include "tests/support/text.h"
#include "tests/support/zoom_fixture.h"
#include "trace/reader.h"

namespace fs = std::filesystem;
using ds::test::has;
using ds::test::run_cli;
using ds::test::slurp;
using ds::trace::TraceReader;
using nlohmann::json;

namespace {

// The lines of `text` holding `needle`.
std::vector<std::string> lines_with(const std::string& text, const std::string& needle) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (has(line, needle)) out.push_back(line);
  }
  return out;
}

}  // namespace

TEST_CASE("zoom --slurm: replays as a job array on a real Slurm then resumed",
          "[cli][zoom][slurm]") {
  ds::test::TempDir tmp("driftscope-slurm");
  ds::test::SlurmCluster cluster(tmp.path() / "cluster");
  const auto a = ds::test::first_pass(tmp, "a", "");
  const auto b = ds::test::first_pass(tmp, "b", "--dtype bf16 --batch 4");
  const auto ta = TraceReader::open(a), tb = TraceReader::open(b);
  REQUIRE(ta.sequence_indices() == std::vector<int>{0, 1, 2, 3});
  std::map<int, int> steps;  // flipped sequence -> first flip step, from the traces' tokens
  for (int i : ta.sequence_indices()) {
    const int step = ds::test::flip_step(ta.sequence(i), tb.sequence(i));
    if (step >= 0) steps[i] = step;
  }
  REQUIRE_FALSE(steps.empty());  // fp32 and bf16 part at 2 of the 4 prompts
  const fs::path z = tmp.path() / "z";
  const int after = 2;
  const std::string zoom = "zoom " + a.string() + " " + b.string() + " -o " + z.string() +
                           " --after 2 --slurm --wait --poll 1 --partition debug --time 00:05:00";
  auto r = run_cli(zoom);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);

  // One array task per replay, each task A's or B's replay.
  const std::string script = slurp(z / "zoom.sbatch");
  CHECK(has(script, "#SBATCH --array=0,1\n"));
  const auto task_a = lines_with(script, "  0) exec "), task_b = lines_with(script, "  1) exec ");
  REQUIRE(task_a.size() == 1);
  REQUIRE(task_b.size() == 1);
  CHECK(has(task_a[0], "'-o' '" + (z / "a.h5").string() + "'"));
  CHECK(has(task_b[0], "'-o' '" + (z / "b.h5").string() + "'"));
  // Slurm ran both: its controller allocated and completed each task of the job zoom recorded,
  // and each task's output went to the log Slurm names; nothing ran locally.
  const json state = ds::test::slurp_json(z / "zoom.json");
  REQUIRE(state["slurm_jobs"].size() == 1);
  const std::string job = state["slurm_jobs"][0];
  const std::string log = cluster.controller_log();
  INFO(log);
  for (const char* task : {"_0(", "_1("}) {
    const auto done = lines_with(log, "_job_complete: JobId=" + job + task);
    CHECK(lines_with(log, "sched: Allocate JobId=" + job + task).size() == 1);
    REQUIRE_FALSE(done.empty());
    CHECK(has(done[0], "WEXITSTATUS 0"));
  }
  CHECK(fs::exists(z / "logs" / ("slurm-" + job + "_0.log")));
  CHECK(fs::exists(z / "logs" / ("slurm-" + job + "_1.log")));
  CHECK_FALSE(fs::exists(z / "logs" / "replay-a.log"));
  for (const auto& run : state["runs"]) CHECK(run["status"] == "done");

  // The replays consumed A's tokens up to each flip plus --after (B's batch of 4 holds all four
  // prompts, so the replay's sequence i is the original's i).
  const auto ra = TraceReader::open(z / "a.h5"), rb = TraceReader::open(z / "b.h5");
  CHECK(ra.complete());
  CHECK(rb.complete());
  for (const auto& [i, step] : steps) {
    INFO("seq " << i << " flips at step " << step);
    const auto sa = ta.sequence(i);
    const int replayed = std::min(sa.gen_len, step + 1 + after);
    const std::vector<int32_t> prefix(sa.tokens.begin(),
                                      sa.tokens.begin() + sa.prompt_len + replayed);
    CHECK(ra.sequence(i).tokens == prefix);
    CHECK(rb.sequence(i).tokens == prefix);
    const fs::path seq = z / ("seq-" + std::to_string(i));
    const json d = ds::test::slurp_json(seq / "diff.json");
    CHECK(d["sequences"][0]["index"] == i);
    CHECK(d["sequences"][0]["first_flip"]["step"] == step);
    for (const char* f : {"diff.txt", "attribution.json", "attribution.txt"})
      CHECK(fs::exists(seq / f));
  }
  const json flips = ds::test::slurp_json(z / "flips.json");
  CHECK(flips["flips"] == steps.size());
  CHECK(r.out == slurp(z / "flips.txt"));
  CHECK(has(slurp(z / "flips.html"), "<html"));

  // The same command again submits nothing and keeps the replays.
  const auto allocated = lines_with(log, "sched: Allocate").size();
  const auto script_time = fs::last_write_time(z / "zoom.sbatch");
  const auto a_time = fs::last_write_time(z / "a.h5"), b_time = fs::last_write_time(z / "b.h5");
  r = run_cli(zoom);
  CHECK(r.exit_code == 0);
  CHECK(has(r.err, "0 replay(s) to run"));
  CHECK_FALSE(has(r.err, "submitted"));
  CHECK(lines_with(cluster.controller_log(), "sched: Allocate").size() == allocated);
  CHECK(ds::test::slurp_json(z / "zoom.json")["slurm_jobs"] == json({job}));
  CHECK(fs::last_write_time(z / "zoom.sbatch") == script_time);
  CHECK(fs::last_write_time(z / "a.h5") == a_time);
  CHECK(fs::last_write_time(z / "b.h5") == b_time);
}
