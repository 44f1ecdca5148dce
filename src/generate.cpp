// The generation loop over a Runtime.
#include "src/generate.h"

#include <algorithm>

#include <fmt/format.h>

#include "common/error.h"

namespace ds {

int needed_capacity(int prompt_len, int max_new, int context_len) {
  return std::max(1, std::min(context_len, prompt_len + std::max(0, max_new)));
}

GenerateResult generate(Runtime& rt, std::span<const int32_t> prompt, const GenerateOptions& opt,
                        const TokenCallback& on_token) {
  if (prompt.empty()) {
    throw Error("the prompt is empty (no tokens to start from)",
                "give --prompt TEXT or --prompt-ids, or let the tokenizer add BOS");
  }
  if (opt.max_new < 0) {
    throw Error(fmt::format("max_new {} is negative", opt.max_new), "--max-new takes N >= 0");
  }
  validate(opt.sampling);
  const int ctx = rt.config().max_seq_len;
  if (static_cast<int>(prompt.size()) > std::min(ctx, rt.capacity())) {
    throw Error(fmt::format("the prompt has {} tokens, more than the context of {} positions",
                            prompt.size(), std::min(ctx, rt.capacity())),
                "shorten the prompt");
  }
  GenerateResult res;
  res.tokens.assign(prompt.begin(), prompt.end());
  res.prompt_len = static_cast<int>(prompt.size());
  res.stop_reason = "max_new";
  const int V = rt.config().vocab_size;
  std::vector<double> logits;
  rt.forward(prompt, 0, logits);  // batched prefill
  for (int step = 0; step < opt.max_new; ++step) {
    std::span<const double> last(logits.data() + logits.size() - V, V);
    const int32_t next = sample_next(last, opt.sampling, opt.stream, step);
    res.tokens.push_back(next);
    if (on_token) on_token(res.tokens);
    if (opt.eos_id && next == *opt.eos_id) {
      res.stop_reason = "eos";
      break;
    }
    if (step + 1 == opt.max_new) break;
    if (opt.should_stop && opt.should_stop()) {
      res.stop_reason = "interrupted";
      break;
    }
    if (static_cast<int>(res.tokens.size()) >= rt.capacity()) {  // the sequence fills the context
      res.stop_reason = "context";
      break;
    }
    const int pos = static_cast<int>(res.tokens.size()) - 1;
    rt.forward(std::span<const int32_t>(&res.tokens.back(), 1), pos, logits);
  }
  return res;
}

}  // namespace ds
