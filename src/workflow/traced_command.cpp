// Traced runs from the command line.
#include "src/workflow/traced_command.h"

#include <algorithm>

#include "src/console/command_line.h"
#include "src/console/interrupt.h"
#include "src/console/progress.h"
#include "src/experiment/run_metadata.h"
#include "src/experiment/trace_recorder.h"

namespace ds {

TracedRunResult run_traced_command(const std::string& label, const RunConfig& config,
                                   const std::string& probes, const trace::WriterOptions& writer,
                                   const LoadedModel& lm, const std::vector<Prompt>& prompts,
                                   const std::string& force_tokens, const std::string& kernels,
                                   std::string* write_error_detail,
                                   const std::optional<PlanSpec>& plan) {
  TracedRunOptions opt;
  opt.config = config;
  opt.sites = resolve_probes(probes, lm.model.config.n_layers);
  opt.writer = writer;
  // A top-K beyond the vocabulary (the default 20 on a small model) is recorded as what the trace
  // holds; `run` refuses an explicit --trace-topk above it before this.
  opt.writer.topk = std::min(writer.topk, lm.model.config.vocab_size);
  opt.info.tool_version = DRIFTSCOPE_VERSION;
  opt.kernels = kernels;
  opt.plan = plan;
  opt.info.config_json =
      traced_config_json(config, probes, opt.writer, force_tokens, kernels, plan);
  opt.info.model_json = model_identity_json(lm.model, lm.tokenizer.get(), lm.tokenizer_path);
  opt.info.env_json = environment_json(field_text(config, "device"));
  opt.info.command_line = invocation();
  opt.eos_id = stop_token_id(config, lm.format_stop_id());
  opt.should_stop = interrupt_requested;
  opt.write_error_detail = write_error_detail;
  Progress progress(label);
  opt.progress = [&](int seq, int n, int generated) {
    progress.update(seq, n, generated, config.max_new);
  };
  install_interrupt_handlers();
  TracedRunResult res = run_traced(lm.model, prompts, opt);
  progress.done();
  return res;
}

}  // namespace ds
