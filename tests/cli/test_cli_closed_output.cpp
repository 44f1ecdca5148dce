// A reader that closes the pipe early (`driftscope show t.h5 | head`): every command that writes
// to stdout ends quietly with exit 141 (128 + SIGPIPE, as a shell reports a process a closed pipe
// ended), never with "internal error" and exit 3; a full disk on stdout is an input error.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "tests/support/paths.h"
#include "tests/support/run_cli.h"
#include "tests/support/temp_dir.h"
#include "tests/support/text.h"

using ds::test::has;
using ds::test::run_cli;

namespace {

// Runs driftscope `args` (through /bin/sh) with stdout the write end of a pipe whose read end is
// closed before the command starts, so its first write to stdout fails with EPIPE whatever the
// timing; stderr goes to err_path. Returns the exit code as a shell reports it.
int run_with_closed_stdout(const std::string& args, const std::filesystem::path& err_path) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  ::close(fds[0]);
  const std::string cmd = "'" + ds::test::exe() + "' " + args + " 2>'" + err_path.string() + "'";
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::dup2(fds[1], 1);
    ::close(fds[1]);
    const int null = ::open("/dev/null", O_RDONLY);
    ::dup2(null, 0);
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(fds[1]);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

TEST_CASE("every command that writes to stdout ends quietly when stdout is closed",
          "[cli][bad-input][pipe]") {
  ds::test::TempDir dir;
  const std::string trace = (dir.path() / "t.h5").string();
  REQUIRE(run_cli("run --prompt-ids 1 -n 8 -q -o " + trace).exit_code == 0);
  const std::string commands[] = {
      "show " + trace,
      "show --json " + trace,
      "diff " + trace + " " + trace,
      "diff --json - " + trace + " " + trace,
      "generate --prompt-ids 1 -n 8",
      "generate --prompt-ids 1 -n 8 --ids",
      "tokenize --text 'Once upon a time' --tokenizer " + ds::test::model_tok(),
      "synth --list",
      "run --dry-run",
      "stats " + trace,
  };
  const auto err = dir.path() / "err.txt";
  for (const auto& c : commands) {
    INFO(c);
    CHECK(run_with_closed_stdout(c, err) == 141);
    const std::string text = ds::test::slurp(err);
    INFO("stderr: " << text);
    CHECK_FALSE(has(text, "internal error"));
    CHECK_FALSE(has(text, "driftscope: "));
  }
}

TEST_CASE("a full disk on stdout is an input error, not an internal one",
          "[cli][bad-input][pipe]") {
  REQUIRE(std::filesystem::exists("/dev/full"));  // Linux: every write fails with ENOSPC
  ds::test::TempDir dir;
  const std::string trace = (dir.path() / "t.h5").string();
  REQUIRE(run_cli("run --prompt-ids 1 -n 8 -q -o " + trace).exit_code == 0);
  const auto err = dir.path() / "err.txt";
  const std::string commands[] = {"show " + trace, "generate --prompt-ids 1 -n 8", "synth --list"};
  for (const auto& c : commands) {
    INFO(c);
    const int status = std::system(
        ("'" + ds::test::exe() + "' " + c + " >/dev/full 2>'" + err.string() + "'").c_str());
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 2);
    const std::string text = ds::test::slurp(err);
    INFO("stderr: " << text);
    CHECK(text.starts_with("driftscope: "));
    CHECK(has(text, "No space left on device"));
    CHECK(has(text, "\nhint: "));
    CHECK_FALSE(has(text, "internal error"));
  }
}
