// The transformer runtime: a forward pass over new tokens with a KV cache, on the CPU reference.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "src/model.h"

namespace ds {

// Compute precision of the CPU reference: fp32, or fp64 (the oracle).
enum class DType { fp32, fp64 };
DType parse_dtype(const std::string& s);  // throws ds::Error naming the bad value
const char* dtype_name(DType d);

class Runtime {
 public:
  virtual ~Runtime() = default;
  // Runs `tokens` at positions pos, pos+1, ... (a batched prefill when there are several),
  // appends their keys/values to the cache, and writes one logits row per token into `logits`
  // (tokens.size() * vocab values; row r predicts the token after tokens[r]).
  // Throws ds::Error for an unknown token id or when the cache capacity would be exceeded.
  virtual void forward(std::span<const int32_t> tokens, int pos, std::vector<double>& logits) = 0;
  // How many positions the KV cache holds.
  virtual int capacity() const = 0;
  virtual const ModelConfig& config() const = 0;
};

// A CPU reference runtime. `capacity` positions of KV cache are allocated (at most the model's
// context length).
std::unique_ptr<Runtime> make_cpu_runtime(const Model& model, DType dtype, int capacity);

}  // namespace ds
