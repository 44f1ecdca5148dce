// Hand-built traces for diff tests (see trace_builder.h).
#include "tests/diff/trace_builder.h"

#include <stdexcept>

namespace ds::test {

void write_trace(const std::filesystem::path& path, const TraceSpec& spec) {
  trace::WriterOptions w;
  w.path = path;
  w.hidden_dtype = spec.hidden_dtype;
  w.topk = spec.topk;
  w.full_logits = spec.full_logits;
  w.force = true;
  trace::RunInfo info;
  info.tool_version = "test";
  info.config_json = spec.config_json;
  info.model_json = spec.model_json;
  trace::TraceWriter writer(w, info);
  for (size_t i = 0; i < spec.seqs.size(); ++i) {
    const SeqSpec& s = spec.seqs[i];
    const int seq = static_cast<int>(i);
    writer.begin_sequence(seq, s.prompt);
    int rows = s.generated.empty() ? 0 : s.rows();
    if (spec.keep_rows >= 0) rows = std::min(rows, spec.keep_rows);
    // Prefill: the prompt's rows and the first generated token; then one row per step.
    int r = 0;
    size_t next = 0;
    while (r < rows) {
      const int n = r == 0 ? std::min<int>(static_cast<int>(s.prompt.size()), rows) : 1;
      trace::StepRecord step;
      step.seq = seq;
      step.n_rows = n;
      for (const auto& site : s.site_order) {
        const auto& rows_of = s.hidden.at(site);
        trace::HiddenRows h;
        h.site = site;
        h.width = static_cast<int>(rows_of.at(0).size());
        for (int k = r; k < r + n; ++k)
          h.values.insert(h.values.end(), rows_of.at(k).begin(), rows_of.at(k).end());
        step.hidden.push_back(std::move(h));
      }
      if (!s.logits.empty()) {
        step.vocab = static_cast<int>(s.logits.at(0).size());
        for (int k = r; k < r + n; ++k)
          step.logits.insert(step.logits.end(), s.logits.at(k).begin(), s.logits.at(k).end());
      }
      // A prefill of the whole prompt chooses generated[0]; a partial one chooses nothing new.
      if (r + n >= static_cast<int>(s.prompt.size()) && next < s.generated.size()) {
        step.new_tokens.push_back(s.generated[next++]);
      }
      writer.append(std::move(step));
      r += n;
    }
    writer.end_sequence(seq, spec.complete ? s.stop_reason : "interrupted");
  }
  writer.append_kernels(spec.kernels);
  if (!writer.finish(spec.complete, spec.complete ? "finished" : "interrupted")) {
    throw std::runtime_error("write_trace: " + writer.error());
  }
}

}  // namespace ds::test
