// The tests' one-node Slurm cluster (see slurm_cluster.h).
#include "tests/support/slurm_cluster.h"

#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>

#include "tests/support/paths.h"
#include "tests/support/text.h"

namespace ds::test {
namespace {

std::string script() {
  return source_dir() + "/tests/cli/slurm_cluster.sh";
}

}  // namespace

int shell(const std::string& cmd, std::string& out) {
  out.clear();
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return -1;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int rc = pclose(p);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
}

SlurmCluster::SlurmCluster(const std::filesystem::path& dir) : dir_(dir) {
  std::filesystem::create_directories(dir_);
  std::string out;
  const int rc = shell("timeout 90 bash " + script() + " start " + dir_.string(), out);
  INFO(out);
  REQUIRE(rc == 0);
  started_ = true;
  ::setenv("SLURM_CONF", (dir_ / "slurm.conf").c_str(), 1);
}

SlurmCluster::~SlurmCluster() {
  if (!started_) return;
  std::string out;
  shell("timeout 60 bash " + script() + " stop " + dir_.string(), out);
  ::unsetenv("SLURM_CONF");
}

std::string SlurmCluster::controller_log() const {
  return slurp(dir_ / "slurmctld.log");
}

}  // namespace ds::test
