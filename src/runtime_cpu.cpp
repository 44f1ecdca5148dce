// CPU reference forward pass (Llama / Mistral / Qwen2): one function per block, buffers shaped
// (rows, width) where rows are the new positions of this call.
#include <fmt/format.h>

#include <cmath>

#include "kernels/ops.h"
#include "src/error.h"
#include "src/rope_table.h"
#include "src/runtime.h"

namespace ds {

DType parse_dtype(const std::string& s) {
  if (s == "fp32") return DType::fp32;
  if (s == "fp64") return DType::fp64;
  throw Error(fmt::format("unknown dtype '{}'", s), "--dtype takes fp32 or fp64");
}

const char* dtype_name(DType d) { return d == DType::fp32 ? "fp32" : "fp64"; }

namespace {

template <typename T>
std::vector<T> cast(const std::vector<float>& v) {
  return std::vector<T>(v.begin(), v.end());
}
template <typename T>
std::vector<T> cast(const std::vector<double>& v) {
  return std::vector<T>(v.begin(), v.end());
}

template <typename T>
struct Layer {
  std::vector<T> attn_norm, wq, wk, wv, bq, bk, bv, wo, mlp_norm, w_gate, w_up, w_down;
};

template <typename T>
class CpuRuntime final : public Runtime {
 public:
  CpuRuntime(const Model& m, int capacity) : c_(m.config), capacity_(capacity) {
    if (capacity <= 0 || capacity > c_.max_seq_len) {
      throw Error(fmt::format("KV cache capacity {} outside 1..{} (the model's context length)",
                              capacity, c_.max_seq_len));
    }
    embed_ = cast<T>(m.weights.embed);
    for (const auto& w : m.weights.layers) {
      layers_.push_back({cast<T>(w.attn_norm), cast<T>(w.wq), cast<T>(w.wk), cast<T>(w.wv),
                         cast<T>(w.bq), cast<T>(w.bk), cast<T>(w.bv), cast<T>(w.wo),
                         cast<T>(w.mlp_norm), cast<T>(w.w_gate), cast<T>(w.w_up),
                         cast<T>(w.w_down)});
    }
    final_norm_ = cast<T>(m.weights.final_norm);
    if (!m.weights.lm_head.empty()) lm_head_ = cast<T>(m.weights.lm_head);
    RopeTable rt = rope_table(c_, capacity);
    cos_ = cast<T>(rt.cos);
    sin_ = cast<T>(rt.sin);
    const size_t cache = static_cast<size_t>(c_.n_layers) * capacity * c_.kv_dim();
    k_cache_.assign(cache, T(0));  // (n_layers, capacity, kv_dim)
    v_cache_.assign(cache, T(0));  // (n_layers, capacity, kv_dim)
    scores_.assign(capacity, T(0));
  }

  int capacity() const override { return capacity_; }
  const ModelConfig& config() const override { return c_; }

  void forward(std::span<const int32_t> tokens, int pos, std::vector<double>& logits) override {
    const int n = static_cast<int>(tokens.size());
    if (n == 0) return;
    if (pos < 0 || pos + n > capacity_) {
      throw Error(fmt::format("positions {}..{} exceed the context of {} positions", pos,
                              pos + n - 1, capacity_),
                  "use a shorter prompt or fewer new tokens");
    }
    check_token_ids(tokens, c_.vocab_size);
    resize(n);
    for (int r = 0; r < n; ++r) positions_[r] = pos + r;

    ops::embedding(x_.data(), embed_.data(), tokens.data(), n, c_.dim);
    for (int l = 0; l < c_.n_layers; ++l) {
      attention_block(l, n);
      mlp_block(l, n);
    }
    ops::rmsnorm(xb_.data(), x_.data(), final_norm_.data(), n, c_.dim, c_.rms_norm_eps);
    const std::vector<T>& cls = lm_head_.empty() ? embed_ : lm_head_;
    ops::matmul<T>(logits_.data(), xb_.data(), cls.data(), nullptr, n, c_.vocab_size, c_.dim);
    logits.assign(logits_.begin(), logits_.begin() + static_cast<size_t>(n) * c_.vocab_size);
  }

 private:
  // x <- x + o_proj(attention(rope(q), rope(k), v)) over rmsnorm(x)
  void attention_block(int l, int n) {
    const Layer<T>& w = layers_[l];
    const int D = c_.dim, Q = c_.q_dim(), KV = c_.kv_dim();
    ops::rmsnorm(xb_.data(), x_.data(), w.attn_norm.data(), n, D, c_.rms_norm_eps);
    ops::matmul(q_.data(), xb_.data(), w.wq.data(), bias(w.bq), n, Q, D);  // (n, q_dim)
    T* k = &k_cache_[(static_cast<size_t>(l) * capacity_ + positions_[0]) * KV];
    T* v = &v_cache_[(static_cast<size_t>(l) * capacity_ + positions_[0]) * KV];
    ops::matmul(k, xb_.data(), w.wk.data(), bias(w.bk), n, KV, D);  // (n, kv_dim) into the cache
    ops::matmul(v, xb_.data(), w.wv.data(), bias(w.bv), n, KV, D);
    ops::rope(q_.data(), n, c_.n_heads, c_.head_dim, positions_.data(), cos_.data(), sin_.data());
    ops::rope(k, n, c_.n_kv_heads, c_.head_dim, positions_.data(), cos_.data(), sin_.data());
    const T scale = T(1.0 / std::sqrt(static_cast<double>(c_.head_dim)));
    ops::attention(att_.data(), q_.data(), &k_cache_[static_cast<size_t>(l) * capacity_ * KV],
                   &v_cache_[static_cast<size_t>(l) * capacity_ * KV], n, positions_.data(),
                   c_.n_heads, c_.n_kv_heads, c_.head_dim, c_.sliding_window, scale,
                   scores_.data());
    ops::matmul<T>(xb_.data(), att_.data(), w.wo.data(), nullptr, n, D, Q);  // (n, dim)
    ops::add(x_.data(), x_.data(), xb_.data(), static_cast<size_t>(n) * D);
  }

  // x <- x + down(silu(gate(h)) * up(h)), h = rmsnorm(x)
  void mlp_block(int l, int n) {
    const Layer<T>& w = layers_[l];
    const int D = c_.dim, F = c_.hidden_dim;
    ops::rmsnorm(xb_.data(), x_.data(), w.mlp_norm.data(), n, D, c_.rms_norm_eps);
    ops::matmul<T>(gate_.data(), xb_.data(), w.w_gate.data(), nullptr, n, F, D);  // (n, hidden)
    ops::matmul<T>(up_.data(), xb_.data(), w.w_up.data(), nullptr, n, F, D);      // (n, hidden)
    ops::swiglu(gate_.data(), gate_.data(), up_.data(), static_cast<size_t>(n) * F);
    ops::matmul<T>(xb_.data(), gate_.data(), w.w_down.data(), nullptr, n, D, F);  // (n, dim)
    ops::add(x_.data(), x_.data(), xb_.data(), static_cast<size_t>(n) * D);
  }

  static const T* bias(const std::vector<T>& b) { return b.empty() ? nullptr : b.data(); }

  void resize(int n) {
    const size_t rows = static_cast<size_t>(n);
    x_.resize(rows * c_.dim);                 // (n, dim) residual stream
    xb_.resize(rows * c_.dim);                // (n, dim) normed input / block output
    q_.resize(rows * c_.q_dim());             // (n, q_dim)
    att_.resize(rows * c_.q_dim());           // (n, q_dim) attention output before o_proj
    gate_.resize(rows * c_.hidden_dim);       // (n, hidden)
    up_.resize(rows * c_.hidden_dim);         // (n, hidden)
    logits_.resize(rows * c_.vocab_size);     // (n, vocab)
    positions_.resize(rows);
  }

  ModelConfig c_;
  int capacity_;
  std::vector<T> embed_, final_norm_, lm_head_, cos_, sin_;
  std::vector<Layer<T>> layers_;
  std::vector<T> k_cache_, v_cache_, scores_;
  std::vector<T> x_, xb_, q_, att_, gate_, up_, logits_;
  std::vector<int> positions_;
};

}  // namespace

std::unique_ptr<Runtime> make_cpu_runtime(const Model& model, DType dtype, int capacity) {
  if (dtype == DType::fp64) return std::make_unique<CpuRuntime<double>>(model, capacity);
  return std::make_unique<CpuRuntime<float>>(model, capacity);
}

}  // namespace ds
