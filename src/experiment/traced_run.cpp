// Traced run driver: one runtime, prompts in order, taps through a TraceRecorder.
#include "src/experiment/traced_run.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>

#include "common/error.h"
#include "src/experiment/certify.h"
#include "src/experiment/intrusive_tap.h"
#include "src/experiment/trace_recorder.h"
#include "src/runtime/cuda_loader.h"
#include "src/runtime/runtime.h"
#include "trace/kernel_recorder.h"
#include "trace/swmr_file.h"

namespace ds {

std::string traced_config_json(const RunConfig& config, const std::string& probes,
                               const trace::WriterOptions& writer, const std::string& force_tokens,
                               const std::string& kernels, const std::optional<PlanSpec>& plan) {
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(to_json(config));
  j["trace"] = {{"probes", probes},
                {"hidden_dtype", trace::hidden_dtype_name(writer.hidden_dtype)},
                {"topk", writer.topk},
                {"full_logits", writer.full_logits},
                {"kernels", kernels},
                {"force_tokens", force_tokens.empty() ? nlohmann::ordered_json()
                                                      : nlohmann::ordered_json(force_tokens)},
                {"compression", trace::compression_name(writer.deflate_level)}};
  if (!intrusive_tap_env_text().empty()) j["test_intrusive_tap"] = intrusive_tap_env_text();
  if (plan) j["plan"] = nlohmann::ordered_json::parse(plan_spec_json(*plan));
  return j.dump();
}

bool records_kernels(const std::string& kernels, Device device) {
  if (kernels == "off") return false;
  if (kernels == "auto") return device == Device::cuda && cuda_module().kernel_records_built();
  if (kernels != "on") {
    throw Error("invalid kernels '" + kernels + "'", "--kernels takes auto, on or off");
  }
  if (device != Device::cuda) {
    throw Error("kernel records need --device cuda (the CPU reference launches no kernels)",
                "use --kernels auto or off on the CPU");
  }
  if (!cuda_module().kernel_records_built()) {
    throw Error("kernel records need CUPTI, which this build does not have",
                "rebuild with the CUDA toolkit's CUPTI, or use --kernels off");
  }
  return true;
}

namespace {

// Checks every prompt (token ids, context) before the trace exists; returns the KV-cache positions
// the longest sequence needs, capped at the context (--max-new 2147483647 must not wrap).
int checked_capacity(const std::vector<Prompt>& prompts, const ModelConfig& c, int max_new) {
  int longest = 0;
  for (const auto& p : prompts) {
    check_token_ids(p.ids, c.vocab_size);
    check_prompt_fits(p.ids, c.max_seq_len);
    if (p.forced) check_token_ids(*p.forced, c.vocab_size);
    const int extra = p.forced ? static_cast<int>(p.forced->size()) : max_new;
    longest =
        std::max(longest, needed_capacity(static_cast<int>(p.ids.size()), extra, c.max_seq_len));
  }
  return longest;
}

}  // namespace

namespace {

// Every prompt, `batch` at a time in prompt order, as a traced run generates them: begin(first,
// last) before a group, step(seq, token, tokens) after each step of one of its sequences,
// end(first, results) after it. Returns whether a sequence was interrupted (nothing more starts
// then).
template <typename Begin, typename Step, typename End>
bool generate_groups(Runtime& rt, const std::vector<Prompt>& prompts, int batch,
                     const GenerateOptions& g, Begin begin, Step step, End end) {
  bool stopped = false;
  for (size_t first = 0; first < prompts.size() && !stopped; first += batch) {
    if (g.should_stop && g.should_stop()) return true;
    const size_t last = std::min(prompts.size(), first + batch);
    std::vector<SequenceRequest> group;
    for (size_t i = first; i < last; ++i) group.push_back({prompts[i].ids, i, prompts[i].forced});
    begin(first, last);
    auto results = generate_batch(
        rt, group, g,
        [&](int slot, std::optional<int32_t> token, const std::vector<int32_t>& tokens) {
          step(static_cast<int>(first) + slot, token, tokens);
        });
    for (const auto& r : results) stopped |= r.stop_reason == "interrupted";
    end(first, results);
  }
  return stopped;
}

// The digests of a pass: each group's slots bound to its sequences, each chosen token kept.
struct DigestSteps {
  DigestingRuntime& rt;
  void begin(size_t first, size_t last) const {
    for (size_t i = first; i < last; ++i)
      rt.bind_slot(static_cast<int>(i - first), static_cast<int>(i));
  }
  void step(int seq, std::optional<int32_t> token, const std::vector<int32_t>& tokens) const {
    if (token) rt.chose(seq, static_cast<int>(tokens.size()) - 2, *token);
  }
};

}  // namespace

TracedRunResult run_traced(const Model& model, const std::vector<Prompt>& prompts,
                           const TracedRunOptions& opt) {
  validate(opt.config);
  validate_for_model(opt.config, model.config);
  trace::check_trace_target(opt.writer.path, opt.writer.force);  // again when it is written
  const ModelConfig& c = model.config;
  const int longest = checked_capacity(prompts, c, opt.config.max_new);
  std::unique_ptr<trace::KernelRecorder> kernels;
  if (records_kernels(opt.kernels, opt.config.device)) {
    kernels = cuda_module().make_kernel_recorder();
  }
  // the runtime (its memory and knob checks) before the trace: a refusal leaves no file
  const int batch = std::min<int>(opt.config.batch, std::max<size_t>(1, prompts.size()));
  auto rt =
      make_configured_runtime(model, opt.config, needed_capacity(longest, 0, c.max_seq_len), batch);
  // every pass series starts from a fresh copy of the plan (its decisions may count passes)
  auto fresh_plan = [&] {
    return opt.plan ? make_plan(*opt.plan, opt.config, c.n_layers)
                    : NumericsPlan(numerics(opt.config));
  };
  if (opt.plan) rt->set_plan(fresh_plan());
  check_intrusive_tap(c.n_layers);
  std::unique_ptr<TapHook> intrusive;  // test-only: a tap that changes what it is handed
  GenerateOptions g;
  g.max_new = opt.config.max_new;
  g.sampling = opt.config.sampling();
  g.eos_id = opt.eos_id;
  g.prefill_chunk = opt.config.prefill_chunk;
  g.prefix_cache = opt.config.prefix_cache;
  g.should_stop = opt.should_stop;
  // run --certify: the untapped pass first (no hook: nothing is handed over), its digests kept
  std::optional<DigestingRuntime> untapped, tapped;
  if (opt.certify) {
    untapped.emplace(*rt);
    const DigestSteps u{*untapped};
    generate_groups(
        *untapped, prompts, batch, g, [&](size_t f, size_t l) { u.begin(f, l); },
        [&](int q, std::optional<int32_t> t, const std::vector<int32_t>& ts) { u.step(q, t, ts); },
        [](size_t, const std::vector<GenerateResult>&) {});
    rt->set_plan(fresh_plan());
    tapped.emplace(*rt);
    tapped->compare_with(&*untapped);
  }
  Runtime& run = tapped ? static_cast<Runtime&>(*tapped) : *rt;
  trace::WriterOptions wo = opt.writer;
  for (const auto& p : prompts) wo.planned_prompts.push_back(p.ids);
  for (const auto& site : opt.sites) wo.planned_sites.emplace_back(site, c.dim);
  wo.planned_vocab = c.vocab_size;
  std::optional<trace::TraceWriter> made;
  try {
    made.emplace(wo, opt.info);
  } catch (const trace::TraceWriteError& e) {
    if (opt.write_error_detail != nullptr) *opt.write_error_detail = e.detail();
    throw;
  }
  trace::TraceWriter& writer = *made;
  TraceRecorder recorder(writer, opt.sites);
  intrusive = intrusive_tap(recorder, c.n_layers);
  run.set_tap_hook(intrusive ? intrusive.get() : &recorder);
  run.set_kernel_recorder(kernels.get());
  int commits = 0;
  auto drain_kernels = [&] {  // into the trace every 256 tokens and after each group
    if (kernels) writer.append_kernels(kernels->drain());
  };
  const std::optional<DigestSteps> t =
      tapped ? std::optional<DigestSteps>(DigestSteps{*tapped}) : std::nullopt;

  TracedRunResult result;
  const bool stopped = generate_groups(
      run, prompts, batch, g,
      [&](size_t first, size_t last) {
        for (size_t i = first; i < last; ++i) {
          writer.begin_sequence(static_cast<int>(i), prompts[i].ids);
          recorder.bind_slot(static_cast<int>(i - first), static_cast<int>(i));
        }
        if (t) t->begin(first, last);
      },
      [&](int seq, std::optional<int32_t> token, const std::vector<int32_t>& tokens) {
        recorder.commit(seq, token ? std::vector<int32_t>{*token} : std::vector<int32_t>{});
        if (t) t->step(seq, token, tokens);
        if (++commits % 256 == 0) drain_kernels();
        if (opt.progress) {
          opt.progress(seq, static_cast<int>(prompts.size()),
                       static_cast<int>(tokens.size() - prompts[seq].ids.size()));
        }
      },
      [&](size_t first, std::vector<GenerateResult>& results) {
        drain_kernels();
        for (size_t k = 0; k < results.size(); ++k) {
          writer.end_sequence(static_cast<int>(first + k), results[k].stop_reason);
          result.sequences.push_back(std::move(results[k]));
        }
      });
  result.complete = !stopped && result.sequences.size() == prompts.size();
  if (tapped && result.complete) {
    int64_t ulps = 0;
    if (const auto& at = tapped->first_differing()) {  // the untapped row's values, once more
      rt->set_tap_hook(nullptr);
      rt->set_kernel_recorder(nullptr);
      rt->set_plan(fresh_plan());
      DigestingRuntime again(*rt);
      again.capture(at->first, at->second);
      const DigestSteps a{again};
      generate_groups(
          again, prompts, batch, g, [&](size_t f, size_t l) { a.begin(f, l); },
          [](int, std::optional<int32_t>, const std::vector<int32_t>&) {},
          [](size_t, const std::vector<GenerateResult>&) {});
      ulps = logits_ulps(again.kept_row(), tapped->kept_row(), opt.config.dtype == DType::fp64);
    }
    std::vector<int> prompt_lens;
    for (const auto& p : prompts) prompt_lens.push_back(static_cast<int>(p.ids.size()));
    writer.set_certificate(make_certificate(*untapped, *tapped, prompt_lens, ulps));
  }
  if (!writer.finish(result.complete, result.complete ? "finished" : "interrupted")) {
    if (opt.write_error_detail != nullptr) *opt.write_error_detail = writer.error_detail();
    throw Error("writing trace '" + opt.writer.path.string() + "' failed: " + writer.error(),
                "the trace keeps every step written before the failure (complete=0)");
  }
  return result;
}

}  // namespace ds
