// Model hyper-parameters, parsed from a Hugging Face config.json or a llama2.c header.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>

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
  int n_kv_heads = 0;  // < n_heads means grouped-query attention
  int head_dim = 0;    // usually dim / n_heads
  int vocab_size = 0;
  int max_seq_len = 0;  // max_position_embeddings: the context length
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

// The ranges validate_config() holds a config to (docs/cli.md, "Input limits"): every published
// Llama, Mistral and Qwen2 model with headroom (the largest today: Llama-3.1-405B, dim 16384,
// MLP 53248, 126 layers, 128 heads; vocabularies to 256000; contexts to 10M). With them every
// size derived from a config (tensor elements, bytes, q_dim) fits 64-bit arithmetic, and a
// header with a garbage number is refused before anything is allocated from it.
struct ConfigLimits {
  static constexpr int dim = 65536;          // hidden_size
  static constexpr int hidden_dim = 262144;  // intermediate_size
  static constexpr int n_layers = 1024;      // num_hidden_layers
  static constexpr int n_heads = 1024;       // num_attention_heads, num_key_value_heads
  static constexpr int head_dim = 1024;
  static constexpr int vocab_size = 1 << 22;   // 4194304
  static constexpr int max_seq_len = 1 << 24;  // max_position_embeddings, 16777216
};

// Parses a Hugging Face config.json (Llama, Mistral, Qwen2 families). `source` names the file in
// errors. Throws ds::Error for unknown architectures, missing or inconsistent fields.
ModelConfig parse_hf_config(const nlohmann::json& j, const std::string& source);

// Checks the invariants every loader relies on (sizes within ConfigLimits, heads dividing
// evenly, an even head_dim).
void validate_config(const ModelConfig& c, const std::string& source);

// One line for people: "llama dim=64 layers=5 heads=8/4 vocab=512 ctx=512".
std::string describe(const ModelConfig& c);

}  // namespace ds
