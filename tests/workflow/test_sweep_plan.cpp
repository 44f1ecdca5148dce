// A sweep's plan (src/workflow/sweep_plan.h): the grid as --grid spells it, its configurations and
// their names, and the grids it refuses.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "common/error.h"
#include "src/workflow/sweep_plan.h"

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
  CHECK(entries[3].config.dtype == "fp32");
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

TEST_CASE("sweep plan: bad grids are refused, naming the knob", "[workflow][sweep]") {
  CHECK_THAT(refusal("dtype=bf16 dtype=fp32"), Contains("grid knob 'dtype' is given twice"));
  CHECK_THAT(refusal("dtype=bf16,bf16"), Contains("lists 'bf16' twice"));
  CHECK_THAT(refusal("dtype"), Contains("is not knob=v1,v2"));
  CHECK_THAT(refusal(""), Contains("the grid is empty"));
  CHECK_FALSE(refusal("no_such_knob=1").empty());
  CHECK_FALSE(refusal("batch=zero").empty());
}
