// `driftscope demo`: two contrasting runs of the bundled model, both traces and the report.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/support/run_cli.h"
#include "tests/support/temp_dir.h"
#include "trace/reader.h"

TEST_CASE("demo writes both traces and a report of where they part ways", "[cli][demo]") {
  ds::test::TempDir dir;
  const auto out = dir.path() / "demo";
  auto r = ds::test::run_cli("demo --max-new 40 --color never --width 90 --out " + out.string());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto a = ds::trace::TraceReader::open(out / "a.h5");
  auto b = ds::trace::TraceReader::open(out / "b.h5");
  CHECK(a.complete());
  CHECK(b.complete());
  const auto ca = nlohmann::json::parse(a.config_json()), cb = nlohmann::json::parse(b.config_json());
  CHECK(ca["dtype"] == "fp32");
  CHECK(cb["dtype"] == "bf16");
  CHECK(cb["batch"] == 8);
  CHECK(cb["max_new"] == 40);
  const auto report = nlohmann::json::parse(std::ifstream(out / "report.json"));
  CHECK(report["format"] == "driftscope-diff");
  CHECK(report["sequences"].size() == a.sequence_indices().size());
  // The terminal report names the differing fields and one verdict per sequence.
  CHECK(r.out.find("dtype        fp32       bf16") != std::string::npos);
  CHECK(r.out.find("sequences compared") != std::string::npos);
  // Every diverged sequence in the JSON is one whose tokens really differ.
  for (const auto& s : report["sequences"]) {
    const int i = s["index"];
    const bool differ = a.sequence(i).tokens != b.sequence(i).tokens;
    CHECK(s["first_flip"].is_null() == !differ);
  }
}

TEST_CASE("demo --dry-run shows both configurations and overrides apply", "[cli][demo]") {
  auto r = ds::test::run_cli("demo --dry-run --max-new 7 --config-b " DRIFTSCOPE_SOURCE_DIR
                             "/configs/bf16-tp4.toml");
  REQUIRE(r.exit_code == 0);
  const auto b = r.out.find("# run B");
  REQUIRE(b != std::string::npos);
  CHECK(r.out.substr(0, b).find("dtype=\"fp32\"") != std::string::npos);
  CHECK(r.out.substr(b).find("tp=4") != std::string::npos);
  CHECK(r.out.substr(b).find("max_new=7") != std::string::npos);
}
