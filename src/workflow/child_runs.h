// Runs as child processes of this machine, a pool of -j at a time (a sweep's configurations, a
// zoom's replays), each with its output in DIR/logs/<name>.log; and the lock that keeps one sweep
// or zoom at a time in a folder. The Slurm back end of the same runs: src/workflow/slurm.h.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ds {

// One sweep (or zoom: `what`) at a time per folder: an advisory lock on DIR/.sweep.lock (holding
// the pid and which of the two holds it), taken before anything of it is written and held until
// the process ends. Throws ds::Error "a sweep is running in DIR (pid N)" when another process
// holds it, naming the command that does.
class SweepLock {
 public:
  explicit SweepLock(const std::filesystem::path& dir, const std::string& what = "sweep");
  ~SweepLock();
  SweepLock(const SweepLock&) = delete;
  SweepLock& operator=(const SweepLock&) = delete;

 private:
  int fd_ = -1;
};

// Who holds the lock of DIR: "a sweep (pid 123)", "a zoom (pid 45)"; nullopt when no process
// does. Creates, takes and changes nothing.
std::optional<std::string> folder_lock_holder(const std::filesystem::path& dir);

// The checks of a sweep's or zoom's (`what`) -o folder before anything is written into it. Throws
// ds::Error with a hint when another sweep or zoom runs there (naming which), when DIR is not a
// folder, when it holds the other's state file, or when it holds files `what` did not write: a
// folder that is not empty (an interrupted run's lock aside) and holds no `state_file` of its own
// (sweep.json, zoom.json: then it is resumed, and the caller checks that it is the same one).
void check_workflow_folder(const std::filesystem::path& dir, const std::string& what,
                           const std::string& state_file);

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
