// Runs a command as a child process for the benchmarks: its wall time and peak RSS (wait4).
#pragma once

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace ds::bench {

struct ChildRun {
  double wall = 0;      // seconds
  long max_rss_kb = 0;  // peak resident set size, KiB
};

// Runs args[0] (a path) with args; exits the benchmark with 2 when the child fails. With
// quiet_stdout the child's standard output goes to /dev/null.
inline ChildRun run_child(const std::vector<std::string>& args, bool quiet_stdout = false) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    if (quiet_stdout && std::freopen("/dev/null", "w", stdout) == nullptr) _exit(126);
    execv(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  rusage ru{};
  wait4(pid, &status, 0, &ru);
  ChildRun c;
  c.wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  c.max_rss_kb = ru.ru_maxrss;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "child %s failed (status %d)\n", args[0].c_str(), status);
    std::exit(2);
  }
  return c;
}

}  // namespace ds::bench
