// Minimal F32 safetensors + config.json reader for the test oracle.
#include "tests/support/ref_weights.h"

#include <cstring>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

namespace ds::test {

RefModel read_ref_model(const std::filesystem::path& dir) {
  const nlohmann::json cfg = nlohmann::json::parse(std::ifstream(dir / "config.json"));
  RefModel m;
  RefConfig& c = m.config;
  c.architecture = cfg["model_type"];
  c.dim = cfg["hidden_size"];
  c.hidden = cfg["intermediate_size"];
  c.layers = cfg["num_hidden_layers"];
  c.heads = cfg["num_attention_heads"];
  c.kv_heads = cfg["num_key_value_heads"];
  c.vocab = cfg["vocab_size"];
  c.rms_norm_eps = cfg["rms_norm_eps"];
  c.rope_theta = cfg["rope_theta"];
  c.tied = cfg["tie_word_embeddings"];

  std::ifstream in(dir / "model.safetensors", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);  // little-endian host
  const nlohmann::json header = nlohmann::json::parse(bytes.substr(8, n));
  const char* data = bytes.data() + 8 + n;
  auto tensor = [&](const std::string& name) {
    const auto& t = header.at(name);
    if (t.at("dtype") != "F32") throw std::runtime_error(name + " is not F32");
    const size_t b = t["data_offsets"][0], e = t["data_offsets"][1];
    std::vector<float> v((e - b) / 4);
    std::memcpy(v.data(), data + b, e - b);
    return v;
  };
  RefWeights& w = m.weights;
  w.embed_tokens = tensor("model.embed_tokens.weight");
  for (int l = 0; l < c.layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    RefLayer L;
    L.input_layernorm = tensor(p + "input_layernorm.weight");
    L.q_proj = tensor(p + "self_attn.q_proj.weight");
    L.k_proj = tensor(p + "self_attn.k_proj.weight");
    L.v_proj = tensor(p + "self_attn.v_proj.weight");
    L.o_proj = tensor(p + "self_attn.o_proj.weight");
    L.post_attention_layernorm = tensor(p + "post_attention_layernorm.weight");
    L.gate_proj = tensor(p + "mlp.gate_proj.weight");
    L.up_proj = tensor(p + "mlp.up_proj.weight");
    L.down_proj = tensor(p + "mlp.down_proj.weight");
    w.layers.push_back(std::move(L));
  }
  w.norm = tensor("model.norm.weight");
  return m;
}

}  // namespace ds::test
