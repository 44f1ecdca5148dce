// Run configuration from the command line and config files: every bundled config file parses
// and validates; flags win over the file; bad keys and values name themselves.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>

#include "tests/support/paths.h"
#include "tests/support/run_cli.h"
#include "tests/support/temp_dir.h"
#include "tests/support/text.h"

using ds::test::run_cli;

TEST_CASE("every configs/*.toml is accepted and round-trips through --dry-run", "[cli][config]") {
  ds::test::TempDir dir;
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(ds::test::source_dir() + "/configs")) {
    if (e.path().extension() != ".toml") continue;  // e.g. sweep grid files (*.txt)
    INFO(e.path());
    auto r = run_cli("run --dry-run --config " + e.path().string());
    REQUIRE(r.exit_code == 0);
    // Every key of the file appears with its value in the resolved configuration.
    std::ifstream in(e.path());
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      std::string key = line.substr(0, line.find('='));
      std::string value = line.substr(line.find('=') + 1);
      key.erase(key.find_last_not_of(' ') + 1);
      value.erase(0, value.find_first_not_of(' '));
      CHECK(r.out.find(key + "=" + value + "\n") != std::string::npos);
    }
    // What --dry-run prints is itself a valid config file.
    std::ofstream(dir.path() / "resolved.toml") << r.out;
    auto again = run_cli("run --dry-run --config " + (dir.path() / "resolved.toml").string());
    CHECK(again.exit_code == 0);
    CHECK(again.out == r.out);
    ++n;
  }
  CHECK(n >= 6);
}

TEST_CASE("command-line flags win over the config file", "[cli][config]") {
  auto r = run_cli("generate --dry-run --config " + ds::test::source_dir() +
                   "/configs/bf16-bs8.toml --batch 2 --dtype fp16");
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("dtype=\"fp16\"") != std::string::npos);
  CHECK(r.out.find("batch=2\n") != std::string::npos);
  CHECK(r.out.find("gemm_policy=\"heuristic\"") != std::string::npos);
}

TEST_CASE("bad config keys and values: clear error naming them, exit 2", "[cli][config][errors]") {
  ds::test::TempDir dir;
  std::ofstream(dir.path() / "a.toml") << "dtyp = \"bf16\"\n";
  auto a = run_cli("run --dry-run --config " + (dir.path() / "a.toml").string());
  CHECK(a.exit_code == 2);
  CHECK(a.err.find("unknown key 'dtyp'") != std::string::npos);
  std::ofstream(dir.path() / "b.toml") << "batch = \"many\"\n";
  auto b = run_cli("run --dry-run --config " + (dir.path() / "b.toml").string());
  CHECK(b.exit_code == 2);
  CHECK(b.err.find("'batch'") != std::string::npos);
  auto c = run_cli("run --dry-run --tp 3 -o x.h5");
  CHECK(c.exit_code == 0);  // tp 3 is only checked against a model
  auto d = run_cli("run --tp 3 -o " + (dir.path() / "x.h5").string());
  CHECK(d.exit_code == 2);
  CHECK(d.err.find("invalid tp 3") != std::string::npos);
  auto e = run_cli("generate --prefill-chunk -4");
  CHECK(e.exit_code == 2);
  CHECK(e.err.find("prefill_chunk") != std::string::npos);
  CHECK(run_cli("run --config /nonexistent.toml -o x.h5").exit_code == 2);
}

// Issue 45, principle 2: one typed schema for configuration. A config file holds run-configuration
// fields only: a command option, a table or a dotted key is refused with one `driftscope:` line
// and a hint, exit 2, before anything is touched (a `force = true` replaced the trace, and
// `[engine] dtype = "bf16"` set dtype, while the file read as CLI11 read it).
TEST_CASE("config files: command options, tables and dotted keys are refused, nothing touched",
          "[cli][config][bad-input]") {
  ds::test::TempDir dir;
  const std::string prompts = (dir.path() / "p.txt").string(),
                    trace = (dir.path() / "t.h5").string();
  ds::test::write_prompts(prompts, 1);
  std::ofstream(trace) << "keep me\n";
  const std::string toml = (dir.path() / "c.toml").string();
  const std::string run = "run --config " + toml + " --prompts " + prompts + " -n 2 -o " + trace;
  const std::pair<const char*, const char*> options[] = {
      {"force = true", "--force"},
      {"output = \"x.h5\"", "--output"},
      {"model = \"m\"", "--model"},
      {"prompts = \"p.txt\"", "--prompts"},
      {"probes = \"all\"", "--probes"},
      {"help = true", "--help"},
      {"threads = 2", "--threads"},
      {"compression = \"deflate\"", "--compression"},
      {"dry-run = true", "--dry-run"},
      {"config = \"other.toml\"", "--config"},
      {"hidden_dtype = \"bf16\"", "--hidden-dtype"}};
  for (const auto& [line, flag] : options) {
    INFO(line);
    std::ofstream(toml) << line << "\n";
    const auto r = run_cli(run);
    const std::string key = std::string(line).substr(0, std::string(line).find(' '));
    ds::test::check_input_error(r, toml + ": unknown key '" + key + "'");
    CHECK(r.err.find(std::string("give ") + flag + " on the command line") != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 2);  // one driftscope: line, one hint
    CHECK(ds::test::slurp(trace) == "keep me\n");
  }
  const std::pair<const char*, const char*> nested[] = {
      {"[engine]\ndtype = \"bf16\"\n", ":1: '[engine]' opens a table"},
      {"batch = 8\n[[runs]]\n", ":2: '[[runs]]' opens a table"},
      {"engine.dtype = \"bf16\"\n", ":1: 'engine.dtype = \"bf16\"' is a dotted key"},
      {"\"engine\".\"dtype\" = \"bf16\"\n", "is a dotted key"},
      {"dtype = { name = \"bf16\" }\n", "a table is not a run-configuration value"},
  };
  for (const auto& [text, message] : nested) {
    INFO(text);
    std::ofstream(toml) << text;
    auto r = run_cli(run);
    ds::test::check_input_error(r, message);
    CHECK(ds::test::slurp(trace) == "keep me\n");
    r = run_cli("run --dry-run --config " + toml);
    ds::test::check_input_error(r, message);
    CHECK(r.out.empty());
  }
}

// A config file is TOML: a byte order mark is skipped (as in prompts files: "unknown key 'dtype'"
// before), 1_000 is a thousand, and values are made canonical, so that what --dry-run prints
// reads back to itself.
TEST_CASE("config files: a byte order mark, TOML numbers and canonical values",
          "[cli][config][bad-input]") {
  ds::test::TempDir dir;
  const auto toml = dir.path() / "bom.toml";
  std::ofstream(toml) << "\xEF\xBB\xBF"
                      << "dtype = \"bf16\"\nmax_new = 1_000\nsplit_k = \"04\"\n"
                      << "kernel = \"attention=tiled\"\n";
  const auto r = run_cli("run --dry-run --config " + toml.string());
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("dtype=\"bf16\"\n") != std::string::npos);
  CHECK(r.out.find("max_new=1000\n") != std::string::npos);
  CHECK(r.out.find("split_k=\"4\"\n") != std::string::npos);
  CHECK(r.out.find("kernel=\"gemm=cublas,attention=tiled\"\n") != std::string::npos);
  std::ofstream(dir.path() / "again.toml") << r.out;
  const auto again = run_cli("run --dry-run --config " + (dir.path() / "again.toml").string());
  CHECK(again.exit_code == 0);
  CHECK(again.out == r.out);
}

// A flag's value is parsed once into its type: 4 and 04 are one value (010 was octal 8), a value
// with a newline is refused rather than written into a config file that does not read back, and
// two spellings of one kernel list are one configuration.
TEST_CASE("flags: values are parsed once, refused or canonical, and --dry-run round-trips",
          "[cli][config][bad-input]") {
  ds::test::TempDir dir;
  auto r = run_cli("run --dry-run --split-k '\n4'");
  ds::test::check_input_error(r, "--split-k: invalid split_k '\\n4'");
  CHECK(r.out.empty());
  r = run_cli("run --dry-run --batch 010 --split-k 04 --seed 007");
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("batch=10\n") != std::string::npos);
  CHECK(r.out.find("split_k=\"4\"\n") != std::string::npos);
  CHECK(r.out.find("seed=7\n") != std::string::npos);
  CHECK(run_cli("run --dry-run --kernel attention=tiled").out ==
        run_cli("run --dry-run --kernel attention=tiled,gemm=cublas").out);
  std::ofstream(dir.path() / "c.toml") << r.out;
  const auto again = run_cli("run --dry-run --config " + (dir.path() / "c.toml").string());
  CHECK(again.exit_code == 0);
  CHECK(again.out == r.out);
}

// The grid is read by the same table: a knob that names an option of sweep is refused as that
// option, before anything is written.
TEST_CASE("sweep grids: a command option as a knob is named as that option",
          "[cli][config][sweep][bad-input]") {
  ds::test::TempDir dir;
  const std::string prompts = (dir.path() / "p.txt").string();
  ds::test::write_prompts(prompts, 1);
  const std::string tail = " --prompts " + prompts + " -o " + (dir.path() / "sw").string();
  auto r = run_cli("sweep --grid 'dtype=bf16,fp32 jobs=1,2'" + tail);
  ds::test::check_input_error(
      r, "grid knob 'jobs' is an option of the command line, not a run-configuration field");
  CHECK(r.err.find("give --jobs on the command line") != std::string::npos);
  r = run_cli("sweep --grid 'probes=all,none'" + tail);
  ds::test::check_input_error(r, "grid knob 'probes' is an option of the command line");
  CHECK(!std::filesystem::exists(dir.path() / "sw"));
  ds::test::check_input_error(run_cli("sweep --grid 'colour=red'" + tail),
                              "unknown run-config field 'colour'");
}
