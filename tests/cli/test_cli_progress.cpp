// Progress lines: drawn on a terminal (here a pseudo-terminal from util-linux `script`), never
// when stderr is a file or a pipe.
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/support/paths.h"
#include "tests/support/run_cli.h"
#include "tests/support/temp_dir.h"
#include "tests/support/text.h"

using ds::test::run_cli;

using ds::test::has;

namespace {

// Runs driftscope `args` under `script`, which gives it a terminal, and returns what the
// terminal showed (stdout and stderr together).
std::string on_terminal(const ds::test::TempDir& dir, const std::string& args) {
  const auto log = dir.path() / "terminal.txt";
  const std::string cmd = "script -qec \"'" + ds::test::exe() + "' " + args + "\" /dev/null > '" +
                          log.string() + "' 2>&1 </dev/null";
  const int status = std::system(cmd.c_str());
  INFO("command: " << cmd);
  CHECK(status == 0);
  std::ifstream in(log, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("synth, run, demo and diff show progress on a terminal", "[cli][progress]") {
  if (std::system("command -v script >/dev/null 2>&1") != 0) {
    WARN("util-linux `script` not found: the terminal case is not checked");
    return;
  }
  ds::test::TempDir dir;
  const std::string d = dir.path().string();
  CHECK(has(on_terminal(dir, "synth --shape tiny -o " + d + "/m"), "\rsynth #"));
  CHECK(has(on_terminal(dir, "run -n 20 -q -o " + d + "/a.h5"), "\rrun [seq 1/1] "));
  CHECK(has(on_terminal(dir, "run -n 20 -q --dtype bf16 -o " + d + "/b.h5"), " tokens "));
  const std::string diff = on_terminal(dir, "diff " + d + "/a.h5 " + d + "/b.h5");
  CHECK(has(diff, "\rdiff "));
  CHECK(has(diff, "1/1 sequences"));
  const std::string demo = on_terminal(dir, "demo --max-new 3 --out " + d + "/demo");
  CHECK(has(demo, "\rrun A [seq "));
  CHECK(has(demo, "\rrun B [seq "));
}

TEST_CASE("progress stays off when stderr is not a terminal", "[cli][progress]") {
  ds::test::TempDir dir;
  const std::string d = dir.path().string();
  for (const std::string& args :
       {"synth --shape tiny -o " + d + "/m", "run -n 20 -o " + d + "/a.h5",
        "run -n 20 --dtype bf16 -o " + d + "/b.h5", "diff " + d + "/a.h5 " + d + "/b.h5",
        "demo --max-new 3 --out " + d + "/demo"}) {
    auto r = run_cli(args);
    INFO(args << "\nstderr: " << r.err);
    CHECK(r.exit_code == 0);
    CHECK_FALSE(has(r.err, "\r"));
    CHECK_FALSE(has(r.err, "#####"));
  }
}
