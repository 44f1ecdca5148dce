// Flag and input values outside what driftscope can honour: each is refused up front with exit 2,
// "driftscope: <what>" and a hint, before any output file exists, rather than clamped, wrapped
// or silently replaced by something the user did not ask for.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/support/run_cli.h"
#include "tests/support/temp_dir.h"
#include "tests/support/text.h"

namespace fs = std::filesystem;
using ds::test::check_input_error;
using ds::test::has;
using ds::test::run_cli;

TEST_CASE("seeds beyond 2^64 - 1 are refused from the flag and the config file",
          "[cli][bad-input]") {
  const std::string big = "99999999999999999999999";
  const std::string outside = "seed " + big + " is outside 0..18446744073709551615";
  auto r = run_cli("run --dry-run --seed " + big);
  check_input_error(r, outside);
  CHECK_FALSE(has(r.out, "seed=18446744073709551615"));
  check_input_error(run_cli("synth --shape tiny --seed " + big + " -o /nonexistent/x"), outside);
  ds::test::TempDir dir;
  std::ofstream(dir.path() / "s.toml") << "seed = " << big << "\n";
  check_input_error(run_cli("run --dry-run --config " + (dir.path() / "s.toml").string()), outside);
  // the largest seed itself is fine
  r = run_cli("run --dry-run --seed 18446744073709551615");
  CHECK(r.exit_code == 0);
  CHECK(has(r.out, "seed=18446744073709551615"));
}
