// Test helper: synthetic Hugging Face checkpoints with seeded weights (see synthetic_checkpoint.h).
// bf16/f16 rounding and encoding are done here with frexp/nearbyint/ldexp, on purpose not with
// common/float_formats.h, so that the loader's decoding is checked against independent code.
#include "tests/support/synthetic_checkpoint.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <stdexcept>

namespace fs = std::filesystem;

namespace ds::test {

const char* storage_dtype_name(StorageDtype d) {
  switch (d) {
    case StorageDtype::F32:
      return "F32";
    case StorageDtype::BF16:
      return "BF16";
    case StorageDtype::F16:
      return "F16";
  }
  return "?";
}

namespace {

// Rounds v to `mant_bits` significant bits (leading bit included), ties to even, with the exponent
// clamped below at min_exp (frexp convention: v = m * 2^e, m in [0.5, 1)) so values under the
// smallest normal land on the subnormal grid.
double round_to_bits(double v, int mant_bits, int min_exp) {
  if (v == 0.0 || !std::isfinite(v)) return v;
  int e = 0;
  std::frexp(v, &e);
  e = std::max(e, min_exp);
  // v * 2^(mant_bits - e) is exact (power-of-two scaling); nearbyint rounds half to even in the
  // default FE_TONEAREST mode.
  return std::ldexp(std::nearbyint(std::ldexp(v, mant_bits - e)), e - mant_bits);
}

uint16_t encode_bf16(double r) {
  // r has at most 8 significant bits, so as a float its low 16 bits are zero.
  const uint32_t bits = std::bit_cast<uint32_t>(static_cast<float>(r));
  if ((bits & 0xffffu) != 0) throw std::logic_error("encode_bf16: value not representable");
  return static_cast<uint16_t>(bits >> 16);
}

uint16_t encode_f16(double r) {
  const uint16_t sign = std::signbit(r) ? 0x8000 : 0;
  const double a = std::fabs(r);
  if (a >= 65520.0) throw std::logic_error("encode_f16: out of range");
  if (a < std::ldexp(1.0, -14)) {  // subnormal: a = mant * 2^-24
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(std::ldexp(a, 24)));
  }
  int e = 0;
  std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1): unbiased exponent e - 1
  const int E = e - 1;
  const double mant = (std::ldexp(a, -E) - 1.0) * 1024.0;
  if (mant != std::floor(mant)) throw std::logic_error("encode_f16: value not representable");
  return static_cast<uint16_t>(sign | ((E + 15) << 10) | static_cast<uint16_t>(mant));
}

// Seeded uniform values from std::mt19937 with our own conversion (the distributions of the
// standard library are implementation-defined; this sequence is the same everywhere).
class Uniform {
 public:
  explicit Uniform(uint32_t seed) : gen_(seed) {}
  // U(-0.5, 0.5): the 32-bit draw mapped to the centre of its 2^-32 bucket.
  double centred() { return (static_cast<double>(gen_()) + 0.5) * 0x1p-32 - 0.5; }

 private:
  std::mt19937 gen_;
};

class Drawer {
 public:
  Drawer(uint32_t seed, StorageDtype dtype) : u_(seed), dtype_(dtype) {}
  std::vector<float> matrix(int out, int in) {  // (out, in), U(-0.5, 0.5) / sqrt(in)
    return draw(static_cast<size_t>(out) * in, 1.0 / std::sqrt(static_cast<double>(in)), 0.0);
  }
  std::vector<float> norm(int n) { return draw(n, 0.2, 1.0); }  // 1 + U(-0.1, 0.1)
  std::vector<float> bias(int n) { return draw(n, 1.0, 0.0); }  // U(-0.5, 0.5)

 private:
  std::vector<float> draw(size_t n, double scale, double offset) {
    std::vector<float> v(n);
    for (auto& x : v) {
      const float f = static_cast<float>(offset + scale * u_.centred());
      x = static_cast<float>(round_to_storage(f, dtype_));
    }
    return v;
  }
  Uniform u_;
  StorageDtype dtype_;
};

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

std::string shard_name(int i, int n) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "model-%05d-of-%05d.safetensors", i + 1, n);
  return buf;
}

}  // namespace

double round_to_storage(float v, StorageDtype d) {
  switch (d) {
    case StorageDtype::F32:
      return v;
    case StorageDtype::BF16:
      return round_to_bits(v, 8, -125);  // float32's exponent range
    case StorageDtype::F16:
      return round_to_bits(v, 11, -13);  // smallest normal 2^-14
  }
  return v;
}

SyntheticModel make_synthetic_model(const SyntheticSpec& s) {
  SyntheticModel m;
  RefConfig& c = m.config;
  c.architecture = s.architecture;
  c.dim = s.dim;
  c.hidden = s.hidden;
  c.layers = s.layers;
  c.heads = s.heads;
  c.kv_heads = s.kv_heads;
  c.vocab = s.vocab;
  c.rms_norm_eps = s.rms_norm_eps;
  c.rope_theta = s.rope_theta;
  c.rope_scaling = s.rope_scaling;
  c.tied = s.tied;
  c.qkv_bias = s.qkv_bias || s.architecture == "qwen2";
  c.sliding_window = s.architecture == "mistral" ? s.sliding_window : 0;

  const int hd = s.dim / s.heads, Q = s.heads * hd, KV = s.kv_heads * hd;
  Drawer draw(s.seed, s.dtype);
  RefWeights& w = m.weights;
  w.embed_tokens = draw.matrix(s.vocab, s.dim);
  w.layers.resize(s.layers);
  for (RefLayer& L : w.layers) {
    L.input_layernorm = draw.norm(s.dim);
    L.q_proj = draw.matrix(Q, s.dim);
    L.k_proj = draw.matrix(KV, s.dim);
    L.v_proj = draw.matrix(KV, s.dim);
    if (c.qkv_bias) {
      L.q_bias = draw.bias(Q);
      L.k_bias = draw.bias(KV);
      L.v_bias = draw.bias(KV);
    }
    L.o_proj = draw.matrix(s.dim, Q);
    L.post_attention_layernorm = draw.norm(s.dim);
    L.gate_proj = draw.matrix(s.hidden, s.dim);
    L.up_proj = draw.matrix(s.hidden, s.dim);
    L.down_proj = draw.matrix(s.dim, s.hidden);
  }
  w.norm = draw.norm(s.dim);
  if (!s.tied) w.lm_head = draw.matrix(s.vocab, s.dim);
  return m;
}

std::vector<SyntheticTensor> hf_tensors(const SyntheticModel& m) {
  const RefConfig& c = m.config;
  const int64_t D = c.dim, F = c.hidden, Q = int64_t{c.heads} * c.head_dim(),
                KV = int64_t{c.kv_heads} * c.head_dim(), V = c.vocab;
  std::vector<SyntheticTensor> t;
  t.push_back({"model.embed_tokens.weight", {V, D}, m.weights.embed_tokens});
  for (int l = 0; l < c.layers; ++l) {
    const RefLayer& L = m.weights.layers[l];
    const std::string p = "model.layers." + std::to_string(l) + ".";
    t.push_back({p + "input_layernorm.weight", {D}, L.input_layernorm});
    t.push_back({p + "self_attn.q_proj.weight", {Q, D}, L.q_proj});
    t.push_back({p + "self_attn.k_proj.weight", {KV, D}, L.k_proj});
    t.push_back({p + "self_attn.v_proj.weight", {KV, D}, L.v_proj});
    if (c.qkv_bias) {
      t.push_back({p + "self_attn.q_proj.bias", {Q}, L.q_bias});
      t.push_back({p + "self_attn.k_proj.bias", {KV}, L.k_bias});
      t.push_back({p + "self_attn.v_proj.bias", {KV}, L.v_bias});
    }
    t.push_back({p + "self_attn.o_proj.weight", {D, Q}, L.o_proj});
    t.push_back({p + "post_attention_layernorm.weight", {D}, L.post_attention_layernorm});
    t.push_back({p + "mlp.gate_proj.weight", {F, D}, L.gate_proj});
    t.push_back({p + "mlp.up_proj.weight", {F, D}, L.up_proj});
    t.push_back({p + "mlp.down_proj.weight", {D, F}, L.down_proj});
  }
  t.push_back({"model.norm.weight", {D}, m.weights.norm});
  if (!c.tied) t.push_back({"lm_head.weight", {V, D}, m.weights.lm_head});
  return t;
}

nlohmann::json hf_config_json(const SyntheticSpec& s) {
  nlohmann::json j;
  const std::string& a = s.architecture;
  j["architectures"] = {a == "qwen2"     ? "Qwen2ForCausalLM"
                        : a == "mistral" ? "MistralForCausalLM"
                                         : "LlamaForCausalLM"};
  j["model_type"] = a;
  j["hidden_size"] = s.dim;
  j["intermediate_size"] = s.hidden;
  j["num_hidden_layers"] = s.layers;
  j["num_attention_heads"] = s.heads;
  j["num_key_value_heads"] = s.kv_heads;
  j["vocab_size"] = s.vocab;
  j["max_position_embeddings"] = s.max_pos;
  j["rms_norm_eps"] = s.rms_norm_eps;
  j["rope_theta"] = s.rope_theta;
  if (s.rope_scaling) {
    j["rope_scaling"] = {
        {"rope_type", "llama3"},
        {"factor", s.rope_scaling->factor},
        {"low_freq_factor", s.rope_scaling->low_freq_factor},
        {"high_freq_factor", s.rope_scaling->high_freq_factor},
        {"original_max_position_embeddings", s.rope_scaling->original_max_position_embeddings}};
  } else {
    j["rope_scaling"] = nullptr;
  }
  j["tie_word_embeddings"] = s.tied;
  j["hidden_act"] = "silu";
  j["bos_token_id"] = 1;
  j["eos_token_id"] = 2;
  j["torch_dtype"] = s.dtype == StorageDtype::F32    ? "float32"
                     : s.dtype == StorageDtype::BF16 ? "bfloat16"
                                                     : "float16";
  if (a == "llama") {
    j["attention_bias"] = s.qkv_bias;
    j["mlp_bias"] = false;
  } else if (a == "mistral") {
    j["sliding_window"] = s.sliding_window > 0 ? nlohmann::json(s.sliding_window) : nullptr;
  } else if (a == "qwen2") {
    j["use_sliding_window"] = false;
    j["sliding_window"] = s.max_pos;
  }
  return j;
}

void write_safetensors_file(const fs::path& path, const std::vector<SyntheticTensor>& tensors,
                            StorageDtype dtype) {
  nlohmann::json header = nlohmann::json::object();
  std::string data;
  for (const SyntheticTensor& t : tensors) {
    const size_t begin = data.size();
    for (float v : t.values) {
      if (dtype == StorageDtype::F32) {
        const uint32_t b = std::bit_cast<uint32_t>(v);
        for (int i = 0; i < 4; ++i) data.push_back(static_cast<char>((b >> (8 * i)) & 0xff));
        continue;
      }
      if (round_to_storage(v, dtype) != v) {
        throw std::logic_error("write_safetensors_file: " + t.name + " is not rounded");
      }
      const uint16_t b = dtype == StorageDtype::BF16 ? encode_bf16(v) : encode_f16(v);
      data.push_back(static_cast<char>(b & 0xff));
      data.push_back(static_cast<char>(b >> 8));
    }
    header[t.name] = {{"dtype", storage_dtype_name(dtype)},
                      {"shape", t.shape},
                      {"data_offsets", {begin, data.size()}}};
  }
  header["__metadata__"] = {{"format", "pt"}};
  std::string h = header.dump();
  while (h.size() % 8 != 0) h.push_back(' ');  // data starts 8-byte aligned, as HF writes it
  std::string bytes;
  const uint64_t n = h.size();
  for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  bytes += h;
  bytes += data;
  write_bytes(path, bytes);
}

void write_hf_directory(const fs::path& dir, const nlohmann::json& config,
                        const std::vector<SyntheticTensor>& tensors, StorageDtype dtype,
                        int shards) {
  fs::create_directories(dir);
  write_bytes(dir / "config.json", config.dump(2));
  if (shards <= 1) {
    write_safetensors_file(dir / "model.safetensors", tensors, dtype);
    return;
  }
  const size_t n = tensors.size(), elem = dtype == StorageDtype::F32 ? 4 : 2;
  nlohmann::json weight_map = nlohmann::json::object();
  size_t total = 0;
  for (int i = 0; i < shards; ++i) {
    std::vector<SyntheticTensor> part(tensors.begin() + i * n / shards,
                                      tensors.begin() + (i + 1) * n / shards);
    const std::string name = shard_name(i, shards);
    for (const auto& t : part) {
      weight_map[t.name] = name;
      total += t.values.size() * elem;
    }
    write_safetensors_file(dir / name, part, dtype);
  }
  nlohmann::json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
  write_bytes(dir / "model.safetensors.index.json", index.dump(2));
}

SyntheticModel write_synthetic_checkpoint(const fs::path& dir, const SyntheticSpec& spec) {
  SyntheticModel m = make_synthetic_model(spec);
  write_hf_directory(dir, hf_config_json(spec), hf_tensors(m), spec.dtype, spec.shards);
  return m;
}

}  // namespace ds::test
