// Loader for llama2.c checkpoints (.bin, legacy version-0 format): a 7-int32 header
// (dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len; a negative vocab_size
// means a separate classifier follows), then float32 weights in a fixed order.
// RoPE: llama2.c rotates interleaved pairs (2i, 2i+1); the runtime uses the Hugging Face
// half-split layout (i, i + head_dim/2), so q/k rows are permuted here, once, at load.
#include <fmt/format.h>

#include <climits>
#include <cstring>
#include <memory>

#include "common/error.h"
#include "common/number_format.h"
#include "src/model/mapped_file.h"
#include "src/model/memory.h"
#include "src/model/model.h"

namespace fs = std::filesystem;

namespace ds {
namespace {

// Row r = h*hd + 2i + j (interleaved) moves to h*hd + j*hd/2 + i (half-split), as in the
// Hugging Face conversion script's permute().
std::vector<float> interleaved_to_half_split(const WeightTensor& w, int n_heads, int head_dim,
                                             int cols) {
  std::vector<float> out(w.size());
  const int half = head_dim / 2;
  for (int h = 0; h < n_heads; ++h) {
    for (int i = 0; i < half; ++i) {
      for (int j = 0; j < 2; ++j) {
        const size_t src = static_cast<size_t>(h * head_dim + 2 * i + j) * cols;
        const size_t dst = static_cast<size_t>(h * head_dim + j * half + i) * cols;
        std::memcpy(&out[dst], w.data() + src, sizeof(float) * cols);
      }
    }
  }
  return out;
}

// The config a llama2.c header gives (dim, hidden_dim, n_layers, n_heads, n_kv_heads,
// vocab_size, seq_len), checked by validate_config; `src` names the file in messages.
ModelConfig config_from_header(const int32_t (&h)[7], const std::string& src) {
  ModelConfig c;
  c.architecture = "llama";
  c.dim = h[0];
  c.hidden_dim = h[1];
  c.n_layers = h[2];
  c.n_heads = h[3];
  c.n_kv_heads = h[4];
  c.tied_embeddings = h[5] > 0;
  // -INT32_MIN does not fit an int: kept as written, validate_config refuses it by range.
  c.vocab_size = h[5] > 0 || h[5] == INT32_MIN ? h[5] : -h[5];
  c.max_seq_len = h[6];
  c.head_dim = c.n_heads > 0 ? c.dim / c.n_heads : 0;
  c.rms_norm_eps = 1e-5;  // fixed in llama2.c's rmsnorm
  c.rope_theta = 10000.0;
  c.bos_id = 1;
  c.eos_id = 2;
  if (c.n_heads > 0 && c.dim % c.n_heads != 0) {
    throw Error(fmt::format("{}: dim {} is not a multiple of n_heads {}", src, c.dim, c.n_heads),
                "the header is corrupt or this is not a llama2.c checkpoint");
  }
  validate_config(c, src);
  return c;
}

// Refuses a file whose size is not the header's and the weights' that config `c` implies.
void check_file_size(const ModelConfig& c, size_t file_bytes, const std::string& src) {
  const size_t D = c.dim, F = c.hidden_dim, L = c.n_layers, V = c.vocab_size;
  const size_t KV = c.kv_dim(), Q = c.q_dim(), S = c.max_seq_len, HS = c.head_dim;
  const size_t n_floats = V * D + L * D + L * D * Q + 2 * L * D * KV + L * Q * D + L * D +
                          3 * L * D * F + D + S * HS  // freq_cis_real + freq_cis_imag
                          + (c.tied_embeddings ? 0 : V * D);
  const size_t expected = 7 * 4 + n_floats * 4;
  if (file_bytes != expected) {
    throw Error(
        fmt::format("{}: file has {} bytes, its header ({}) implies {}", src, file_bytes,
                    describe(c), expected),
        "the file is truncated or corrupt, or not a legacy (version 0) llama2.c checkpoint");
  }
}

// Sets the weights of `m` (whose config is read) to views of the float32 values where they lie
// in the mapping: the file's 28-byte header keeps them 4-byte aligned.
void view_weights(Model& m, const std::shared_ptr<const MappedFile>& mapping) {
  const ModelConfig& c = m.config;
  const size_t D = c.dim, F = c.hidden_dim, L = c.n_layers, V = c.vocab_size;
  const size_t KV = c.kv_dim(), Q = c.q_dim(), S = c.max_seq_len, HS = c.head_dim;
  const float* p = reinterpret_cast<const float*>(mapping->bytes().data() + 7 * 4);
  auto take = [&](size_t n) {
    const float* at = p;
    p += n;
    return WeightTensor::view(mapping, at, Storage::native, n);
  };
  // llama2.c stores each kind for all layers together: one view per layer.
  auto split = [&](size_t per_layer, auto member) {
    for (size_t l = 0; l < L; ++l) (m.weights.layers[l].*member) = take(per_layer);
  };
  m.weights.layers.resize(L);
  m.weights.embed = take(V * D);
  split(D, &LayerWeights::attn_norm);
  split(Q * D, &LayerWeights::wq);
  split(KV * D, &LayerWeights::wk);
  split(KV * D, &LayerWeights::wv);
  split(D * Q, &LayerWeights::wo);
  split(D, &LayerWeights::mlp_norm);
  split(F * D, &LayerWeights::w_gate);  // w1
  split(D * F, &LayerWeights::w_down);  // w2
  split(F * D, &LayerWeights::w_up);    // w3
  m.weights.final_norm = take(D);
  p += S * HS;  // skip freq_cis_real and freq_cis_imag (S * HS/2 floats each)
  if (!c.tied_embeddings) m.weights.lm_head = take(V * D);
}

}  // namespace

ModelConfig read_llama2c_config(const fs::path& bin) {
  MappedFile file(bin);
  const auto bytes = file.bytes();
  if (bytes.size() < 7 * 4) {
    throw Error(
        fmt::format("{}: {} bytes is too short for a llama2.c header", bin.string(), bytes.size()),
        "the file is truncated or not a llama2.c checkpoint");
  }
  int32_t h[7];
  std::memcpy(h, bytes.data(), sizeof(h));
  return config_from_header(h, bin.string());
}

Model load_llama2c_model(const fs::path& bin) {
  MappedFile file(bin);
  const auto bytes = file.bytes();
  const std::string src = bin.string();
  if (bytes.size() < 7 * 4) {
    throw Error(fmt::format("{}: {} bytes is too short for a llama2.c header", src, bytes.size()),
                "the file is truncated or not a llama2.c checkpoint");
  }
  int32_t h[7];
  std::memcpy(h, bytes.data(), sizeof(h));
  Model m;
  m.format = ModelFormat::Llama2c;
  m.path = bin;
  m.weight_files = {bin};
  m.weight_dtype = traits(NumberFormat::f32).safetensors;
  m.config = config_from_header(h, src);
  const ModelConfig& c = m.config;
  check_file_size(c, bytes.size(), src);
  // The float32 values are used in place; only wq and wk are copied, to permute their rows.
  const uint64_t qk_copies = 4ull * static_cast<uint64_t>(c.n_layers) *
                             static_cast<uint64_t>(c.q_dim() + c.kv_dim()) *
                             static_cast<uint64_t>(c.dim);
  check_load_memory(c, weight_bytes(c, 4) + qk_copies,
                    "(float32, mapped where they lie, and wq / wk copied to permute their rows)",
                    src);
  auto mapping = std::make_shared<const MappedFile>(std::move(file));
  mapping->populate();
  view_weights(m, mapping);
  for (auto& lw : m.weights.layers) {
    lw.wq = interleaved_to_half_split(lw.wq, c.n_heads, c.head_dim, c.dim);
    lw.wk = interleaved_to_half_split(lw.wk, c.n_kv_heads, c.head_dim, c.dim);
  }
  return m;
}

}  // namespace ds
