// Parsing and validation of model hyper-parameters (Hugging Face config.json).
#include "src/model/config.h"

#include <fmt/format.h>

#include <climits>
#include <cmath>
#include <nlohmann/json.hpp>
#include <type_traits>

#include "common/error.h"
#include "common/json_integer.h"

namespace ds {
namespace {

const char* kConfigHint = "a Hugging Face config.json of a Llama, Mistral or Qwen2 model has it";
const char* kTypeHint =
    "each field has the type Hugging Face transformers writes; the file may be corrupt";

// An integer field read in 64-bit arithmetic, so that 2^31 or 1e12 is reported as written
// rather than wrapped into an int (values past INT64_MAX read as INT64_MAX).
int64_t integer_field(const nlohmann::json& v, const char* key, const std::string& source) {
  if (!v.is_number_integer()) {
    throw Error(fmt::format("{}: field '{}' is {}, not a whole number", source, key, v.dump()),
                kTypeHint);
  }
  return json_integer<int64_t>(v).value_or(INT64_MAX);  // only a too-large one is refused
}

// `v` as an int, or an error naming the field when it lies outside [lo, hi].
int in_range(int64_t v, const char* key, int64_t lo, int64_t hi, const std::string& source) {
  if (v < lo || v > hi) {
    throw Error(
        fmt::format("{}: invalid model config: {} {} is outside {}..{}", source, key, v, lo, hi),
        "the limits hold every published model with headroom (docs/cli.md, \"Input "
        "limits\"); the file may be corrupt");
  }
  return static_cast<int>(v);
}

// A required size field, within 1..hi.
int get_size(const nlohmann::json& j, const char* key, int hi, const std::string& source) {
  if (!j.contains(key) || j[key].is_null()) {
    throw Error(fmt::format("{}: missing field '{}'", source, key), kConfigHint);
  }
  return in_range(integer_field(j[key], key, source), key, 1, hi, source);
}

// An optional integer field within lo..hi; `fallback` when absent or null.
int get_int_or(const nlohmann::json& j, const char* key, int fallback, int64_t lo, int64_t hi,
               const std::string& source) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  return in_range(integer_field(j[key], key, source), key, lo, hi, source);
}

// An optional field of type V (bool, double or std::string), `fallback` when absent or null;
// an error naming the field when it has another JSON type.
template <typename V>
V get_or(const nlohmann::json& j, const char* key, V fallback, const std::string& source) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  const nlohmann::json& v = j[key];
  constexpr const char* kind = std::is_same_v<V, bool>          ? "boolean"
                               : std::is_same_v<V, std::string> ? "string"
                                                                : "number";
  const bool ok = std::is_same_v<V, bool>          ? v.is_boolean()
                  : std::is_same_v<V, std::string> ? v.is_string()
                                                   : v.is_number();
  if (!ok) {
    throw Error(fmt::format("{}: field '{}' is {}, not a {}", source, key, v.dump(), kind),
                kTypeHint);
  }
  return v.get<V>();
}

std::optional<int> get_token_id(const nlohmann::json& j, const char* key,
                                const std::string& source) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  const nlohmann::json* v = &j[key];
  if (v->is_array()) {  // Llama-3 lists several EOS ids; the first is the primary one
    if (v->empty()) return std::nullopt;
    v = &(*v)[0];
  }
  return in_range(integer_field(*v, key, source), key, 0, INT32_MAX, source);
}

std::optional<RopeScaling> parse_rope_scaling(const nlohmann::json& j, const std::string& source) {
  if (!j.contains("rope_scaling") || j["rope_scaling"].is_null()) return std::nullopt;
  const auto& r = j["rope_scaling"];
  const std::string type =
      get_or<std::string>(r, "rope_type", get_or<std::string>(r, "type", "", source), source);
  if (type == "default") return std::nullopt;
  if (type != "llama3") {
    throw Error(fmt::format("{}: unsupported rope_scaling type '{}'", source, type),
                "supported: llama3 (Llama-3.1); remove rope_scaling only if the model was "
                "trained without it");
  }
  RopeScaling s;
  s.type = type;
  s.factor = get_or<double>(r, "factor", 8.0, source);
  s.low_freq_factor = get_or<double>(r, "low_freq_factor", 1.0, source);
  s.high_freq_factor = get_or<double>(r, "high_freq_factor", 4.0, source);
  s.original_max_position_embeddings =
      get_or<double>(r, "original_max_position_embeddings", 8192.0, source);
  // llama3 scaling stretches long wavelengths by `factor` (8 and 32 in published models); a
  // factor below 1 or a denormal one would divide frequencies into infinities
  if (!(s.factor >= 1 && s.factor <= 1024) || !(s.low_freq_factor > 0) ||
      !(s.high_freq_factor > s.low_freq_factor) || !std::isfinite(s.high_freq_factor) ||
      !(s.original_max_position_embeddings >= 1 && s.original_max_position_embeddings <= 1 << 24)) {
    throw Error(
        fmt::format("{}: rope_scaling needs 1 <= factor <= 1024 (got {}), 0 < low_freq_factor < "
                    "high_freq_factor (got {} and {}) and 1 <= original_max_position_embeddings "
                    "<= 16777216 (got {})",
                    source, s.factor, s.low_freq_factor, s.high_freq_factor,
                    s.original_max_position_embeddings),
        "the model's config.json is damaged; compare it with the published one");
  }
  return s;
}

}  // namespace

ModelConfig parse_hf_config(const nlohmann::json& j, const std::string& source) {
  if (!j.is_object()) {
    throw Error(fmt::format("{}: not a JSON object", source),
                "a Hugging Face config.json is one JSON object of the model's sizes");
  }
  ModelConfig c;
  c.architecture = get_or<std::string>(j, "model_type", "", source);
  if (c.architecture != "llama" && c.architecture != "mistral" && c.architecture != "qwen2") {
    throw Error(fmt::format("{}: unknown architecture '{}'", source, c.architecture),
                "supported model_type values: llama, mistral, qwen2");
  }
  c.dim = get_size(j, "hidden_size", ConfigLimits::dim, source);
  c.hidden_dim = get_size(j, "intermediate_size", ConfigLimits::hidden_dim, source);
  c.n_layers = get_size(j, "num_hidden_layers", ConfigLimits::n_layers, source);
  c.n_heads = get_size(j, "num_attention_heads", ConfigLimits::n_heads, source);
  c.n_kv_heads = get_int_or(j, "num_key_value_heads", c.n_heads, 1, ConfigLimits::n_heads, source);
  c.head_dim = get_int_or(j, "head_dim", c.dim / c.n_heads, 1, ConfigLimits::head_dim, source);
  c.vocab_size = get_size(j, "vocab_size", ConfigLimits::vocab_size, source);
  c.max_seq_len = get_size(j, "max_position_embeddings", ConfigLimits::max_seq_len, source);
  c.rms_norm_eps = get_or<double>(j, "rms_norm_eps", 1e-6, source);
  c.rope_theta = get_or<double>(j, "rope_theta", 10000.0, source);
  c.rope_scaling = parse_rope_scaling(j, source);
  c.tied_embeddings = get_or<bool>(j, "tie_word_embeddings", false, source);
  if (c.architecture == "qwen2") {
    c.qkv_bias = true;  // Qwen2 always has q/k/v biases
    if (get_or<bool>(j, "use_sliding_window", false, source)) {
      throw Error(fmt::format("{}: use_sliding_window=true is not supported for qwen2", source),
                  "driftscope runs Qwen2 with full attention: use a model that has it");
    }
  } else {
    c.qkv_bias = get_or<bool>(j, "attention_bias", false, source);
  }
  if (c.architecture == "mistral") {
    c.sliding_window = get_int_or(j, "sliding_window", 0, 0, INT32_MAX, source);
  }
  if (get_or<bool>(j, "mlp_bias", false, source)) {
    throw Error(fmt::format("{}: mlp_bias=true is not supported", source),
                "driftscope runs Llama, Mistral and Qwen2 MLPs, which have no bias");
  }
  std::string act = get_or<std::string>(j, "hidden_act", "silu", source);
  if (act != "silu") {
    throw Error(fmt::format("{}: unsupported hidden_act '{}'", source, act),
                "the Llama/Mistral/Qwen2 MLP is SwiGLU with silu");
  }
  c.bos_id = get_token_id(j, "bos_token_id", source);
  c.eos_id = get_token_id(j, "eos_token_id", source);
  validate_config(c, source);
  return c;
}

void validate_config(const ModelConfig& c, const std::string& source) {
  auto fail = [&](const std::string& what) {
    throw Error(fmt::format("{}: invalid model config: {}", source, what),
                "the model file may be corrupt or of another format");
  };
  auto range = [&](const char* name, int v, int hi) {
    if (v < 1 || v > hi) {
      throw Error(
          fmt::format("{}: invalid model config: {} {} is outside 1..{}", source, name, v, hi),
          "the limits hold every published model with headroom (docs/cli.md, \"Input "
          "limits\"); the model file may be corrupt or of another format");
    }
  };
  range("dim (hidden_size)", c.dim, ConfigLimits::dim);
  range("hidden_dim (intermediate_size)", c.hidden_dim, ConfigLimits::hidden_dim);
  range("n_layers (num_hidden_layers)", c.n_layers, ConfigLimits::n_layers);
  range("n_heads (num_attention_heads)", c.n_heads, ConfigLimits::n_heads);
  range("n_kv_heads (num_key_value_heads)", c.n_kv_heads, ConfigLimits::n_heads);
  range("head_dim", c.head_dim, ConfigLimits::head_dim);
  range("vocab_size", c.vocab_size, ConfigLimits::vocab_size);
  range("max_seq_len (max_position_embeddings)", c.max_seq_len, ConfigLimits::max_seq_len);
  if (c.n_heads % c.n_kv_heads != 0) {
    fail(fmt::format("{} attention heads is not a multiple of {} key/value heads", c.n_heads,
                     c.n_kv_heads));
  }
  if (c.head_dim % 2 != 0) fail(fmt::format("head_dim {} must be even for RoPE", c.head_dim));
  if (!(c.rms_norm_eps > 0) || !(c.rope_theta > 0) || !std::isfinite(c.rms_norm_eps) ||
      !std::isfinite(c.rope_theta)) {
    fail("rms_norm_eps and rope_theta must be finite and > 0");
  }
  if (c.sliding_window < 0) fail("sliding_window must be >= 0");
}

std::string describe(const ModelConfig& c) {
  return fmt::format("{} dim={} hidden={} layers={} heads={}/{} head_dim={} vocab={} ctx={}{}{}",
                     c.architecture, c.dim, c.hidden_dim, c.n_layers, c.n_heads, c.n_kv_heads,
                     c.head_dim, c.vocab_size, c.max_seq_len, c.tied_embeddings ? " tied" : "",
                     c.qkv_bias ? " qkv_bias" : "");
}

}  // namespace ds
