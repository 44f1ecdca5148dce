// The generation loop over a Runtime: prefill plans, co-batched decode, stop rules.
#include "src/experiment/generate.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "common/error.h"

namespace ds {

int needed_capacity(int prompt_len, int max_new, int context_len) {
  // In 64-bit: --max-new 2147483647 plus the prompt must not wrap to a capacity of 1.
  const int64_t wanted = int64_t{prompt_len} + std::max(0, max_new);
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(context_len, wanted)));
}

void check_prompt_fits(std::span<const int32_t> prompt, int ctx) {
  if (prompt.empty()) {
    throw Error("the prompt is empty (no tokens to start from)",
                "give --prompt TEXT or --prompt-ids, or let the tokenizer add BOS");
  }
  if (static_cast<int>(prompt.size()) > ctx) {
    throw Error(fmt::format("the prompt has {} tokens, more than the context of {} positions",
                            prompt.size(), ctx),
                "shorten the prompt");
  }
}

namespace {

// One prompt of the batch while it is generated.
struct Active {
  int index;
  GenerateResult res;
  int generated = 0;
  bool done = false;
};

void check_options(const GenerateOptions& opt, size_t n_requests, int slots) {
  if (opt.max_new < 0) {
    throw Error(fmt::format("max_new {} is negative", opt.max_new), "--max-new takes N >= 0");
  }
  if (opt.prefill_chunk < 0) {
    throw Error(fmt::format("prefill_chunk {} is negative", opt.prefill_chunk),
                "--prefill-chunk takes 0 (whole prompt) or N >= 1");
  }
  validate(opt.sampling);
  if (static_cast<int>(n_requests) > slots) {
    throw Error(fmt::format("{} sequences for a runtime with {} slots", n_requests, slots));
  }
}

// Each request as a sequence holding its prompt; refuses an empty prompt or one over `ctx`.
std::vector<Active> start_sequences(const std::vector<SequenceRequest>& requests, int ctx) {
  std::vector<Active> seqs;
  for (size_t i = 0; i < requests.size(); ++i) {
    const auto& p = requests[i].prompt;
    check_prompt_fits(p, ctx);
    Active a{static_cast<int>(i), {}, 0, false};
    a.res.tokens = p;
    a.res.prompt_len = static_cast<int>(p.size());
    a.res.stop_reason = "max_new";
    seqs.push_back(std::move(a));
  }
  return seqs;
}

// The sequences' prefill passes (prefill_passes of their prompt lengths), by sequence index.
std::vector<PrefillPass> plan_prefill(const std::vector<Active>& seqs, const GenerateOptions& opt) {
  std::vector<int> lens;
  for (const auto& s : seqs) lens.push_back(s.res.prompt_len);
  return prefill_passes(lens, opt.prefill_chunk, opt.prefix_cache);
}

// The state of one co-batched generation: forward passes over the runtime, then the choice of
// each completed sequence's next token and its stop rules.
class BatchGeneration {
 public:
  BatchGeneration(Runtime& rt, const std::vector<SequenceRequest>& requests,
                  const GenerateOptions& opt, const StepCallback& on_step)
      : rt_(rt),
        requests_(requests),
        opt_(opt),
        on_step_(on_step),
        ctx_(std::min(rt.config().max_seq_len, rt.capacity())),
        seqs_(start_sequences(requests, ctx_)),
        last_row_(seqs_.size(), 0) {}

  const std::vector<Active>& sequences() const { return seqs_; }

  // One prefill pass; the sequences whose prompt it completes take their first step.
  void prefill(const PrefillPass& pass) {
    rows_.clear();
    std::vector<int> completed;
    for (const PrefillPart& part : pass) {
      const auto& toks = seqs_[part.seq].res.tokens;
      for (int r = part.begin; r < part.begin + part.count; ++r) {
        rows_.push_back({part.seq, r, toks[r]});
      }
      last_row_[part.seq] = rows_.size() - 1;
      if (part.begin + part.count == seqs_[part.seq].res.prompt_len) completed.push_back(part.seq);
    }
    pass_ = &rt_.forward(rows_);
    finish_step(completed);
  }

  // One decode pass over every active sequence; false when none is left or a stop was asked.
  bool decode() {
    std::vector<int> active;
    for (const auto& s : seqs_) {
      if (!s.done) active.push_back(s.index);
    }
    if (active.empty()) return false;
    if (opt_.should_stop && opt_.should_stop()) {
      for (int i : active) seqs_[i].res.stop_reason = "interrupted";
      return false;
    }
    rows_.clear();
    for (int i : active) {
      const auto& toks = seqs_[i].res.tokens;
      rows_.push_back({i, static_cast<int>(toks.size()) - 1, toks.back()});
      last_row_[i] = rows_.size() - 1;
    }
    pass_ = &rt_.forward(rows_);
    finish_step(active);
    return true;
  }

  std::vector<GenerateResult> results() {
    std::vector<GenerateResult> out;
    for (auto& s : seqs_) out.push_back(std::move(s.res));
    return out;
  }

 private:
  // After a pass: every sequence whose step completed takes its next token (sampled, or
  // forced); the noise is drawn for (stream, number of tokens generated so far).
  void finish_step(const std::vector<int>& completed) {
    for (int i : completed) {
      Active& s = seqs_[i];
      const auto& forced = requests_[i].forced;
      if (forced ? forced->empty() : opt_.max_new == 0) {
        if (on_step_) on_step_(i, std::nullopt, s.res.tokens);
        s.done = true;
        continue;
      }
      const int32_t next = forced ? (*forced)[s.generated] : sample(s, i);
      s.res.tokens.push_back(next);
      ++s.generated;
      if (on_step_) on_step_(i, next, s.res.tokens);
      apply_stop_rules(s, next, forced);
    }
  }

  // Greedy without a repetition penalty needs only the row's argmax (which the CUDA backend
  // takes on the device); anything else reads the whole row. Both choose as sample_next.
  int32_t sample(const Active& s, int i) const {
    const SamplingParams& p = opt_.sampling;
    const int row = static_cast<int>(last_row_[i]);
    if (p.temperature == 0.0 && p.repetition_penalty == 1.0) {
      return pass_->argmax(row, p.highest_id_ties);
    }
    return sample_next(pass_->row(row), p, requests_[i].stream, s.generated, s.res.tokens);
  }

  void apply_stop_rules(Active& s, int32_t next,
                        const std::optional<std::vector<int32_t>>& forced) {
    if (opt_.eos_id && next == *opt_.eos_id) {
      s.res.stop_reason = "eos";
      s.done = true;
    } else if (forced && s.generated == static_cast<int>(forced->size())) {
      s.res.stop_reason = "forced";
      s.done = true;
    } else if (!forced && s.generated == opt_.max_new) {
      s.done = true;
    } else if (static_cast<int>(s.res.tokens.size()) >= ctx_) {
      s.res.stop_reason = "context";  // the sequence fills the context
      s.done = true;
    }
  }

  Runtime& rt_;
  const std::vector<SequenceRequest>& requests_;
  const GenerateOptions& opt_;
  const StepCallback& on_step_;
  const int ctx_;
  std::vector<Active> seqs_;
  std::vector<size_t> last_row_;  // index of each sequence's last logits row in the pass
  std::vector<BatchRow> rows_;
  PassLogits* pass_ = nullptr;  // the last pass's logits
};

}  // namespace

namespace {

// Appends passes covering rows [b, e) of each listed sequence, at most `prefill_chunk` rows
// per sequence and pass (0 = the longest range in one pass).
void plan_ranges(std::vector<PrefillPass>& passes, int prefill_chunk, const std::vector<int>& which,
                 const std::vector<std::pair<int, int>>& ranges) {
  int longest = 0;
  for (const auto& [b, e] : ranges) longest = std::max(longest, e - b);
  const int chunk = prefill_chunk > 0 ? prefill_chunk : std::max(1, longest);
  for (int off = 0; off < longest; off += chunk) {
    PrefillPass pass;
    for (size_t k = 0; k < which.size(); ++k) {
      const auto [b, e] = ranges[k];
      const int cb = b + off, ce = std::min(e, b + off + chunk);
      if (cb < ce) pass.push_back({which[k], cb, ce - cb});
    }
    if (!pass.empty()) passes.push_back(std::move(pass));
  }
}

}  // namespace

std::vector<PrefillPass> prefill_passes(const std::vector<int>& prompt_lens, int prefill_chunk,
                                        bool prefix_cache) {
  std::vector<PrefillPass> passes;
  std::vector<int> all;
  std::vector<std::pair<int, int>> rows;
  for (size_t i = 0; i < prompt_lens.size(); ++i) {
    const int len = prompt_lens[i], seq = static_cast<int>(i);
    if (prefix_cache && len > 1) plan_ranges(passes, prefill_chunk, {seq}, {{0, len - 1}});
    all.push_back(seq);
    rows.push_back({prefix_cache ? len - 1 : 0, len});
  }
  plan_ranges(passes, prefill_chunk, all, rows);
  return passes;
}

std::vector<GenerateResult> generate_batch(Runtime& rt,
                                           const std::vector<SequenceRequest>& requests,
                                           const GenerateOptions& opt,
                                           const StepCallback& on_step) {
  check_options(opt, requests.size(), rt.slots());
  BatchGeneration gen(rt, requests, opt, on_step);
  for (const PrefillPass& pass : plan_prefill(gen.sequences(), opt)) gen.prefill(pass);
  while (gen.decode()) {
  }
  return gen.results();
}

GenerateResult generate(Runtime& rt, std::span<const int32_t> prompt, const GenerateOptions& opt,
                        const TokenCallback& on_token) {
  std::vector<SequenceRequest> req{
      {std::vector<int32_t>(prompt.begin(), prompt.end()), opt.stream}};
  auto res = generate_batch(rt, req, opt,
                            [&](int, std::optional<int32_t> t, const std::vector<int32_t>& tokens) {
                              if (t && on_token) on_token(tokens);
                            });
  return std::move(res[0]);
}

}  // namespace ds
