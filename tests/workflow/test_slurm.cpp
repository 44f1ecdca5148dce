// The Slurm flags of sweep and zoom (src/workflow/slurm.h), checked before anything is written.
#include <catch2/catch.hpp>
#include <string>

#include "common/error.h"
#include "src/workflow/slurm.h"

using Catch::Contains;

namespace {

std::string refusal(bool slurm, const ds::SlurmOptions& opt, int poll_s) {
  try {
    ds::check_slurm_flags(slurm, opt, poll_s, "sweep-dir");
  } catch (const ds::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("slurm flags: each bad one is refused by name", "[workflow][slurm]") {
  ds::SlurmOptions opt;
  CHECK(refusal(true, opt, 5).empty());
  CHECK_THAT(refusal(true, opt, 0), Contains("--poll 0 must be >= 1"));
  opt.gpus_per_task = -1;
  CHECK_THAT(refusal(true, opt, 5), Contains("--gpus-per-task -1 is negative"));
  opt = {};
  opt.time = "00:10:00";
  CHECK_THAT(refusal(false, opt, 5), Contains("go with --slurm"));
  CHECK(refusal(true, opt, 5).empty());
}

TEST_CASE("slurm flags: a control character cannot reach the batch script", "[workflow][slurm]") {
  ds::SlurmOptions opt;
  opt.partition = "gpu\n#SBATCH --wrap=x";
  CHECK_THAT(refusal(true, opt, 5), Contains("--partition holds a control character"));
  opt.partition = "gpu";
  opt.time = std::string("1\x7f");
  CHECK_THAT(refusal(true, opt, 5), Contains("--time holds a control character"));
}
