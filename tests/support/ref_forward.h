// Test oracle: a plain fp64 forward pass of Llama / Mistral / Qwen2, written from the Hugging Face
// modeling code (LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM), independent of src/ and
// kernels/. It takes the whole sequence at once (no KV cache) and returns logits for every
// position.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace ds::test {

// rope_scaling {"rope_type": "llama3", ...} as in transformers' _compute_llama3_parameters.
struct RefLlama3Scaling {
  double factor = 8.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  double original_max_position_embeddings = 8192.0;
};

struct RefConfig {
  std::string architecture = "llama";  // "llama", "mistral" or "qwen2"
  int dim = 0;                         // hidden_size
  int hidden = 0;                      // intermediate_size
  int layers = 0;                      // num_hidden_layers
  int heads = 0;                       // num_attention_heads
  int kv_heads = 0;                    // num_key_value_heads
  int vocab = 0;                       // vocab_size
  double rms_norm_eps = 1e-5;
  double rope_theta = 10000.0;
  std::optional<RefLlama3Scaling> rope_scaling;
  bool tied = false;       // tie_word_embeddings: lm_head is the embedding table
  bool qkv_bias = false;   // q/k/v projections carry a bias (Qwen2)
  int sliding_window = 0;  // Mistral: key k is visible to query q only when q - k < window; 0 = off

  int head_dim() const { return dim / heads; }
};

// Weights as float values (what the checkpoint holds after storage rounding); matrices are
// row-major [out_features, in_features] as in nn.Linear (y = x W^T + b).
struct RefLayer {
  std::vector<float> input_layernorm;           // (dim)
  std::vector<float> q_proj, k_proj, v_proj;    // (heads*hd, dim), (kv_heads*hd, dim) x2
  std::vector<float> q_bias, k_bias, v_bias;    // empty without qkv_bias
  std::vector<float> o_proj;                    // (dim, heads*hd)
  std::vector<float> post_attention_layernorm;  // (dim)
  std::vector<float> gate_proj, up_proj;        // (hidden, dim)
  std::vector<float> down_proj;                 // (dim, hidden)
};

struct RefWeights {
  std::vector<float> embed_tokens;  // (vocab, dim)
  std::vector<RefLayer> layers;
  std::vector<float> norm;     // (dim)
  std::vector<float> lm_head;  // (vocab, dim); unused when tied
};

// inv_freq[i] = theta^(-2i/head_dim), i < head_dim/2, then the llama3 rule when configured.
std::vector<double> ref_rope_inv_freq(const RefConfig& c);

// Logits for tokens[0..T-1] at positions 0..T-1: (T, vocab), row t predicts tokens[t+1].
// With layer_out, also each layer's output residual stream, (T, dim) per layer.
std::vector<double> ref_forward(const RefConfig& c, const RefWeights& w,
                                std::span<const int32_t> tokens,
                                std::vector<std::vector<double>>* layer_out = nullptr);

}  // namespace ds::test
