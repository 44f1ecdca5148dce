// Traced run driver: one runtime, prompts in order, taps through a TraceRecorder.
#include "src/traced_run.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "src/runtime.h"
#include "src/trace_recorder.h"
#include "common/error.h"

namespace ds {

std::string traced_config_json(const RunConfig& config, const std::string& probes,
                               const trace::WriterOptions& writer) {
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(to_json(config));
  j["trace"] = {{"probes", probes},
                {"hidden_dtype", trace::hidden_dtype_name(writer.hidden_dtype)},
                {"topk", writer.topk},
                {"full_logits", writer.full_logits}};
  return j.dump();
}

TracedRunResult run_traced(const Model& model, const std::vector<Prompt>& prompts,
                           const TracedRunOptions& opt) {
  validate(opt.config);
  const ModelConfig& c = model.config;
  int longest = 0;
  for (const auto& p : prompts) {
    check_token_ids(p.ids, c.vocab_size);
    longest = std::max(longest, static_cast<int>(p.ids.size()));
  }
  trace::TraceWriter writer(opt.writer, opt.info);
  TraceRecorder recorder(writer, opt.sites);
  auto rt = make_cpu_runtime(model, compute_dtype(opt.config),
                             needed_capacity(longest, opt.config.max_new, c.max_seq_len));
  rt->set_tap_hook(&recorder);

  TracedRunResult result;
  bool stopped = false;
  for (size_t i = 0; i < prompts.size() && !stopped; ++i) {
    if (opt.should_stop && opt.should_stop()) break;
    const int seq = static_cast<int>(i);
    writer.begin_sequence(seq, prompts[i].ids);
    recorder.bind_slot(0, seq);
    GenerateOptions g;
    g.max_new = opt.config.max_new;
    g.sampling = opt.config.sampling();
    g.eos_id = opt.eos_id;
    g.stream = i;
    g.should_stop = opt.should_stop;
    GenerateResult r = generate(*rt, prompts[i].ids, g, [&](const std::vector<int32_t>& tokens) {
      recorder.commit(seq, {tokens.back()});
      if (opt.progress) {
        opt.progress(seq, static_cast<int>(prompts.size()),
                     static_cast<int>(tokens.size() - prompts[i].ids.size()));
      }
    });
    writer.end_sequence(seq, r.stop_reason);
    stopped = r.stop_reason == "interrupted";
    result.sequences.push_back(std::move(r));
  }
  result.complete = !stopped && result.sequences.size() == prompts.size();
  if (!writer.finish(result.complete, result.complete ? "finished" : "interrupted")) {
    throw Error("writing trace '" + opt.writer.path.string() + "' failed: " + writer.error(),
                "the trace keeps every step written before the failure (complete=0)");
  }
  return result;
}

}  // namespace ds
