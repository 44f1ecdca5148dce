// What a CPU runtime computes for a fixed sequence of passes, kept whole for bit comparisons:
// a prefill of 13 tokens, a chunk of 5, then 3 single-token decode steps (the GEMM's packed path,
// its in-register transposed path with a 4-row tile, and one-row decode), every site tapped.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "src/model/model.h"
#include "src/runtime/runtime.h"

namespace ds::test {

struct PassOutputs {
  std::vector<double> logits;                        // every pass, concatenated
  std::map<std::string, std::vector<float>> hidden;  // site -> rows
};

PassOutputs run_passes(const Model& m, const Numerics& nx);

// Every logit and every tapped value has the same bits (and the same sites).
bool same_bits(const PassOutputs& a, const PassOutputs& b);

}  // namespace ds::test
