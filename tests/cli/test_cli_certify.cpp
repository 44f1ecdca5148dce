// `run --certify` through the executable (issue 48, done-when 4): with every probe, three
// configurations (fp32, bf16 at batch 8, bf16 on 4 tensor-parallel ranks) say their tapped and
// untapped logits are identical, and a test-only tap that rounds the tensor it is handed is
// caught, with the first row that differs; show, diff and a sweep's runs carry the verdict.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/support/paths.h"
#include "tests/support/run_cli.h"
#include "tests/support/temp_dir.h"
#include "trace/reader.h"

namespace ds::test {
namespace {

std::string prompts_file(const TempDir& dir) {
  const auto p = dir.path() / "p.txt";
  std::ofstream(p) << "In the beginning\nAnd God said\nBlessed are\nAnd the LORD spake\n"
                      "Thou shalt\nIn the days\nAnd it came to pass\nHear, O Israel\nThe LORD\n";
  return p.string();
}

}  // namespace

TEST_CASE(
    "run --certify: every probe of fp32, bf16 at batch 8 and bf16 on 4 ranks changes "
    "nothing",
    "[cli][certify]") {
  TempDir dir;
  const std::string prompts = prompts_file(dir);
  for (const char* config : {"fp32", "bf16-bs8", "bf16-tp4"}) {
    INFO(config);
    const std::string out = (dir.path() / (std::string(config) + ".h5")).string();
    const CliResult r = run_cli(fmt::format(
        "run --config {}/configs/{}.toml --prompts {} --max-new 12 --probes all --certify -o {}",
        source_dir(), config, prompts, out));
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(r.err.find("certify: identical") != std::string::npos);
    const auto t = trace::TraceReader::open(out);
    const auto j = nlohmann::json::parse(t.certify_json());
    CHECK(j.at("verdict") == "identical");
    CHECK(j.at("rows").get<int>() > 9 * 12);  // every prompt row and every generated step
    CHECK(run_cli("show " + out).out.find("certify   identical") != std::string::npos);
  }
}

TEST_CASE("run --certify: a tap that rounds what it is handed is caught at its first step",
          "[cli][certify]") {
  TempDir dir;
  const std::string prompts = prompts_file(dir);
  const std::string clean = (dir.path() / "clean.h5").string();
  const std::string bad = (dir.path() / "intrusive.h5").string();
  REQUIRE(run_cli(fmt::format("run --prompts {} --max-new 6 --probes all --certify -q -o {}",
                              prompts, clean))
              .exit_code == 0);
  setenv("DRIFTSCOPE_TEST_INTRUSIVE_TAP", "L1/mlp_out", 1);
  const CliResult r = run_cli(
      fmt::format("run --prompts {} --max-new 6 --probes all --certify -o {}", prompts, bad));
  unsetenv("DRIFTSCOPE_TEST_INTRUSIVE_TAP");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("certify: DIFFERS at seq 0, step 0, position 0:") != std::string::npos);
  const auto j = nlohmann::json::parse(trace::TraceReader::open(bad).certify_json());
  CHECK(j.at("verdict") == "differs");
  CHECK(j.at("first").at("seq") == 0);
  CHECK(j.at("first").at("step") == 0);
  CHECK(j.at("first").at("ulps").get<int64_t>() > 0);
  // without --certify the same tap goes unseen: the check is what catches it
  CHECK(trace::TraceReader::open(clean).certify_json().find("identical") != std::string::npos);
  const CliResult d = run_cli(fmt::format("diff {} {} --pages 0", clean, bad));
  CHECK(d.out.find("certify   A: identical") != std::string::npos);
  CHECK(d.out.find("certify   B: DIFFERS at seq 0, step 0") != std::string::npos);
}

TEST_CASE("sweep --certify passes --certify to every run", "[cli][certify][sweep]") {
  TempDir dir;
  const std::string prompts = prompts_file(dir);
  const std::string out = (dir.path() / "sweep").string();
  const CliResult r = run_cli(fmt::format(
      "sweep --grid 'dtype=fp32,bf16' --prompts {} --max-new 4 --certify -q -o {}", prompts, out));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  for (const char* name : {"dtype-fp32.h5", "dtype-bf16.h5"}) {
    INFO(name);
    CHECK(trace::TraceReader::open(std::filesystem::path(out) / name)
              .certify_json()
              .find("\"identical\"") != std::string::npos);
  }
}

}  // namespace ds::test
