// How a sweep's configurations (and a zoom's replays) get run: as child processes of this machine
// (a pool of -j at a time) or as one Slurm job array (a script, sbatch, squeue). Each runs
// `driftscope run` with the configuration's TOML file, so a sweep's trace is the trace `run`
// writes for that config.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "src/experiment/sweep.h"

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

// The `driftscope run` command line of one configuration (argv, the executable first), with
// `writer_flags` (options of the trace writer, such as --compression NAME) at the end.
std::vector<std::string> run_argv(const std::filesystem::path& dir, const SweepState& s,
                                  const SweepEntry& e,
                                  const std::vector<std::string>& writer_flags = {});

// One child process: its name (its log is DIR/logs/<name>.log) and its command line.
struct ChildRun {
  std::string name;
  std::vector<std::string> argv;  // the executable first
  bool sets_threads = false;      // argv holds its own --threads (the recorder's, which it records)
};

// This executable, for the command lines of the runs.
std::filesystem::path self_exe();

// Runs `runs`, `jobs` at a time (each with --threads the CPU threads / jobs appended unless it
// sets_threads), each with
// its stdout and stderr in DIR/logs/<name>.log. When one ends, `finished(i, exited_ok)` says
// whether run i's output is complete (and records it). Prints "<label>: [k/n] NAME done (S s)"
// on stderr per finished run unless `quiet`. Signals as run_local; returns true when interrupted.
bool run_children(const std::filesystem::path& dir, const std::vector<ChildRun>& runs, int jobs,
                  bool quiet, const std::string& label,
                  const std::function<bool(size_t, bool)>& finished);

// Runs the entries at `todo` (indices into s.entries), `jobs` at a time (each with --threads the
// CPU threads / jobs), each with its stdout and stderr in DIR/logs/<name>.log; sets each one's
// status to done or missing. Prints one line per finished configuration on stderr unless `quiet`.
// On SIGINT, SIGTERM or SIGHUP it starts nothing more, forwards SIGTERM once to the runs going
// (each finishes its trace as interrupted) and waits for them; returns true when interrupted.
bool run_local(const std::filesystem::path& dir, SweepState& s, const std::vector<size_t>& todo,
               int jobs, bool quiet, const std::vector<std::string>& writer_flags = {});

struct SlurmOptions {
  std::string partition;
  int gpus_per_task = 0;  // 0: not asked for
  std::string time;       // e.g. 00:10:00; empty: the partition's default
};

// Refuses (ds::Error naming the option) a --partition, --time or sweep folder `dir` holding a
// control character: a newline would end a `#SBATCH` line and start a command of the batch
// script. Called before anything of the sweep is written.
void check_slurm_text(const SlurmOptions& opt, const std::filesystem::path& dir);

// The Slurm flags of sweep and zoom: --poll >= 1, --gpus-per-task >= 0, --partition,
// --gpus-per-task and --time only with --slurm, and check_slurm_text. Throws ds::Error with a hint.
void check_slurm_flags(bool slurm, const SlurmOptions& opt, int poll_s,
                       const std::filesystem::path& dir);

// Writes DIR/<script> (a job array named `job_name`: one task per run at `todo`, index = its
// position in `runs`, each exec'ing the run's command line) and submits it with
// `sbatch --parsable`; returns the job id.
std::string submit_slurm_array(const std::filesystem::path& dir, const std::string& script,
                               const std::string& job_name, const std::vector<ChildRun>& runs,
                               const std::vector<size_t>& todo, const SlurmOptions& opt);

// Writes DIR/sweep.sbatch (one array task per entry at `todo`, index = its position in
// sweep.json) and submits it with `sbatch --parsable`; returns the job id.
std::string submit_slurm(const std::filesystem::path& dir, const SweepState& s,
                         const std::vector<size_t>& todo, const SlurmOptions& opt,
                         const std::vector<std::string>& writer_flags = {});

// Whether the job array still has tasks in `squeue` (pending or running).
bool slurm_job_active(const std::string& job_id);

// Returns once the job array has left the queue, asking squeue every poll_s seconds.
void wait_while_active(const std::string& job_id, int poll_s);

// The Slurm jobs of an earlier submission of `what` ("sweep", "zoom") in DIR: with `wait`, waits
// for each to leave the queue (a note on stderr unless `quiet`); else, with `refuse`, throws
// ds::Error with `hint` while one is queued or running.
void settle_slurm_jobs(const std::vector<std::string>& jobs, const char* what, bool wait,
                       bool refuse, int poll_s, bool quiet, const std::string& hint);

}  // namespace ds
