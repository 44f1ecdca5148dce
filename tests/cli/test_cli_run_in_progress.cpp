// A run in progress, seen from outside: `show` on its trace says it is being written, and a
// second Ctrl-C (or SIGTERM) aborts at once (the first asks the run to finish its trace).
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "tests/support/paths.h"
#include "tests/support/run_cli.h"
#include "tests/support/temp_dir.h"
#include "tests/support/text.h"

namespace fs = std::filesystem;

using ds::test::count;
using ds::test::slurp;

namespace {

// `driftscope run` over 400 prompts of 400 tokens (minutes of work) writing `trace`, with its
// stderr in `err`; returns once the trace holds some steps, so the run is mid-generation.
pid_t start_long_run(const fs::path& dir, const fs::path& trace, const fs::path& err) {
  const auto prompts = dir / "prompts.txt";
  {
    std::ofstream out(prompts);
    for (int i = 0; i < 400; ++i) out << "Once upon a time there was a cat number " << i << "\n";
  }
  const pid_t pid = fork();
  if (pid == 0) {
    const std::string out = trace.string(), p = prompts.string();
    const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int devnull = ::open("/dev/null", O_WRONLY);
    dup2(devnull, 1);
    dup2(e, 2);
    execl(ds::test::exe().c_str(), "driftscope", "run", "--prompts", p.c_str(), "-n", "400",
          "--probes", "all", "-o", out.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  for (int i = 0; i < 200 && (!fs::exists(trace) || fs::file_size(trace) < 200000); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return pid;
}

}  // namespace

TEST_CASE("show on a trace still being written says it is in use", "[cli][trace][interrupt]") {
  ds::test::TempDir dir;
  const auto t = dir.path() / "t.h5", err = dir.path() / "err.txt";
  const pid_t pid = start_long_run(dir.path(), t, err);
  const auto r = ds::test::run_cli("show " + t.string());
  kill(pid, SIGINT);
  int status = 0;
  waitpid(pid, &status, 0);
  ds::test::check_input_error(r, "is in use: a run is still writing it");
  CHECK(r.err.find("SIGKILL") == std::string::npos);
  // Once the run has finished its trace (Ctrl-C), show reads it.
  CHECK(WIFEXITED(status));
  CHECK(ds::test::run_cli("show " + t.string()).exit_code == 0);
}

TEST_CASE("a second Ctrl-C or SIGTERM aborts the run at once", "[cli][trace][interrupt]") {
  ds::test::TempDir dir;
  const auto t = dir.path() / "t.h5", err = dir.path() / "err.txt";
  const pid_t pid = start_long_run(dir.path(), t, err);
  // Two different signals, so that neither can merge into the other while pending.
  kill(pid, SIGTERM);
  kill(pid, SIGINT);
  int status = 0;
  waitpid(pid, &status, 0);
  const std::string e = slurp(err);
  INFO("stderr: " << e);
  // Killed by the second signal (its default action), not a normal exit 130 after finishing.
  REQUIRE(WIFSIGNALED(status));
  CHECK((WTERMSIG(status) == SIGINT || WTERMSIG(status) == SIGTERM));
  CHECK(count(e, "interrupted, finishing the trace (again to abort)") == 1);
  CHECK(count(e, "driftscope: aborted") == 1);
}
