// The bytes per token of docs/trace-format.md ("Bytes per token"), checked against real files:
// traces of the bundled kjv-llama (4 layers, hidden 128, K = 20) with each probe set and hidden
// dtype, written at two lengths; the file must grow by the formula's bytes per added position,
// 8 + 8 K + S D e, at most 1% + 12 bytes more (the chunk index; docs say what was measured). Also:
// `sweep --probes none` passes the probes to every run and keeps them in sweep.json.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/support/run_cli.h"
#include "tests/support/temp_dir.h"
#include "tests/support/text.h"
#include "trace/reader.h"

namespace fs = std::filesystem;
using ds::test::run_cli;

namespace {

// Rows (positions through the forward pass) of sequence 0 and the file's size.
std::pair<int64_t, double> rows_and_size(const fs::path& t) {
  const auto r = ds::trace::TraceReader::open(t);
  return {r.sequence(0).rows, static_cast<double>(fs::file_size(t))};
}

}  // namespace

TEST_CASE("trace size: bytes per token follow the documented formula", "[cli][trace]") {
  ds::test::TempDir tmp;
  const int L = 4, D = 128, K = 20;
  struct Case {
    std::string probes, dtype;
    int sites, elem;
  };
  const std::vector<Case> cases = {{"none", "f32", 0, 4},
                                   {"default", "f32", 2 + 3 * L, 4},
                                   {"default", "bf16", 2 + 3 * L, 2},
                                   {"all", "f32", 2 + 6 * L, 4},
                                   {"all", "f16", 2 + 6 * L, 2}};
  for (const auto& c : cases) {
    INFO(c.probes << " " << c.dtype);
    std::vector<std::pair<int64_t, double>> at;
    for (int n : {64, 320}) {  // BOS + n tokens: rows 64 and 320, whole 16-row chunks
      const fs::path t = tmp.path() / (c.probes + c.dtype + std::to_string(n) + ".h5");
      const auto r = run_cli("run --prompt-ids 1 -n " + std::to_string(n) + " --probes " +
                             c.probes + " --hidden-dtype " + c.dtype + " -q -o " + t.string());
      INFO(r.err);
      REQUIRE(r.exit_code == 0);
      at.push_back(rows_and_size(t));
      REQUIRE(at.back().first == n);  // no EOS cut the sequence short
    }
    const double per_row = (at[1].second - at[0].second) / double(at[1].first - at[0].first);
    const double formula = 8.0 + 8.0 * K + double(c.sites) * D * c.elem;
    UNSCOPED_INFO(c.probes << " " << c.dtype << ": measured " << per_row << " B/token, formula "
                           << formula);
    CHECK(per_row >= formula);  // every byte of the formula is stored
    CHECK(per_row <= formula * 1.01 + 12);
  }
}

TEST_CASE("sweep: --probes reaches every run and is kept in sweep.json", "[cli][sweep]") {
  ds::test::TempDir tmp;
  const fs::path prompts = tmp.path() / "p.txt", dir = tmp.path() / "sw";
  ds::test::write_prompts(prompts, 2);
  const std::string sweep = "sweep --grid 'dtype=fp32,bf16' -n 6 --probes none --prompts " +
                            prompts.string() + " -o " + dir.string() + " -q";
  auto r = run_cli(sweep);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  for (const char* name : {"dtype-fp32", "dtype-bf16"}) {
    const auto t = ds::trace::TraceReader::open(dir / (std::string(name) + ".h5"));
    CHECK(t.sequence(0).sites.empty());
    CHECK(t.sequence(0).topk == 20);
    CHECK(nlohmann::json::parse(t.config_json())["trace"]["probes"] == "none");
  }
  CHECK(nlohmann::json::parse(ds::test::slurp(dir / "sweep.json"))["probes"] == "none");
  // resuming with other probes is refused; without --probes it resumes with the recorded ones
  r = run_cli("sweep -o " + dir.string() + " --probes all");
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("--probes none") != std::string::npos);
  r = run_cli("sweep -o " + dir.string() + " -q");
  CHECK(r.exit_code == 0);
  // a trace of the same configuration with other probes is run again, not kept
  REQUIRE(run_cli("run -n 6 --prompts " + prompts.string() + " --dtype fp32 --force -q -o " +
                  (dir / "dtype-fp32.h5").string())
              .exit_code == 0);
  r = run_cli("sweep -o " + dir.string());
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("kept 1 complete trace") != std::string::npos);
  CHECK(ds::trace::TraceReader::open(dir / "dtype-fp32.h5").sequence(0).sites.empty());
}
