// Choosing the next token from a logits row: greedy (ties to the lowest id) or seeded sampling.
#pragma once

#include <cstdint>
#include <span>

#include "src/runtime/pass_logits.h"

namespace ds {

struct SamplingParams {
  double temperature = 0.0;  // 0 = greedy
  double top_p = 1.0;  // nucleus: smallest prefix of the sorted distribution with mass >= top_p
  int top_k = 0;       // 0 = no limit
  uint64_t seed = 0;
  bool highest_id_ties = false;     // greedy ties: lowest id (default) or highest id
  double repetition_penalty = 1.0;  // Hugging Face rule on tokens already in the sequence
};

// Greedy argmax (greedy_argmax); among equal maxima the lowest id wins (or the highest, with
// highest_id).
int32_t argmax_lowest_id(std::span<const double> logits);
int32_t argmax(std::span<const double> logits, bool highest_id);

// The uniform number in [0,1) that sampling uses for (seed, stream, step): a pure function, so two
// runs with the same seed draw the same noise at the same (prompt, step) whatever else differs.
double sampling_uniform(uint64_t seed, uint64_t stream, uint64_t step);

// Picks the next token. First the repetition penalty (when != 1) on every id in `history`:
// logit / penalty when positive, logit * penalty otherwise. temperature 0: greedy with the tie
// rule. Otherwise: p = softmax(logits / temperature) in double; keep the top_k most probable
// (ties by lower id), then the smallest prefix whose mass reaches top_p; renormalise; return the
// first id whose cumulative mass exceeds u * total, with u = sampling_uniform(seed, stream, step).
int32_t sample_next(std::span<const double> logits, const SamplingParams& params, uint64_t stream,
                    uint64_t step, std::span<const int32_t> history = {});

// Throws ds::Error naming the field when a parameter is out of range.
void validate(const SamplingParams& params);

}  // namespace ds
