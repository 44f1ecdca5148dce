// The watched child of `show`, `diff` and `stats` (trace/read_supervisor.h): exit codes and
// signals pass through; a crash or a stall inside a marked trace read is reported as a damaged
// trace (exit 2); a crash outside one is an internal error (exit 3).
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "tests/support/text.h"
#include "trace/read_supervisor.h"
#include "trace/read_watch.h"

namespace {

struct Outcome {
  int code = -1;    // what run_with_watched_reads returned
  int signal = 0;   // or the signal the supervising process died of
  std::string err;  // its stderr
  double seconds = 0;
};

// Runs the supervisor itself in a forked process (it may die of its child's signal), with its
// stderr in a file.
Outcome supervise(const std::function<int()>& command, const char* stall = "1") {
  char err_path[] = "/tmp/ds-supervisor-err-XXXXXX";
  const int fd = mkstemp(err_path);
  REQUIRE(fd >= 0);
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    dup2(fd, STDERR_FILENO);
    setenv("DRIFTSCOPE_READ_STALL_SECONDS", stall, 1);
    _exit(ds::trace::run_with_watched_reads(command));
  }
  int status = 0;
  waitpid(pid, &status, 0);
  Outcome o;
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (WIFEXITED(status)) o.code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) o.signal = WTERMSIG(status);
  close(fd);
  o.err = ds::test::slurp(err_path);
  unlink(err_path);
  return o;
}

}  // namespace

TEST_CASE("watched reads: the command's exit code passes through", "[trace][untrusted]") {
  for (int code : {0, 1, 2, 3, 141}) {
    const Outcome o = supervise([code] { return code; });
    CHECK(o.code == code);
    CHECK(o.err.empty());
  }
}

TEST_CASE("watched reads: a signal that ends the command ends the watcher the same way",
          "[trace][untrusted]") {
  const Outcome o = supervise([] {
    signal(SIGINT, SIG_DFL);  // as in driftscope, not Catch's handler of this process
    raise(SIGINT);
    return 0;
  });
  CHECK(o.signal == SIGINT);
}

TEST_CASE("watched reads: a crash inside a trace read is a damaged trace, exit 2",
          "[trace][untrusted]") {
  const Outcome o = supervise([] {
    const ds::trace::WatchedRead r("/x/t.h5", "sequence", 3);
    signal(SIGSEGV, SIG_DFL);
    raise(SIGSEGV);
    return 0;
  });
  INFO(o.err);
  CHECK(o.code == 2);
  CHECK(
      o.err.starts_with("driftscope: trace '/x/t.h5' (sequence 3) is damaged: reading it "
                        "crashed HDF5"));
  CHECK(o.err.find("\nhint: ") != std::string::npos);
}

TEST_CASE("watched reads: a crash outside a trace read is an internal error, exit 3",
          "[trace][untrusted]") {
  const Outcome o = supervise([] {
    { const ds::trace::WatchedRead r("/x/t.h5", "opening it"); }
    signal(SIGABRT, SIG_DFL);
    raise(SIGABRT);
    return 0;
  });
  INFO(o.err);
  CHECK(o.code == 3);
  CHECK(o.err.starts_with("driftscope: internal error: the command crashed"));
}

TEST_CASE("watched reads: a read that does not return is stopped after the stall limit",
          "[trace][untrusted]") {
  const Outcome o = supervise(
      [] {
        const ds::trace::WatchedRead r("/x/t.h5", "opening it");
        std::this_thread::sleep_for(std::chrono::seconds(60));
        return 0;
      },
      "0.5");
  INFO(o.err);
  CHECK(o.code == 2);
  CHECK(
      o.err.starts_with("driftscope: trace '/x/t.h5' (opening it) is damaged: reading it "
                        "stayed inside HDF5 for more than 0.5 s"));
  CHECK(o.seconds < 5);
}

TEST_CASE("watched reads: time outside trace reads is not limited", "[trace][untrusted]") {
  const Outcome o = supervise(
      [] {
        { const ds::trace::WatchedRead r("/x/t.h5", "opening it"); }
        std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // writing to a slow pager
        const ds::trace::WatchedRead r("/x/t.h5", "sequence", 0);
        return 0;
      },
      "0.5");
  INFO(o.err);
  CHECK(o.code == 0);
  CHECK(o.seconds >= 1.5);
}
