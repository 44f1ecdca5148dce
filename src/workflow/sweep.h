// `driftscope sweep`: every configuration of a grid (src/workflow/sweep_plan.h) run into its own
// trace, here (-j N at a time, src/workflow/child_runs.h) or as a Slurm job array
// (src/workflow/slurm.h), each a `driftscope run` of the configuration's TOML file, so a sweep's
// trace is the trace `run` writes for that config. Resumable: complete traces of the same
// configuration are kept, everything else is run again.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "src/experiment/run_config.h"
#include "src/workflow/slurm.h"

namespace ds {

// A sweep as the command line gives it; its flags already checked by the command.
struct SweepOptions {
  RunConfig base;           // the run-config flags and --config file
  std::string grid;         // --grid; empty: the sweep recorded in `output`
  std::string prompts;      // file of prompts; required with --grid
  std::string model;        // empty: the bundled kjv-llama
  std::string tokenizer;    // empty: found beside the model
  std::string config_file;  // --config FILE of the base config, when given (an input)
  std::string output;       // the sweep directory
  std::string probes;       // --probes of every run; empty: the sweep's own (new sweep: default)
  int jobs = 1;
  int samples = 0;
  bool slurm = false;
  bool wait = false;
  SlurmOptions slurm_opt;
  int poll_s = 5;
  bool quiet = false;
  bool dry_run = false;                   // print every configuration as TOML, run nothing
  std::vector<std::string> writer_flags;  // given to every run (--compression NAME when given)
  // The command's option a grid knob names when it is no field ("force" -> "--force"), or "".
  std::function<std::string(const std::string& knob)> option_of;
};

// Runs the sweep in `o.output`: a new one from --grid (which must match DIR/sweep.json when it
// exists), or the one recorded there. Returns the exit code: 0 when every configuration is
// complete (or was submitted to Slurm without --wait), 1 naming those still missing, 130 when
// interrupted (resumable). Throws ds::Error with a hint on a bad grid or sweep folder.
int run_sweep(const SweepOptions& o);

}  // namespace ds
