// Run configuration from the command line and config files: every bundled config file parses
// and validates; flags win over the file; bad keys and values name themselves.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "tests/support/paths.h"
#include "tests/support/run_cli.h"
#include "tests/support/temp_dir.h"

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
