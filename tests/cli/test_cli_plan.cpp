// `run --plan FILE` (docs/cli.md, "Numerics plans"): a plan whose every op takes a second
// configuration runs as that configuration, a reorder seed draws other valid orders (the same
// ones again for the same seed), and a bad plan is refused before anything is written.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <fstream>

#include "tests/support/run_cli.h"
#include "tests/support/temp_dir.h"
#include "trace/reader.h"

namespace ds::test {
namespace {

std::string write_plan(const TempDir& dir, const std::string& name, const std::string& json) {
  const std::string path = (dir.path() / name).string();
  std::ofstream(path) << json;
  return path;
}

// Whether two traces of one prompt hold the same tokens, top-k logits and L2/out bits.
bool same_run(const std::string& a, const std::string& b) {
  const auto ra = trace::TraceReader::open(a), rb = trace::TraceReader::open(b);
  const auto sa = ra.sequence(0), sb = rb.sequence(0);
  if (sa.tokens != sb.tokens || sa.rows != sb.rows) return false;
  const auto ta = ra.topk(0, 0, sa.rows), tb = rb.topk(0, 0, sb.rows);
  const auto ha = ra.hidden(0, "L2/out", 0, sa.rows), hb = rb.hidden(0, "L2/out", 0, sb.rows);
  return ta.ids == tb.ids &&
         std::memcmp(ta.logits.data(), tb.logits.data(), 4 * ta.logits.size()) == 0 &&
         std::memcmp(ha.data(), hb.data(), 4 * ha.size()) == 0;
}

const char* kFlags = "--prompt-ids 1,403,407,261 -n 12 --probes L2/out";

// A trace of kFlags and `flags` written to dir/name.
std::string traced(const TempDir& dir, const std::string& name, const std::string& flags = "") {
  const std::string path = (dir.path() / name).string();
  const CliResult r = run_cli(fmt::format("run {} {} -q -o {}", kFlags, flags, path));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return path;
}

}  // namespace

TEST_CASE("run --plan: every op from a second configuration is that configuration", "[cli][plan]") {
  TempDir dir;
  const std::string plan = write_plan(
      dir, "all.json",
      R"({"format": "driftscope-plan", "version": 1, "b": {"split_k": "3"}, "b_ops": ["all"]})");
  const std::string planned = traced(dir, "planned.h5", "--plan " + plan);
  const std::string direct = traced(dir, "direct.h5", "--split-k 3");
  const std::string own = traced(dir, "own.h5");
  CHECK(same_run(planned, direct));
  CHECK_FALSE(same_run(planned, own));  // fp32: split-K 3 shows in the bits
  const auto t = trace::TraceReader::open(planned);
  CHECK(t.config_json().find("\"plan\"") != std::string::npos);
}

TEST_CASE("run --plan: a reorder seed draws other valid orders, the same for the same seed",
          "[cli][plan]") {
  TempDir dir;
  auto seeded = [&](int seed) {
    const std::string plan = write_plan(
        dir, fmt::format("r{}.json", seed),
        fmt::format(R"({{"format": "driftscope-plan", "version": 1, "reorder_seed": {}}})", seed));
    return traced(dir, fmt::format("r{}.h5", seed), "--force --plan " + plan);
  };
  const std::string own = traced(dir, "own.h5");
  const std::string a = seeded(1);
  const std::string copy = (dir.path() / "r1-first.h5").string();
  std::filesystem::copy_file(a, copy);
  const std::string again = seeded(1), b = seeded(2);
  CHECK(same_run(copy, again));
  CHECK_FALSE(same_run(again, own));
  CHECK_FALSE(same_run(again, b));
}

TEST_CASE("run --plan: a bad plan is refused before anything is written",
          "[cli][plan][bad-input]") {
  TempDir dir;
  const std::string out = (dir.path() / "t.h5").string();
  const std::pair<const char*, const char*> cases[] = {
      {"{", "not a readable plan"},
      {R"({"format": "other"})", "not a driftscope-plan file"},
      {R"({"format": "driftscope-plan", "version": 2})", "version 2"},
      {R"({"format": "driftscope-plan", "version": 1, "b_ops": ["L0/q_proj"]})", "lacks"},
      {R"({"format": "driftscope-plan", "version": 1, "b": {}, "b_ops": ["L9/q_proj"]})",
       "does not have"},
      {R"({"format": "driftscope-plan", "version": 1, "b": {"dtype": "fp7"}})", "fp7"},
      {R"({"format": "driftscope-plan", "version": 1, "shapes": []})", "unknown key"},
      {R"({"format": "driftscope-plan", "version": 1, "a_shapes": [[2, 3]]})", "sequences"},
  };
  int i = 0;
  for (const auto& [json, needle] : cases) {
    const std::string plan = write_plan(dir, fmt::format("bad{}.json", i++), json);
    const CliResult r = run_cli(fmt::format("run {} -o {} --plan {}", kFlags, out, plan));
    INFO(json);
    check_input_error(r, needle);
    CHECK_FALSE(std::filesystem::exists(out));
  }
}

}  // namespace ds::test
