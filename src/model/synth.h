// Synthetic checkpoints of real model shapes (Llama-2-7B, Llama-3-8B, Qwen2-7B, Mistral-7B, ...)
// with seeded random weights, written as Hugging Face directories for benchmarks at real size.
// The values mean nothing; shapes, dtypes and bytes are those of the real models.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/number_format.h"
#include "src/model/config.h"

namespace ds {

struct SynthShape {
  std::string name;  // "llama2-7b", ...
  ModelConfig config;
};

// Every known shape.
const std::vector<SynthShape>& synth_shapes();
// Throws ds::Error listing the known names.
const SynthShape& synth_shape(const std::string& name);
// Number of parameters of a config (embedding, layers, final norm, untied lm_head).
int64_t parameter_count(const ModelConfig& c);

// The tensor format of --dtype NAME (bf16, f16 or f32: the number-format table's names). Throws
// ds::Error for any other.
NumberFormat parse_synth_dtype(const std::string& name);

struct SynthOptions {
  NumberFormat dtype = NumberFormat::bf16;  // bf16 | f16 | f32 (parse_synth_dtype)
  uint64_t seed = 0;
  int layers = 0;                   // 0 = the shape's; fewer for quick benchmarks
  int64_t shard_bytes = 4ll << 30;  // larger checkpoints are sharded with an index
  bool force = false;
  std::function<void(uint64_t written, uint64_t total)> progress;  // bytes, after every block
  // Asked after every block; true (Ctrl-C, SIGTERM) stops the write: see SynthInterrupted.
  std::function<bool()> should_stop;
};

// Thrown by write_synthetic_checkpoint when should_stop said so: every file it had begun or
// written is removed (its hidden ".creating" files and the shards of this invocation), so the
// next synth into the folder finds it as it was (or without the files an earlier --force replaced).
struct SynthInterrupted : Error {
  SynthInterrupted()
      : Error("synth interrupted: the checkpoint was not written", "run synth again to write it") {}
};

// Writes config.json and model.safetensors (or shards + model.safetensors.index.json), streaming
// tensor by tensor so memory stays small whatever the size. Weights ~ U(-a, a) with std 0.02,
// norms 1, biases 0, each tensor from its own seeded stream.
void write_synthetic_checkpoint(const SynthShape& shape, const SynthOptions& opt,
                                const std::filesystem::path& dir);

}  // namespace ds
