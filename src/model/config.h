// Model hyper-parameters, parsed from a Hugging Face config.json or a llama2.c header.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace ds {

// rope_scaling of type "llama3" (Llama-3.1): long wavelengths are slowed by `factor`,
// short ones kept, the band between interpolated.
struct RopeScaling {
  std::string type;  // "llama3"
  double factor = 1.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  double original_max_position_embeddings = 8192;
};

struct ModelConfig {
  std::string architecture;  // "llama", "mistral", "qwen2" (Hugging Face model_type)
  int dim = 0;               // hidden_size
  int hidden_dim = 0;        // intermediate_size (SwiGLU inner width)
  int n_layers = 0;
  int n_heads = 0;
  int n_kv_heads = 0;        // < n_heads means grouped-query attention
  int head_dim = 0;          // usually dim / n_heads
  int vocab_size = 0;
  int max_seq_len = 0;       // max_position_embeddings: the context length
  double rms_norm_eps = 1e-5;
  double rope_theta = 10000.0;
  std::optional<RopeScaling> rope_scaling;
  bool tied_embeddings = false;  // lm_head shares the embedding table
  bool qkv_bias = false;         // Qwen2: q/k/v projections carry a bias
  int sliding_window = 0;        // Mistral: attend to the last N positions only; 0 = unlimited
  std::optional<int> bos_id;
  std::optional<int> eos_id;

  int q_dim() const { return n_heads * head_dim; }
  int kv_dim() const { return n_kv_heads * head_dim; }
};

// Parses a Hugging Face config.json (Llama, Mistral, Qwen2 families). `source` names the file in
// errors. Throws ds::Error for unknown architectures, missing or inconsistent fields.
ModelConfig parse_hf_config(const nlohmann::json& j, const std::string& source);

// Checks the invariants every loader relies on (positive sizes, heads dividing evenly).
void validate_config(const ModelConfig& c, const std::string& source);

// One line for people: "llama dim=64 layers=5 heads=8/4 vocab=512 ctx=512".
std::string describe(const ModelConfig& c);

}  // namespace ds
