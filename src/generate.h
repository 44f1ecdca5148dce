// The generation loop: batched prefill of the prompt, then one token per step until a stop.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "src/runtime.h"
#include "src/sampler.h"

namespace ds {

struct GenerateOptions {
  int max_new = 256;
  SamplingParams sampling;
  std::optional<int32_t> eos_id;  // stop when generated; none = never
  uint64_t stream = 0;            // which prompt this is (decorrelates sampling noise)
  std::function<bool()> should_stop;  // polled between steps; true ends with "interrupted"
};

struct GenerateResult {
  std::vector<int32_t> tokens;  // prompt tokens then generated tokens
  int prompt_len = 0;
  std::string stop_reason;      // "eos", "max_new", "context" or "interrupted"
};

// Called after each generated token with the whole sequence so far.
using TokenCallback = std::function<void(const std::vector<int32_t>& tokens)>;

// Throws ds::Error for an empty prompt or a prompt longer than the runtime's capacity.
GenerateResult generate(Runtime& rt, std::span<const int32_t> prompt, const GenerateOptions& opt,
                        const TokenCallback& on_token = {});

// KV-cache positions a generation needs: prompt + max_new, capped at the context length.
int needed_capacity(int prompt_len, int max_new, int context_len);

}  // namespace ds
