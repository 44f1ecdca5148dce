// Parsing and validation of model hyper-parameters (Hugging Face config.json).
#include "src/model/config.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "common/error.h"

namespace ds {
namespace {

int get_int(const nlohmann::json& j, const char* key, const std::string& source) {
  if (!j.contains(key) || !j[key].is_number_integer()) {
    throw Error(fmt::format("{}: missing or non-integer field '{}'", source, key),
                "a Hugging Face config.json of a Llama, Mistral or Qwen2 model has it");
  }
  return j[key].get<int>();
}

template <typename V>
V get_or(const nlohmann::json& j, const char* key, V fallback) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  return j[key].get<V>();
}

std::optional<int> get_token_id(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  if (j[key].is_array()) {  // Llama-3 lists several EOS ids; the first is the primary one
    if (j[key].empty()) return std::nullopt;
    return j[key][0].get<int>();
  }
  return j[key].get<int>();
}

std::optional<RopeScaling> parse_rope_scaling(const nlohmann::json& j, const std::string& source) {
  if (!j.contains("rope_scaling") || j["rope_scaling"].is_null()) return std::nullopt;
  const auto& r = j["rope_scaling"];
  std::string type = get_or<std::string>(r, "rope_type", get_or<std::string>(r, "type", ""));
  if (type == "default") return std::nullopt;
  if (type != "llama3") {
    throw Error(fmt::format("{}: unsupported rope_scaling type '{}'", source, type),
                "supported: llama3 (Llama-3.1); remove rope_scaling only if the model was "
                "trained without it");
  }
  RopeScaling s;
  s.type = type;
  s.factor = get_or<double>(r, "factor", 8.0);
  s.low_freq_factor = get_or<double>(r, "low_freq_factor", 1.0);
  s.high_freq_factor = get_or<double>(r, "high_freq_factor", 4.0);
  s.original_max_position_embeddings =
      get_or<double>(r, "original_max_position_embeddings", 8192.0);
  if (s.factor <= 0 || s.high_freq_factor <= s.low_freq_factor) {
    throw Error(fmt::format("{}: rope_scaling needs factor > 0 and high_freq_factor > "
                            "low_freq_factor", source));
  }
  return s;
}

}  // namespace

ModelConfig parse_hf_config(const nlohmann::json& j, const std::string& source) {
  if (!j.is_object()) throw Error(fmt::format("{}: not a JSON object", source));
  ModelConfig c;
  c.architecture = get_or<std::string>(j, "model_type", "");
  if (c.architecture != "llama" && c.architecture != "mistral" && c.architecture != "qwen2") {
    throw Error(fmt::format("{}: unknown architecture '{}'", source, c.architecture),
                "supported model_type values: llama, mistral, qwen2");
  }
  c.dim = get_int(j, "hidden_size", source);
  c.hidden_dim = get_int(j, "intermediate_size", source);
  c.n_layers = get_int(j, "num_hidden_layers", source);
  c.n_heads = get_int(j, "num_attention_heads", source);
  c.n_kv_heads = get_or<int>(j, "num_key_value_heads", c.n_heads);
  c.head_dim = get_or<int>(j, "head_dim", c.n_heads > 0 ? c.dim / c.n_heads : 0);
  c.vocab_size = get_int(j, "vocab_size", source);
  c.max_seq_len = get_int(j, "max_position_embeddings", source);
  c.rms_norm_eps = get_or<double>(j, "rms_norm_eps", 1e-6);
  c.rope_theta = get_or<double>(j, "rope_theta", 10000.0);
  c.rope_scaling = parse_rope_scaling(j, source);
  c.tied_embeddings = get_or<bool>(j, "tie_word_embeddings", false);
  if (c.architecture == "qwen2") {
    c.qkv_bias = true;  // Qwen2 always has q/k/v biases
    if (get_or<bool>(j, "use_sliding_window", false)) {
      throw Error(fmt::format("{}: use_sliding_window=true is not supported for qwen2", source));
    }
  } else {
    c.qkv_bias = get_or<bool>(j, "attention_bias", false);
  }
  if (c.architecture == "mistral") c.sliding_window = get_or<int>(j, "sliding_window", 0);
  if (get_or<bool>(j, "mlp_bias", false)) {
    throw Error(fmt::format("{}: mlp_bias=true is not supported", source));
  }
  std::string act = get_or<std::string>(j, "hidden_act", "silu");
  if (act != "silu") {
    throw Error(fmt::format("{}: unsupported hidden_act '{}'", source, act),
                "the Llama/Mistral/Qwen2 MLP is SwiGLU with silu");
  }
  c.bos_id = get_token_id(j, "bos_token_id");
  c.eos_id = get_token_id(j, "eos_token_id");
  validate_config(c, source);
  return c;
}

void validate_config(const ModelConfig& c, const std::string& source) {
  auto fail = [&](const std::string& what) {
    throw Error(fmt::format("{}: invalid model config: {}", source, what),
                "the model file may be corrupt or of another format");
  };
  if (c.dim <= 0 || c.hidden_dim <= 0 || c.n_layers <= 0 || c.n_heads <= 0 || c.n_kv_heads <= 0 ||
      c.head_dim <= 0 || c.vocab_size <= 0 || c.max_seq_len <= 0) {
    fail(fmt::format("sizes must be positive ({})", describe(c)));
  }
  if (c.n_heads % c.n_kv_heads != 0) {
    fail(fmt::format("{} attention heads is not a multiple of {} key/value heads", c.n_heads,
                     c.n_kv_heads));
  }
  if (c.head_dim % 2 != 0) fail(fmt::format("head_dim {} must be even for RoPE", c.head_dim));
  if (!(c.rms_norm_eps > 0) || !(c.rope_theta > 0)) fail("rms_norm_eps and rope_theta must be > 0");
  if (c.sliding_window < 0) fail("sliding_window must be >= 0");
}

std::string describe(const ModelConfig& c) {
  return fmt::format("{} dim={} hidden={} layers={} heads={}/{} head_dim={} vocab={} ctx={}{}{}",
                     c.architecture, c.dim, c.hidden_dim, c.n_layers, c.n_heads, c.n_kv_heads,
                     c.head_dim, c.vocab_size, c.max_seq_len, c.tied_embeddings ? " tied" : "",
                     c.qkv_bias ? " qkv_bias" : "");
}

}  // namespace ds
