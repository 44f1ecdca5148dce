// Runs as child processes of this machine, a pool of -j at a time (a sweep's configurations, a
// zoom's replays), each with its output in DIR/logs/<name>.log; and the lock that keeps one sweep
// or zoom at a time in a folder. The Slurm back end of the same runs: src/workflow/slurm.h.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace ds {

// One sweep (or zoom: `what`) at a time per folder: an advisory lock on DIR/.sweep.lock (holding
// the pid), taken before anything of it is written and held until the process ends. Throws
// ds::Error "a sweep is running in DIR (pid N)" when another process holds it.
class SweepLock {
 public:
  explicit SweepLock(const std::filesystem::path& dir, const std::string& what = "sweep");
  ~SweepLock();
  SweepLock(const SweepLock&) = delete;
  SweepLock& operator=(const SweepLock&) = delete;

 private:
  int fd_ = -1;
};

// One child process: its name (its log is DIR/logs/<name>.log) and its command line.
struct ChildRun {
  std::string name;
  std::vector<std::string> argv;  // the executable first
  bool sets_threads = false;      // argv holds its own --threads (the recorder's, which it records)
};

// This executable, for the command lines of the runs.
std::filesystem::path self_exe();

// Runs `runs`, `jobs` at a time (each with --threads the CPU threads / jobs appended unless it
// sets_threads), each with its stdout and stderr in DIR/logs/<name>.log. When one ends,
// `finished(i, exited_ok)` says whether run i's output is complete (and records it). Prints
// "<label>: [k/n] NAME done (S s)" on stderr per finished run unless `quiet`. On SIGINT, SIGTERM
// or SIGHUP it starts nothing more, forwards SIGTERM once to the runs going (each finishes its
// trace as interrupted) and waits for them; returns true when interrupted.
bool run_children(const std::filesystem::path& dir, const std::vector<ChildRun>& runs, int jobs,
                  bool quiet, const std::string& label,
                  const std::function<bool(size_t, bool)>& finished);

}  // namespace ds
