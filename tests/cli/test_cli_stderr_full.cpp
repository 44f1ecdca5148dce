// A stderr that cannot be written (/dev/full: every write fails with ENOSPC) loses the notes and
// progress lines, never the command's exit code: no abort, the trace is still written.
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>

#include "tests/support/paths.h"
#include "tests/support/run_cli.h"
#include "tests/support/temp_dir.h"

namespace fs = std::filesystem;

namespace {

// The exit code of driftscope `args` with stdout to /dev/null and stderr to /dev/full.
int exit_code_with_full_stderr(const std::string& args) {
  const std::string cmd =
      "'" + ds::test::exe() + "' " + args + " >/dev/null 2>/dev/full </dev/null";
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

TEST_CASE("a stderr that cannot be written loses the text, never the exit code",
          "[cli][bad-input]") {
  if (!fs::exists("/dev/full")) {
    WARN("skipped: no /dev/full here");
    return;
  }
  ds::test::TempDir dir;
  const std::string trace = (dir.path() / "t.h5").string();
  CHECK(exit_code_with_full_stderr("run --prompt-ids 1,400 -n 3 -o " + trace) == 0);
  const auto shown = ds::test::run_cli("show " + trace);
  CHECK(shown.exit_code == 0);
  CHECK(shown.out.find("complete") != std::string::npos);
  CHECK(exit_code_with_full_stderr("generate --prompt-ids 1,400 -n 3") == 0);
  CHECK(exit_code_with_full_stderr("diff " + trace + " " + trace + " --fail-on flip") == 0);
  CHECK(exit_code_with_full_stderr("show " + (dir.path() / "missing.h5").string()) == 2);
  CHECK(exit_code_with_full_stderr("run --prompt-ids 1,400 -n 3 -o " + trace) == 2);  // exists
}
