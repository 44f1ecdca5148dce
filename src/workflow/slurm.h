// The Slurm back end of the commands that run many runs (sweep, zoom): one job array per
// submission (a batch script, sbatch), watched with squeue. The local back end:
// src/workflow/child_runs.h.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "src/workflow/child_runs.h"

namespace ds {

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
