// CLI flags of the run configuration.
#include "src/cli/run_config_args.h"

#include <CLI/CLI.hpp>

namespace ds {

void add_run_config_options(CLI::App& cmd, RunConfig& c) {
  cmd.add_option("--device", c.device, "backend: cpu (the reference)")->capture_default_str();
  cmd.add_option("--dtype", c.dtype, "compute precision: fp32, or fp64 (the oracle)")
      ->capture_default_str();
  cmd.add_option("-n,--max-new", c.max_new, "maximum number of new tokens per prompt")
      ->capture_default_str();
  cmd.add_option("--temperature", c.temperature,
                 "sampling temperature; 0 = greedy (ties: lowest id)")
      ->capture_default_str();
  cmd.add_option("--top-p", c.top_p, "nucleus sampling mass, 0 < p <= 1")->capture_default_str();
  cmd.add_option("--top-k", c.top_k, "sample among the k most likely tokens; 0 = all")
      ->capture_default_str();
  cmd.add_option("--seed", c.seed,
                 "seed of the sampling noise (drawn per prompt and step, so runs share it)")
      ->capture_default_str();
}

}  // namespace ds
