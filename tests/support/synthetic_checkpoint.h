// Test helper: writes a small Hugging Face model directory (config.json + safetensors, optionally
// sharded) with seeded random weights, and hands back the weights as the test holds them.
// It shares no code with the loaders: its own safetensors writer and its own bf16/f16 rounding.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "tests/support/ref_forward.h"
#include "tests/support/temp_dir.h"

namespace ds::test {

enum class StorageDtype { F32, BF16, F16 };

const char* storage_dtype_name(StorageDtype d);  // "F32", "BF16", "F16" (safetensors spelling)

// Rounds a float to the nearest value of the storage dtype, ties to even (identity for F32).
// Written here in terms of frexp/nearbyint, independent of common/float_formats.h.
double round_to_storage(float v, StorageDtype d);

struct SyntheticSpec {
  std::string architecture = "llama";  // model_type: "llama", "mistral", "qwen2"
  int dim = 64;
  int hidden = 96;
  int layers = 2;
  int heads = 4;
  int kv_heads = 2;
  int vocab = 101;
  int max_pos = 64;
  double rope_theta = 10000.0;
  double rms_norm_eps = 1e-5;
  std::optional<RefLlama3Scaling> rope_scaling;  // written as rope_type "llama3"
  bool tied = true;                              // tie_word_embeddings (no lm_head.weight written)
  bool qkv_bias = false;                         // always on for qwen2
  int sliding_window = 0;                        // mistral only; 0 writes null
  StorageDtype dtype = StorageDtype::F32;
  int shards = 1;  // 1: model.safetensors; n > 1: model-0000i-of-0000n + index
  uint32_t seed = 1;
};

// One tensor under its Hugging Face name, values already rounded to the storage dtype.
struct SyntheticTensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> values;
};

// Weights drawn from the spec's seed (w ~ U(-0.5,0.5)/sqrt(fan_in), norms ~ 1 + U(-0.1,0.1),
// biases ~ U(-0.5,0.5)), each rounded to the storage dtype, plus the oracle's view of the config.
struct SyntheticModel {
  RefConfig config;
  RefWeights weights;
};
SyntheticModel make_synthetic_model(const SyntheticSpec& spec);

// The weights under their Hugging Face names, in a fixed order (embed, layers, norm, lm_head).
std::vector<SyntheticTensor> hf_tensors(const SyntheticModel& m);

// config.json for the spec (model_type, hidden_size, ..., rope_scaling, tie_word_embeddings, ...).
nlohmann::json hf_config_json(const SyntheticSpec& spec);

// One .safetensors file: u64 LE header length, JSON header, data; values encoded in `dtype`
// (they must already be representable in it). Own writer, not ds::write_safetensors.
void write_safetensors_file(const std::filesystem::path& path,
                            const std::vector<SyntheticTensor>& tensors, StorageDtype dtype);

// config.json + model.safetensors (shards == 1), or shards + model.safetensors.index.json.
void write_hf_directory(const std::filesystem::path& dir, const nlohmann::json& config,
                        const std::vector<SyntheticTensor>& tensors, StorageDtype dtype,
                        int shards);

// make_synthetic_model + write_hf_directory into `dir` (created when missing).
SyntheticModel write_synthetic_checkpoint(const std::filesystem::path& dir,
                                          const SyntheticSpec& spec);

}  // namespace ds::test
