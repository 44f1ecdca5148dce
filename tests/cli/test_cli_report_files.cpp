// Report files (--json and --html of diff, stats and attribute) are written whole or not at all and
// never over an input: an output that is one of the input traces, or not a regular file, is
// refused before any work; a write that fails leaves nothing behind.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "tests/support/run_cli.h"
#include "tests/support/temp_dir.h"

namespace fs = std::filesystem;
using ds::test::check_input_error;
using ds::test::run_cli;
using ds::test::run_trace;

TEST_CASE("a report is never written over an input trace or a non-regular file",
          "[cli][bad-input]") {
  ds::test::TempDir dir;
  const std::string a = run_trace(dir.path(), "a.h5"),
                    b = run_trace(dir.path(), "b.h5", "--dtype bf16");
  const auto a_bytes = fs::file_size(a);
  const std::string ab = " " + a + " " + b;
  check_input_error(run_cli("diff" + ab + " --json " + a), "is the input trace '" + a + "'");
  check_input_error(run_cli("diff" + ab + " --html " + b), "is the input trace '" + b + "'");
  check_input_error(run_cli("stats" + ab + " --json " + b), "is the input trace '" + b + "'");
  check_input_error(run_cli("attribute " + a + " --html " + a), "is the input trace '" + a + "'");
  // the same file under another name (a hard link) is the same input
  fs::create_hard_link(a, dir.path() / "link.h5");
  check_input_error(run_cli("diff" + ab + " --json " + (dir.path() / "link.h5").string()),
                    "is the input");
  CHECK(fs::file_size(a) == a_bytes);
  CHECK(run_cli("show " + a).exit_code == 0);
  // a directory or a device is not replaced by a report
  check_input_error(run_cli("diff" + ab + " --json " + dir.path().string()),
                    "is not a regular file");
  check_input_error(run_cli("diff" + ab + " --html /dev/null"), "is not a regular file");
  CHECK(fs::is_character_file("/dev/null"));
  // an existing file is replaced only with --force, and then whole
  const fs::path report = dir.path() / "r.json";
  std::ofstream(report) << "old";
  check_input_error(run_cli("diff -q" + ab + " --json " + report.string()), "already exists");
  CHECK(fs::file_size(report) == 3);
  REQUIRE(run_cli("diff -q --force" + ab + " --json " + report.string()).exit_code == 0);
  CHECK(fs::file_size(report) > 100);
}

TEST_CASE("a report that cannot be written leaves no file behind", "[cli][bad-input]") {
  ds::test::TempDir dir;
  const std::string a = run_trace(dir.path(), "a.h5");
  const fs::path missing = dir.path() / "no" / "r.json";
  check_input_error(run_cli("diff " + a + " " + a + " --json " + missing.string()),
                    "cannot write the JSON report to '" + missing.string() + "'");
  size_t files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir.path())) ++files;
  CHECK(files == 1);  // a.h5 alone: no temporary file left
}
