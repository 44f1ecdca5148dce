// A one-node Slurm cluster for the tests that submit to a real Slurm (sweep --slurm, zoom
// --slurm): munged, slurmctld and slurmd from Debian's slurm-wlm and munge
// (scripts/setup_slurm.sh), started in a directory by tests/cli/slurm_cluster.sh and stopped at the
// end, also on failure.
#pragma once

#include <filesystem>
#include <string>

namespace ds::test {

// Runs a shell command; returns its exit status (128 when it did not exit), its stdout and stderr
// in `out`.
int shell(const std::string& cmd, std::string& out);

// The cluster's lifetime: started in the constructor (a failed start fails the test, with the
// daemons' logs), stopped in the destructor (so a failed REQUIRE, which throws, still stops every
// daemon), SLURM_CONF set in between.
class SlurmCluster {
 public:
  explicit SlurmCluster(const std::filesystem::path& dir);
  ~SlurmCluster();
  SlurmCluster(const SlurmCluster&) = delete;
  SlurmCluster& operator=(const SlurmCluster&) = delete;

  // slurmctld's log: Slurm's own record of what it scheduled ("sched: Allocate JobId=J_T ...",
  // "_job_complete: JobId=J_T(...) WEXITSTATUS 0"), independent of driftscope's files.
  std::string controller_log() const;

 private:
  std::filesystem::path dir_;
  bool started_ = false;
};

}  // namespace ds::test
