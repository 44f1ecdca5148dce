// A traced run started from the command line (run, demo): metadata from the loaded model and
// this process, Ctrl-C handling, and a progress line on stderr.
#pragma once

#include <string>
#include <vector>

#include "src/experiment/prompts.h"
#include "src/experiment/run_config.h"
#include "src/experiment/traced_run.h"
#include "src/workflow/loaded_model.h"
#include "trace/writer.h"

namespace ds {

TracedRunResult run_traced_command(const std::string& label, const RunConfig& config,
                                   const std::string& probes, const trace::WriterOptions& writer,
                                   const LoadedModel& lm, const std::vector<Prompt>& prompts,
                                   const std::string& force_tokens = {},
                                   const std::string& kernels = "auto",
                                   std::string* write_error_detail = nullptr,
                                   const std::optional<PlanSpec>& plan = std::nullopt);

}  // namespace ds
