// How much memory a model needs on this machine, computed from its config before anything is
// allocated, and a refusal with both numbers when it does not fit.
#pragma once

#include <cstdint>
#include <string>

#include "src/model/config.h"

namespace ds {

// Bytes of the weights of `c` at `value_bytes` a value (4 for float32, 2 for bf16 / fp16): what
// a loaded model holds, the weights being used where they lie in the file (src/model/model.h).
uint64_t weight_bytes(const ModelConfig& c, int value_bytes);

// Bytes of the KV cache per position and sequence with `elem_bytes` per value (keys and values
// of every layer).
uint64_t kv_bytes_per_token(const ModelConfig& c, int elem_bytes);

// Memory available to this process now: /proc/meminfo MemAvailable, or the environment variable
// DRIFTSCOPE_MEM_AVAILABLE (bytes; a test hook, documented in docs/cli.md). 0 = unknown.
uint64_t available_memory_bytes();

// Throws ds::Error "<what> needs X; Y is available" with `hint` when `needed` exceeds the
// available memory (never when that is unknown).
void check_memory(const std::string& what, uint64_t needed, const std::string& hint);

// "1.0 MiB", "28.4 GiB", "3.2 TiB".
std::string format_bytes(uint64_t bytes);

}  // namespace ds
