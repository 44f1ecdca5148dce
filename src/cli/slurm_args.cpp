#include "src/cli/slurm_args.h"

namespace ds {

void add_slurm_options(CLI::App& cmd, bool& slurm, SlurmOptions& opt, bool& wait, int& poll_s,
                       const std::string& slurm_help, const std::string& wait_help) {
  const char* g = "Slurm";
  cmd.add_flag("--slurm", slurm, slurm_help)->group(g);
  cmd.add_option("--partition", opt.partition, "Slurm partition")->group(g);
  cmd.add_option("--gpus-per-task", opt.gpus_per_task, "GPUs per array task")->group(g);
  cmd.add_option("--time", opt.time, "time limit per array task, e.g. 00:30:00")->group(g);
  cmd.add_flag("--wait", wait, wait_help)->group(g);
  cmd.add_option("--poll", poll_s, "seconds between squeue polls while waiting")
      ->capture_default_str()
      ->group(g);
}

void add_replay_options(CLI::App& cmd, ReplayOptions& r, const std::string& jobs_help,
                        const std::string& slurm_help, const std::string& wait_help) {
  cmd.add_option("-j,--jobs", r.jobs, jobs_help)->capture_default_str();
  add_slurm_options(cmd, r.slurm, r.slurm_opt, r.wait, r.poll_s, slurm_help, wait_help);
  cmd.add_flag("-q,--quiet", r.quiet, "no progress lines on stderr");
}

}  // namespace ds
