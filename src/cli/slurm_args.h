// The Slurm options of the commands that run many runs (sweep, zoom, explain, calibrate): --slurm,
// --partition, --gpus-per-task, --time, --wait and --poll, in the help's "Slurm" group; and the
// replay options of those that replay a trace's runs (zoom, explain, calibrate): -j, Slurm, -q.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "src/workflow/replays.h"
#include "src/workflow/slurm.h"

namespace ds {

// Registers the Slurm group on `cmd`; `slurm_help` and `wait_help` say what --slurm submits and
// what --wait waits for in that command.
void add_slurm_options(CLI::App& cmd, bool& slurm, SlurmOptions& opt, bool& wait, int& poll_s,
                       const std::string& slurm_help, const std::string& wait_help);

// Registers -j (`jobs_help`), the Slurm group and -q on `cmd`, into `r`.
void add_replay_options(CLI::App& cmd, ReplayOptions& r, const std::string& jobs_help,
                        const std::string& slurm_help, const std::string& wait_help);

}  // namespace ds
