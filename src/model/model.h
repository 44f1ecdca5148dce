// A loaded model: its config and float32 weights in Hugging Face layout, from either format.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "src/model/config.h"
#include "src/model/weight_tensor.h"

namespace ds {

// Weights of one decoder layer; matrices are row-major [out_features, in_features] as in
// Hugging Face (y = x W^T). q/k rows are in the half-split RoPE layout. Float32 values stored as
// such in the file are mapped, not copied (weight_tensor.h).
struct LayerWeights {
  WeightTensor attn_norm;             // (dim)
  WeightTensor wq, wk, wv;            // (q_dim, dim), (kv_dim, dim), (kv_dim, dim)
  WeightTensor bq, bk, bv;            // (q_dim), (kv_dim), (kv_dim); empty without qkv_bias
  WeightTensor wo;                    // (dim, q_dim)
  WeightTensor mlp_norm;              // (dim)
  WeightTensor w_gate, w_up, w_down;  // (hidden_dim, dim), (hidden_dim, dim), (dim, hidden_dim)
};

struct ModelWeights {
  WeightTensor embed;  // (vocab, dim)
  std::vector<LayerWeights> layers;
  WeightTensor final_norm;  // (dim)
  WeightTensor lm_head;     // (vocab, dim); empty when tied to embed
};

enum class ModelFormat { HuggingFace, Llama2c };

struct Model {
  ModelConfig config;
  ModelWeights weights;
  ModelFormat format = ModelFormat::HuggingFace;
  std::filesystem::path path;                       // what the user named
  std::vector<std::filesystem::path> weight_files;  // the files the weights came from
  std::string weight_dtype;                         // "F32", "BF16", "F16" or "mixed"

  const WeightTensor& classifier() const {
    return weights.lm_head.empty() ? weights.embed : weights.lm_head;
  }
};

// Every weight tensor the model has, once, with a name for messages ("embed", "L3 wq", ...; absent
// biases left out; the classifier only when it is not the embedding).
std::vector<std::pair<std::string, const WeightTensor*>> named_tensors(const Model& model);

// Throws ds::Error naming the tensor and the element when a weight is NaN or infinite (a damaged
// checkpoint computes nothing meaningful, silently). load_model calls it.
void check_finite_weights(const Model& model);

// Every weight tensor the model has, once (absent biases left out; the classifier only when it
// is not the embedding).
std::vector<const WeightTensor*> model_tensors(const Model& model);

// Bytes of every weight tensor as the model holds it (mapped or owned, in its stored format).
uint64_t model_weight_bytes(const Model& model);

// Loads a Hugging Face directory (config.json + safetensors) or a llama2.c .bin file.
// Throws ds::Error with a hint for anything missing, malformed or inconsistent.
Model load_model(const std::filesystem::path& path);

Model load_hf_model(const std::filesystem::path& dir);
Model load_llama2c_model(const std::filesystem::path& bin);

// The config of the model at `path` (as load_model finds it) without reading its weights:
// config.json of a Hugging Face folder, the header of a llama2.c .bin. For the checks a command
// makes before anything runs (sweep's and zoom's configurations against the model). Throws as
// load_model does for a missing or malformed config.
ModelConfig read_model_config(const std::filesystem::path& path);
ModelConfig read_hf_config(const std::filesystem::path& dir);
ModelConfig read_llama2c_config(const std::filesystem::path& bin);

// The tokenizer that belongs to a model: tokenizer.json in a Hugging Face directory; for a
// llama2.c .bin, tokenizer.bin or the single tok*.bin beside it. Throws ds::Error when none.
std::filesystem::path find_tokenizer(const Model& model);
// The same for the model at `model` (a Hugging Face folder or a llama2.c .bin) of `format`,
// without loading it.
std::filesystem::path find_tokenizer(const std::filesystem::path& model, ModelFormat format);
// The format of the model at `path` as load_model tells it: a .bin file is llama2.c, anything
// else (a folder, its config.json or a .safetensors) Hugging Face.
ModelFormat model_format(const std::filesystem::path& path);

// Once a loader has mapped the weights and before anything reads them: throws ds::Error with both
// numbers when the `weight_bytes` the model holds (the mapped file's tensors, which every forward
// pass reads, and any copy made at load) cannot fit in the available memory
// (src/model/memory.h). A runtime checks its own copies and KV cache when it is made. `source`
// names the model, `held` says how the weights are held.
void check_load_memory(const ModelConfig& c, uint64_t weight_bytes, const std::string& held,
                       const std::string& source);

// Throws ds::Error "unknown token id" for an id outside [0, vocab_size).
void check_token_ids(std::span<const int32_t> ids, int vocab_size);

// The bundled default model (models/kjv-llama/kjv-llama.bin): found beside the executable's
// install tree or the source tree this binary was built from.
std::filesystem::path default_model_path();

}  // namespace ds
