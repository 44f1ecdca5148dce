// A sweep's plan (src/workflow/sweep_plan.h): the grid as --grid spells it, its configurations and
// their names, and the grids it refuses.
#include <catch2/catch.hpp>
#include <fstream>
#include <string>
#include <vector>

#include "common/error.h"
#include "src/workflow/sweep_plan.h"
#include "tests/support/temp_dir.h"

using Catch::Contains;

namespace {

std::string refusal(const std::string& grid) {
  try {
    ds::parse_grid(grid);
  } catch (const std::exception& e) {  // ds::Error, or a value set_field refuses
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("sweep plan: a grid's configurations are named by the knobs that vary",
          "[workflow][sweep]") {
  const auto grid = ds::parse_grid("dtype=bf16,fp32 batch=1,8 tp=2");
  const auto entries = ds::expand_grid(ds::RunConfig{}, grid);
  REQUIRE(entries.size() == 4);  // the first knob varies slowest
  CHECK(entries[0].name == "dtype-bf16_batch-1");
  CHECK(entries[1].name == "dtype-bf16_batch-8");
  CHECK(entries[2].name == "dtype-fp32_batch-1");
  CHECK(entries[3].name == "dtype-fp32_batch-8");
  CHECK(entries[3].config.dtype == ds::DType::fp32);
  CHECK(entries[3].config.batch == 8);
  CHECK(entries[3].config.tp == 2);  // a knob of one value is set, not named
  CHECK(ds::expand_grid(ds::RunConfig{}, ds::parse_grid("tp=2")).front().name == "base");
}

TEST_CASE("sweep plan: --samples adds one seed per sample", "[workflow][sweep]") {
  auto grid = ds::parse_grid("dtype=bf16");
  ds::add_samples(grid, 3, 10);
  REQUIRE(grid.size() == 2);
  CHECK(grid[1].name == "seed");
  CHECK(grid[1].values == std::vector<std::string>{"10", "11", "12"});
  auto seeded = ds::parse_grid("seed=1,2");
  CHECK_THROWS_AS(ds::add_samples(seeded, 2, 0), ds::Error);
}

TEST_CASE("sweep plan: --samples never wraps a seed past 2^64 - 1", "[workflow][sweep]") {
  // --samples 2 --seed 18446744073709551615 gave the seeds 18446744073709551615 and 0 (issue 45).
  constexpr uint64_t kMax = 18446744073709551615ull;
  auto grid = ds::parse_grid("dtype=bf16");
  try {
    ds::add_samples(grid, 2, kMax);
    FAIL("not refused");
  } catch (const ds::Error& e) {
    CHECK_THAT(e.what(),
               Contains("--samples 2 from --seed 18446744073709551615 passes the largest seed"));
    CHECK_THAT(e.hint(), Contains("give --seed 18446744073709551614 at most"));
  }
  CHECK_THROWS_AS(ds::add_samples(grid, 100000, kMax - 99998), ds::Error);
  REQUIRE(grid.size() == 1);           // nothing added by a refusal
  ds::add_samples(grid, 2, kMax - 1);  // the last two seeds are fine
  CHECK(grid[1].values == std::vector<std::string>{"18446744073709551614", "18446744073709551615"});
  auto one = ds::parse_grid("dtype=bf16");
  ds::add_samples(one, 1, kMax);
  CHECK(one[1].values == std::vector<std::string>{"18446744073709551615"});
}

TEST_CASE("sweep plan: bad grids are refused, naming the knob", "[workflow][sweep]") {
  CHECK_THAT(refusal("dtype=bf16 dtype=fp32"), Contains("grid knob 'dtype' is given twice"));
  CHECK_THAT(refusal("dtype=bf16,bf16"), Contains("lists 'bf16' twice"));
  CHECK_THAT(refusal("dtype"), Contains("is not knob=v1,v2"));
  CHECK_THAT(refusal(""), Contains("the grid is empty"));
  CHECK_FALSE(refusal("no_such_knob=1").empty());
  CHECK_FALSE(refusal("batch=zero").empty());
}

// Issue 45, principle 2: a grid's values are parsed by the field they set, once, so that two
// spellings of one value are one value (split_k=4,04 gave two bit-identical configurations), and
// the configurations are named by the canonical values.
TEST_CASE("sweep plan: two spellings of one value are refused, values named canonical",
          "[workflow][sweep]") {
  CHECK_THAT(refusal("split_k=4,04"), Contains("grid knob 'split_k' lists '4' and '04' twice"));
  CHECK_THAT(refusal("attn_splits=auto,2,002"), Contains("lists '2' and '002' twice"));
  CHECK_THAT(refusal("batch=8,08"), Contains("lists '8' and '08' twice"));
  const auto grid = ds::parse_grid("batch=01,8 split-k=auto,03");
  CHECK(grid[0].values == std::vector<std::string>{"1", "8"});
  CHECK(grid[1].name == "split_k");
  CHECK(grid[1].values == std::vector<std::string>{"auto", "3"});
  const auto entries = ds::expand_grid(ds::RunConfig{}, grid);
  CHECK(entries[1].name == "batch-1_split_k-3");
  CHECK(entries[1].config.split_k == 3);
}

TEST_CASE("sweep plan: a grid file's byte order mark is skipped", "[workflow][sweep]") {
  ds::test::TempDir dir;
  std::ofstream(dir.path() / "grid.txt") << "\xEF\xBB\xBF"
                                         << "dtype=bf16,fp32 # two\nbatch=1\n";
  const auto grid = ds::parse_grid("@" + (dir.path() / "grid.txt").string());
  REQUIRE(grid.size() == 2);
  CHECK(grid[0].name == "dtype");
  CHECK(grid[0].values == std::vector<std::string>{"bf16", "fp32"});
}
