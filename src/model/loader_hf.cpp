// Loader for Hugging Face model directories: config.json + model.safetensors (or sharded index).
// Every tensor's name, dtype and shape is checked against the config before use.
#include <fmt/format.h>

#include <bit>
#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "common/error.h"
#include "common/json_error.h"
#include "src/model/memory.h"
#include "src/model/model.h"
#include "src/model/safetensors.h"
#include "src/model/text_file.h"

namespace fs = std::filesystem;

namespace ds {
namespace {

// A tensor's values where they lie in the mapped file, or an owned copy in the same format when
// the file does not align them for their type (or is big-endian, where nothing is mapped).
WeightTensor stored_where_it_lies(const SafetensorsCheckpoint& ck, const TensorInfo& t) {
  const Storage format = storage_of(t.dtype).value_or(Storage::native);  // f64 is refused
  const size_t n = static_cast<size_t>(t.numel());
  const size_t align = format == Storage::native ? alignof(float) : alignof(uint16_t);
  if constexpr (std::endian::native == std::endian::little) {
    if (reinterpret_cast<std::uintptr_t>(t.data.data()) % align == 0) {
      return WeightTensor::view(ck.mapping_of(t), t.data.data(), format, n);
    }
  }
  if (format == Storage::native) return SafetensorsCheckpoint::to_f32(t);
  std::vector<uint16_t> bits(n);
  if (n > 0) std::memcpy(bits.data(), t.data.data(), 2 * n);
  return WeightTensor::owned_halves(std::move(bits), format);
}

class TensorLoader {
 public:
  explicit TensorLoader(const SafetensorsCheckpoint& ck) : ck_(ck) {}

  // Every tensor is used as stored (F32, BF16 or F16), mapped in place; a copy in the same
  // format only when its bytes are not aligned for their type in the file.
  WeightTensor load(const std::string& name, std::vector<int64_t> shape) {
    const TensorInfo& t = ck_.get(name);
    if (t.shape != shape) {
      throw Error(fmt::format("tensor '{}' has shape [{}], the config implies [{}]", name,
                              fmt::join(t.shape, ", "), fmt::join(shape, ", ")),
                  "config.json does not describe these weights");
    }
    if (!storage_of(t.dtype)) {
      throw Error(fmt::format("tensor '{}' is {}", name, traits(t.dtype).safetensors),
                  "supported: F32, BF16, F16");
    }
    dtypes_.insert(traits(t.dtype).safetensors);
    used_.insert(name);
    return stored_where_it_lies(ck_, t);
  }
  std::string dtype_summary() const {
    return dtypes_.size() == 1 ? *dtypes_.begin() : std::string("mixed");
  }
  const std::set<std::string>& used() const { return used_; }

 private:
  const SafetensorsCheckpoint& ck_;
  std::set<std::string> dtypes_;
  std::set<std::string> used_;
};

}  // namespace

ModelConfig read_hf_config(const fs::path& dir) {
  const fs::path config_path = dir / "config.json";
  if (!fs::exists(config_path)) {
    throw Error(fmt::format("'{}' has no config.json", dir.string()),
                "point --model at a Hugging Face model directory or a llama2.c .bin file");
  }
  const std::string hint = "a Hugging Face model directory holds the config.json of its model";
  const std::string text =
      read_regular_text_file(config_path, kMaxModelConfigBytes, "model config", hint);
  nlohmann::json cj;
  try {
    cj = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(json_parse_failure(config_path.string(), text, e), hint);
  }
  return parse_hf_config(cj, config_path.string());
}

Model load_hf_model(const fs::path& dir) {
  Model m;
  m.format = ModelFormat::HuggingFace;
  m.path = dir;
  m.config = read_hf_config(dir);
  const ModelConfig& c = m.config;

  // Before any weight file is opened: even in the smallest stored format (2 bytes a value) the
  // weights must fit; the exact figure is checked once the files are mapped.
  check_load_memory(c, weight_bytes(c, 2),
                    "at the least (2 bytes a value, before the files say their format)",
                    dir.string());
  auto ck = SafetensorsCheckpoint::open(dir);
  m.weight_files = ck.files();
  TensorLoader tl(ck);
  const int64_t D = c.dim, F = c.hidden_dim, Q = c.q_dim(), KV = c.kv_dim(), V = c.vocab_size;
  m.weights.embed = tl.load("model.embed_tokens.weight", {V, D});
  m.weights.layers.resize(c.n_layers);
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = fmt::format("model.layers.{}.", l);
    LayerWeights& w = m.weights.layers[l];
    w.attn_norm = tl.load(p + "input_layernorm.weight", {D});
    w.wq = tl.load(p + "self_attn.q_proj.weight", {Q, D});
    w.wk = tl.load(p + "self_attn.k_proj.weight", {KV, D});
    w.wv = tl.load(p + "self_attn.v_proj.weight", {KV, D});
    if (c.qkv_bias) {
      w.bq = tl.load(p + "self_attn.q_proj.bias", {Q});
      w.bk = tl.load(p + "self_attn.k_proj.bias", {KV});
      w.bv = tl.load(p + "self_attn.v_proj.bias", {KV});
    }
    w.wo = tl.load(p + "self_attn.o_proj.weight", {D, Q});
    w.mlp_norm = tl.load(p + "post_attention_layernorm.weight", {D});
    w.w_gate = tl.load(p + "mlp.gate_proj.weight", {F, D});
    w.w_up = tl.load(p + "mlp.up_proj.weight", {F, D});
    w.w_down = tl.load(p + "mlp.down_proj.weight", {D, F});
  }
  m.weights.final_norm = tl.load("model.norm.weight", {D});
  if (!c.tied_embeddings) {
    if (!ck.contains("lm_head.weight")) {
      throw Error("tensor 'lm_head.weight' is missing and tie_word_embeddings is false",
                  "set tie_word_embeddings=true in config.json if the model shares its embedding");
    }
    m.weights.lm_head = tl.load("lm_head.weight", {V, D});
  }
  // Tensors the config does not explain mean config and weights disagree (e.g. more layers).
  for (const auto& [name, t] : ck.tensors()) {
    if (tl.used().count(name) || name == "lm_head.weight" ||
        name.ends_with("rotary_emb.inv_freq")) {
      continue;
    }
    throw Error(fmt::format("unexpected tensor '{}' in the checkpoint", name),
                "config.json does not describe these weights (layer count, biases?)");
  }
  m.weight_dtype = tl.dtype_summary();
  check_load_memory(c, model_weight_bytes(m),
                    fmt::format("({}, mapped where they lie in the file)", m.weight_dtype),
                    dir.string());
  return m;
}

}  // namespace ds
