// Trace outputs from the command line: every check that can refuse a run is made before its trace
// is created (a refused run leaves nothing that blocks the corrected one), and --force replaces
// regular files only (docs/cli.md, "Output files"; the writer's own cases are in
// tests/trace/test_writer_targets.cpp).
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "tests/support/run_cli.h"
#include "tests/support/temp_dir.h"

namespace fs = std::filesystem;
using ds::test::check_input_error;
using ds::test::run_cli;

TEST_CASE("run: a prompt longer than the context is refused before the trace exists",
          "[cli][bad-input]") {
  ds::test::TempDir dir;
  const fs::path out = dir.path() / "ctx.h5";
  std::string ids = "1";
  for (int i = 0; i < 600; ++i) ids += ",400";  // 601 tokens; the bundled model has 512
  check_input_error(run_cli("run --prompt-ids " + ids + " -n 2 -q -o " + out.string()),
                    "the prompt has 601 tokens, more than the context of 512 positions");
  CHECK(!fs::exists(fs::symlink_status(out)));
  // so the corrected run is not told that its trace "already exists"
  CHECK(run_cli("run --prompt-ids 1,400 -n 2 -q -o " + out.string()).exit_code == 0);
}

TEST_CASE("demo: a configuration the model refuses stops it before run A writes anything",
          "[cli][bad-input]") {
  ds::test::TempDir dir;
  const fs::path out = dir.path() / "demo";
  check_input_error(run_cli("demo -n 3 --tp 3 --out " + out.string()), "invalid tp 3");
  CHECK(!fs::exists(out / "a.h5"));
}

TEST_CASE("run and demo: --force never replaces a FIFO, a folder or a link", "[cli][bad-input]") {
  ds::test::TempDir dir;
  const fs::path fifo = dir.path() / "fifo.h5", sub = dir.path() / "sub.h5";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  fs::create_directory(sub);
  for (const auto& p : {fifo, sub}) {
    check_input_error(run_cli("run --prompt-ids 1,400 -n 2 -q --force -o " + p.string()),
                      "is not a regular file");
  }
  CHECK(fs::is_fifo(fifo));
  CHECK(fs::is_directory(sub));
  // demo's b.h5 a FIFO: refused before A runs
  const fs::path out = dir.path() / "demo";
  fs::create_directory(out);
  REQUIRE(::mkfifo((out / "b.h5").c_str(), 0600) == 0);
  check_input_error(run_cli("demo -n 3 --force --out " + out.string()), "is not a regular file");
  CHECK(fs::is_fifo(out / "b.h5"));
  CHECK(!fs::exists(out / "a.h5"));
}
