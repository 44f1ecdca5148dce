// Teacher forcing (run --force-tokens A.h5): run B consumes A's tokens while recording its own
// logits, so every position stays comparable and the rows where B would have chosen otherwise
// are counted by the diff.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/support/run_cli.h"
#include "tests/support/temp_dir.h"
#include "trace/reader.h"

using ds::test::run_cli;

TEST_CASE("run --force-tokens consumes the reference's tokens and keeps every row comparable",
          "[cli][trace][force]") {
  ds::test::TempDir dir;
  const auto a = dir.path() / "a.h5", b = dir.path() / "b.h5", free = dir.path() / "free.h5";
  const std::string prompts = DRIFTSCOPE_SOURCE_DIR "/models/kjv-llama/prompts.txt";
  REQUIRE(run_cli("run -q -n 80 --prompts " + prompts + " -o " + a.string()).exit_code == 0);
  REQUIRE(
      run_cli("run -q --dtype bf16 --force-tokens " + a.string() + " -o " + b.string()).exit_code ==
      0);
  REQUIRE(run_cli("run -q -n 80 --dtype bf16 --prompts " + prompts + " -o " + free.string())
              .exit_code == 0);
  auto ra = ds::trace::TraceReader::open(a), rb = ds::trace::TraceReader::open(b);
  int64_t mismatches = 0;
  for (int i : ra.sequence_indices()) {
    const auto sa = ra.sequence(i), sb = rb.sequence(i);
    REQUIRE(sb.tokens == sa.tokens);
    REQUIRE(sb.rows == sa.rows);
    CHECK((sb.stop_reason == "forced" || sb.stop_reason == "eos"));
    const auto ta = ra.topk(i, 0, sa.rows), tb = rb.topk(i, 0, sb.rows);
    for (int64_t r = 0; r < sa.rows; ++r) mismatches += ta.ids[r * ta.k] != tb.ids[r * tb.k];
  }
  CHECK(nlohmann::json::parse(rb.config_json())["trace"]["force_tokens"] == a.string());
  auto forced =
      nlohmann::json::parse(run_cli("diff --json - " + a.string() + " " + b.string()).out);
  auto freerun =
      nlohmann::json::parse(run_cli("diff --json - " + a.string() + " " + free.string()).out);
  CHECK(forced["summary"]["diverged"] == 0);
  CHECK(freerun["summary"]["diverged"] > 0);  // bf16 running free does flip
  int64_t diff_mismatches = 0, forced_rows = 0, free_rows = 0;
  for (size_t k = 0; k < forced["sequences"].size(); ++k) {
    diff_mismatches += forced["sequences"][k]["logits"]["top1_mismatch"].get<int64_t>();
    forced_rows += forced["sequences"][k]["logits"]["positions"].get<int64_t>();
    free_rows += freerun["sequences"][k]["logits"]["positions"].get<int64_t>();
  }
  CHECK(diff_mismatches == mismatches);
  CHECK(mismatches > 0);
  CHECK(forced_rows > free_rows);  // past the flips, forcing keeps comparing
  auto bad = run_cli("run --force-tokens " + a.string() + " --prompt x -o " +
                     (dir.path() / "c.h5").string());
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("--force-tokens takes the prompts from its trace") != std::string::npos);
}
