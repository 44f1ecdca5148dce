// The generation loop: prefill of the prompts (whole, chunked, or with the prefix from an earlier
// pass), then one token per step for every active sequence of a co-batched group.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "src/experiment/sampler.h"
#include "src/runtime/runtime.h"

namespace ds {

struct GenerateOptions {
  int max_new = 256;
  SamplingParams sampling;
  std::optional<int32_t>
      eos_id;             // the stop token (EOS; BOS for llama2.c): ends a sequence when generated
  uint64_t stream = 0;    // which prompt this is (single-sequence generate())
  int prefill_chunk = 0;  // 0 = each prompt in one pass; N = passes of N prompt tokens
  bool prefix_cache = false;  // prompt[:-1] computed alone in an earlier pass, the last token
                              // together with the batch (as a prefix-cache hit would)
  std::function<bool()> should_stop;  // polled between steps; true ends with "interrupted"
};

struct GenerateResult {
  std::vector<int32_t> tokens;  // prompt tokens then generated tokens
  int prompt_len = 0;
  std::string stop_reason;  // "eos", "max_new", "context", "forced" or "interrupted"
};

struct SequenceRequest {
  std::vector<int32_t> prompt;
  uint64_t stream = 0;  // sampling noise stream (the prompt's index), shared across configs
  // Teacher forcing: when set, these tokens are taken in order instead of the model's own
  // choices (its logits are still computed and tapped); generation ends after the last one
  // (stop reason "forced", or "eos" when it is EOS).
  std::optional<std::vector<int32_t>> forced = std::nullopt;
};

// Called when sequence `index` of the batch finished a step: all its rows of the step went
// through the forward pass, and `new_token` (absent only when max_new is 0) was chosen.
using StepCallback = std::function<void(int index, std::optional<int32_t> new_token,
                                        const std::vector<int32_t>& tokens)>;

// One part of a prefill pass: rows [begin, begin + count) of sequence `seq`'s prompt.
struct PrefillPart {
  int seq, begin, count;
};
using PrefillPass = std::vector<PrefillPart>;

// The prefill of prompts of these lengths generated together, as generate_batch runs it: every
// prompt whole (or in chunks of prefill_chunk rows) in common passes; with the prefix cache, each
// prompt's prefix alone first (as an earlier request computed it), then the last tokens together.
std::vector<PrefillPass> prefill_passes(const std::vector<int>& prompt_lens, int prefill_chunk,
                                        bool prefix_cache);

// Generates for every request together: request i uses KV-cache slot i (rt.slots() must be >=
// requests.size()), rows of all active sequences share each forward pass.
// Throws ds::Error for an empty prompt or one longer than the runtime's capacity.
std::vector<GenerateResult> generate_batch(Runtime& rt,
                                           const std::vector<SequenceRequest>& requests,
                                           const GenerateOptions& opt,
                                           const StepCallback& on_step = {});

// Called after each generated token with the whole sequence so far.
using TokenCallback = std::function<void(const std::vector<int32_t>& tokens)>;

// One sequence in slot 0 (stream opt.stream).
GenerateResult generate(Runtime& rt, std::span<const int32_t> prompt, const GenerateOptions& opt,
                        const TokenCallback& on_token = {});

// KV-cache positions a generation needs: prompt + max_new, capped at the context length.
int needed_capacity(int prompt_len, int max_new, int context_len);

// Throws ds::Error for an empty prompt or one longer than the context of `ctx` positions (checked
// by generation, and by a traced run before its trace is created).
void check_prompt_fits(std::span<const int32_t> prompt, int ctx);

}  // namespace ds
