// CPU reference forward pass (Llama / Mistral / Qwen2): one function per block, buffers shaped
// (rows, width) where rows are the input rows of this call (possibly of several sequences).
#include <fmt/format.h>

#include <array>
#include <cmath>
#include <cstring>

#include "kernels/ops.h"
#include "common/error.h"
#include "src/rope_table.h"
#include "src/runtime.h"
#include "src/runtime_policy.h"

namespace ds {

DType parse_dtype(const std::string& s) {
  if (s == "fp64") return DType::fp64;
  if (s == "fp32") return DType::fp32;
  if (s == "fp16") return DType::fp16;
  if (s == "bf16") return DType::bf16;
  if (s == "layercast") return DType::layercast;
  throw Error(fmt::format("unknown dtype '{}'", s),
              "--dtype takes fp64, fp32, fp16, bf16 or layercast");
}

const char* dtype_name(DType d) {
  switch (d) {
    case DType::fp64: return "fp64";
    case DType::fp32: return "fp32";
    case DType::fp16: return "fp16";
    case DType::bf16: return "bf16";
    case DType::layercast: return "layercast";
  }
  return "?";
}

void Runtime::forward(std::span<const int32_t> tokens, int pos, std::vector<double>& logits) {
  std::vector<BatchRow> rows(tokens.size());
  for (size_t r = 0; r < tokens.size(); ++r) rows[r] = {0, pos + static_cast<int>(r), tokens[r]};
  forward(rows, logits);
}

namespace {

template <typename T>
std::vector<T> cast(const auto& v, ops::Round r = ops::Round::none) {
  std::vector<T> out(v.begin(), v.end());
  ops::round_to(out.data(), out.size(), r);
  return out;
}

// Storage format of weights and of activations (incl. KV cache) for a precision.
ops::Round weight_round(DType d) {
  switch (d) {
    case DType::fp16: return ops::Round::f16;
    case DType::bf16:
    case DType::layercast: return ops::Round::bf16;
    default: return ops::Round::none;
  }
}
ops::Round act_round(DType d) {
  switch (d) {
    case DType::fp16: return ops::Round::f16;
    case DType::bf16: return ops::Round::bf16;
    default: return ops::Round::none;
  }
}

template <typename T>
struct Layer {
  std::vector<T> attn_norm, wq, wk, wv, bq, bk, bv, wo, mlp_norm, w_gate, w_up, w_down;
};

template <typename T>
class CpuRuntime final : public Runtime {
 public:
  CpuRuntime(const Model& m, const Numerics& nx, int capacity, int slots)
      : c_(m.config), nx_(nx), act_(act_round(nx.dtype)), capacity_(capacity), slots_(slots) {
    check_runtime_setup(c_, nx, capacity, slots);
    const ops::Round wr = weight_round(nx.dtype);
    embed_ = cast<T>(m.weights.embed, wr);
    for (const auto& w : m.weights.layers) {
      layers_.push_back({cast<T>(w.attn_norm, wr), cast<T>(w.wq, wr), cast<T>(w.wk, wr),
                         cast<T>(w.wv, wr), cast<T>(w.bq, wr), cast<T>(w.bk, wr),
                         cast<T>(w.bv, wr), cast<T>(w.wo, wr), cast<T>(w.mlp_norm, wr),
                         cast<T>(w.w_gate, wr), cast<T>(w.w_up, wr), cast<T>(w.w_down, wr)});
    }
    final_norm_ = cast<T>(m.weights.final_norm, wr);
    if (!m.weights.lm_head.empty()) lm_head_ = cast<T>(m.weights.lm_head, wr);
    RopeTable rt = rope_table(c_, capacity);
    cos_ = cast<T>(rt.cos);
    sin_ = cast<T>(rt.sin);
    const size_t cache = static_cast<size_t>(slots) * c_.n_layers * capacity * c_.kv_dim();
    k_cache_.assign(cache, T(0));  // (slots, n_layers, capacity, kv_dim)
    v_cache_.assign(cache, T(0));  // (slots, n_layers, capacity, kv_dim)
    scores_.assign(capacity, T(0));
    set_tap_hook(nullptr);
  }

  int capacity() const override { return capacity_; }
  int slots() const override { return slots_; }
  const ModelConfig& config() const override { return c_; }
  using Runtime::forward;

  void set_tap_hook(TapHook* hook) override {
    hook_ = hook;
    wanted_.ask(hook, c_.n_layers);
  }

  void forward(std::span<const BatchRow> rows, std::vector<double>& logits) override {
    const int n = static_cast<int>(rows.size());
    if (n == 0) return;
    cols_.assign(rows, c_.vocab_size, slots_, capacity_);
    resize(n);

    ops::embedding(x_.data(), embed_.data(), cols_.tokens.data(), n, c_.dim);
    if (wanted_.embed) tap({SiteKind::embed}, x_, n, c_.dim);
    for (int l = 0; l < c_.n_layers; ++l) {
      attention_block(l, n);
      mlp_block(l, n);
    }
    ops::rmsnorm(xb_.data(), x_.data(), final_norm_.data(), n, c_.dim, c_.rms_norm_eps, act_);
    if (wanted_.final_norm) tap({SiteKind::final_norm}, xb_, n, c_.dim);
    const std::vector<T>& cls = lm_head_.empty() ? embed_ : lm_head_;
    gemm(logits_.data(), xb_.data(), cls.data(), nullptr, n, c_.vocab_size, c_.dim);
    if (wanted_.logits) tap({SiteKind::logits}, logits_, n, c_.vocab_size);
    logits.assign(logits_.begin(), logits_.begin() + static_cast<size_t>(n) * c_.vocab_size);
  }

 private:
  // x <- x + o_proj(attention(rope(q), rope(k), v)) over rmsnorm(x)
  void attention_block(int l, int n) {
    const Layer<T>& w = layers_[l];
    const int D = c_.dim, Q = c_.q_dim(), KV = c_.kv_dim();
    ops::rmsnorm(xb_.data(), x_.data(), w.attn_norm.data(), n, D, c_.rms_norm_eps, act_);
    tap_layer(l, SiteKind::attn_norm, xb_, n, D);
    gemm(q_.data(), xb_.data(), w.wq.data(), bias(w.bq), n, Q, D);  // (n, q_dim)
    gemm(k_.data(), xb_.data(), w.wk.data(), bias(w.bk), n, KV, D);  // (n, kv_dim)
    gemm(v_.data(), xb_.data(), w.wv.data(), bias(w.bv), n, KV, D);  // (n, kv_dim)
    const int* pos = cols_.pos.data();
    ops::rope(q_.data(), n, c_.n_heads, c_.head_dim, pos, cos_.data(), sin_.data(), act_);
    ops::rope(k_.data(), n, c_.n_kv_heads, c_.head_dim, pos, cos_.data(), sin_.data(), act_);
    for (int r = 0; r < n; ++r) {  // append to each row's slot cache (stored like activations)
      const int slot = cols_.slot[r];
      std::memcpy(cache_row(k_cache_, slot, l, pos[r]), &k_[static_cast<size_t>(r) * KV],
                  sizeof(T) * KV);
      std::memcpy(cache_row(v_cache_, slot, l, pos[r]), &v_[static_cast<size_t>(r) * KV],
                  sizeof(T) * KV);
    }
    const T scale = T(1.0 / std::sqrt(static_cast<double>(c_.head_dim)));
    for (int r0 = 0; r0 < n;) {  // attention per sequence: rows of one slot are contiguous
      int r1 = r0 + 1;
      while (r1 < n && cols_.slot[r1] == cols_.slot[r0]) ++r1;
      const size_t off = static_cast<size_t>(r0) * Q;
      const int splits =
          attention_splits(nx_, r1 - r0, pos[r1 - 1] + 1, cols_.n_seqs, c_.n_heads);
      ops::AttnNumerics an{act_, act_, nx_.accum_f16, splits};
      ops::attention(&att_[off], &q_[off], cache_row(k_cache_, cols_.slot[r0], l, 0),
                     cache_row(v_cache_, cols_.slot[r0], l, 0), r1 - r0, &pos[r0], c_.n_heads,
                     c_.n_kv_heads, c_.head_dim, c_.sliding_window, scale, an, scores_.data());
      r0 = r1;
    }
    row_parallel_gemm(xb_.data(), att_.data(), w.wo.data(), n, D, Q);  // (n, dim)
    tap_layer(l, SiteKind::attn_out, xb_, n, D);
    ops::add(x_.data(), x_.data(), xb_.data(), static_cast<size_t>(n) * D, act_);
    tap_layer(l, SiteKind::resid_mid, x_, n, D);
  }

  // x <- x + down(silu(gate(h)) * up(h)), h = rmsnorm(x)
  void mlp_block(int l, int n) {
    const Layer<T>& w = layers_[l];
    const int D = c_.dim, F = c_.hidden_dim;
    ops::rmsnorm(xb_.data(), x_.data(), w.mlp_norm.data(), n, D, c_.rms_norm_eps, act_);
    tap_layer(l, SiteKind::mlp_norm, xb_, n, D);
    gemm(gate_.data(), xb_.data(), w.w_gate.data(), nullptr, n, F, D);  // (n, hidden)
    gemm(up_.data(), xb_.data(), w.w_up.data(), nullptr, n, F, D);      // (n, hidden)
    ops::swiglu(gate_.data(), gate_.data(), up_.data(), static_cast<size_t>(n) * F, act_);
    row_parallel_gemm(xb_.data(), gate_.data(), w.w_down.data(), n, D, F);  // (n, dim)
    tap_layer(l, SiteKind::mlp_out, xb_, n, D);
    ops::add(x_.data(), x_.data(), xb_.data(), static_cast<size_t>(n) * D, act_);
    tap_layer(l, SiteKind::out, x_, n, D);
  }

  // The GEMM numerics for an (M, N, K) product under the configured policy.
  ops::GemmNumerics gemm_numerics(int M, int N, int K) const {
    return {act_, nx_.accum_f16, gemm_split_k(nx_, M, N, K)};
  }

  void gemm(T* y, const T* x, const T* w, const T* b, int M, int N, int K) {
    ops::matmul(y, x, K, w, K, b, M, N, K, gemm_numerics(M, N, K));
  }

  // o_proj / down_proj: K split over tp ranks, partial results all-reduced.
  void row_parallel_gemm(T* y, const T* x, const T* w, int M, int N, int K) {
    if (nx_.tp > 1) tp_scratch_.resize(static_cast<size_t>(nx_.tp + 1) * M * N);
    ops::matmul_row_parallel(y, x, w, M, N, K, nx_.tp, nx_.allreduce,
                             gemm_numerics(M, N, K / nx_.tp), tp_scratch_.data());
  }

  T* cache_row(std::vector<T>& cache, int slot, int layer, int pos) {
    return &cache[((static_cast<size_t>(slot) * c_.n_layers + layer) * capacity_ + pos) *
                  c_.kv_dim()];
  }

  static const T* bias(const std::vector<T>& b) { return b.empty() ? nullptr : b.data(); }

  void tap_layer(int l, SiteKind k, const std::vector<T>& buf, int n, int width) {
    if (wanted_.at(l, k)) {
      tap({k, l}, buf, n, width);
    }
  }

  void tap(const Site& site, const std::vector<T>& buf, int n, int width) {
    TapTensor t;
    if constexpr (std::is_same_v<T, float>) {
      t.f32 = buf.data();
    } else {
      t.f64 = buf.data();
    }
    t.rows = n;
    t.width = width;
    t.slot = cols_.slot.data();
    t.pos = cols_.pos.data();
    hook_->on_tap(site, t);
  }

  void resize(int n) {
    const size_t rows = static_cast<size_t>(n);
    x_.resize(rows * c_.dim);              // (n, dim) residual stream
    xb_.resize(rows * c_.dim);             // (n, dim) normed input / block output
    q_.resize(rows * c_.q_dim());          // (n, q_dim)
    k_.resize(rows * c_.kv_dim());         // (n, kv_dim)
    v_.resize(rows * c_.kv_dim());         // (n, kv_dim)
    att_.resize(rows * c_.q_dim());        // (n, q_dim) attention output before o_proj
    gate_.resize(rows * c_.hidden_dim);    // (n, hidden)
    up_.resize(rows * c_.hidden_dim);      // (n, hidden)
    logits_.resize(rows * c_.vocab_size);  // (n, vocab)
  }

  ModelConfig c_;
  Numerics nx_;
  ops::Round act_;  // storage format of activations and the KV cache
  int capacity_;
  int slots_;
  std::vector<T> embed_, final_norm_, lm_head_, cos_, sin_;
  std::vector<Layer<T>> layers_;
  std::vector<T> k_cache_, v_cache_, scores_;
  std::vector<T> x_, xb_, q_, k_, v_, att_, gate_, up_, logits_, tp_scratch_;
  BatchColumns cols_;  // tokens, slots and positions of the current pass
  TapHook* hook_ = nullptr;
  WantedSites wanted_;
};

}  // namespace

std::unique_ptr<Runtime> make_cpu_runtime(const Model& model, const Numerics& numerics,
                                          int capacity, int slots) {
  if (numerics.dtype == DType::fp64) {
    return std::make_unique<CpuRuntime<double>>(model, numerics, capacity, slots);
  }
  return std::make_unique<CpuRuntime<float>>(model, numerics, capacity, slots);
}

std::unique_ptr<Runtime> make_runtime(const Model& model, const Numerics& numerics, int capacity,
                                      int slots) {
  return numerics.device == Device::cuda ? make_cuda_runtime(model, numerics, capacity, slots)
                                         : make_cpu_runtime(model, numerics, capacity, slots);
}

std::unique_ptr<Runtime> make_cpu_runtime(const Model& model, DType dtype, int capacity,
                                          int slots) {
  Numerics nx;
  nx.dtype = dtype;
  return make_cpu_runtime(model, nx, capacity, slots);
}

}  // namespace ds
