// The CPU reference backend of the forward skeleton (forward.h): buffers are std::vector<T>, ops
// are kernels/ops.h on T = float (fp32, and fp16 / bf16 / layercast emulated by rounding where a
// GPU stores) or T = double (the fp64 oracle). Taps hand the buffer to the hook at once.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <type_traits>

#include "common/error.h"
#include "kernels/ops.h"
#include "src/model/memory.h"
#include "src/runtime/forward.h"
#include "src/runtime/runtime.h"

namespace ds {

namespace {

template <typename T>
class CpuBackend {
 public:
  using Ptr = T*;
  struct Buf {
    std::vector<T> v;
    T* ptr(size_t offset) { return v.data() + offset; }
  };
  // A weight used in place: the model's float32 values (mapped from the file, or the loader's
  // own copy) when they are what this precision computes from, else this backend's rounded copy.
  struct Weight {
    std::shared_ptr<const void> owner;  // keeps the values valid
    const T* values = nullptr;
    size_t n = 0;
    const T* ptr(size_t offset = 0) const { return values + offset; }
    bool empty() const { return n == 0; }
  };

  CpuBackend(const Numerics& nx, const ModelConfig& c)
      : nx_(nx),
        weights_(weight_storage(nx.dtype)),
        act_(activation_storage(nx.dtype)),
        eps_(c.rms_norm_eps),
        vocab_(c.vocab_size) {}

  // Weights are stored rounded to the precision's weight format; rope tables are not rounded.
  Weight upload(const WeightTensor& host) const {
    if constexpr (std::is_same_v<T, float>) {
      if (weights_ == Storage::native) return {host.owner(), host.data(), host.size()};
    }
    return narrow(host.begin(), host.end(), weights_);
  }
  Weight upload_table(const std::vector<double>& host) const {
    return narrow(host.begin(), host.end(), Storage::native);
  }
  void resize(Buf& b, size_t n) const { b.v.resize(n); }
  void resize_zeroed(Buf& b, size_t n) const { b.v.assign(n, T(0)); }
  void ready() const {}
  void set_recorder(trace::KernelRecorder* /*recorder*/) const {}  // no kernels on the CPU
  void set_hook(TapHook* hook, const WantedSites& /*wanted*/) { hook_ = hook; }
  void begin_pass(const BatchColumns& cols) { cols_ = &cols; }
  struct NoScope {};
  NoScope op(const std::string& /*site*/, const char* /*label*/) const { return {}; }
  static Ptr offset(Ptr p, size_t n) { return p + n; }

  void embedding(Ptr x, const Weight& table, int n, int dim) const {
    ops::embedding(x, table.ptr(), cols_->tokens.data(), n, dim);
  }
  void rmsnorm(Ptr y, Ptr x, const Weight& w, int n, int dim) const {
    ops::rmsnorm(y, x, w.ptr(), n, dim, eps_, act_);
  }
  void gemm(Ptr y, Ptr x, const Weight& w, const Weight* b, const GemmCall& g) const {
    ops::matmul(y, x, g.ldx, w.ptr(g.w_col), g.ldw, b != nullptr ? b->ptr() : nullptr, g.M, g.N,
                g.K, ops::GemmNumerics{act_, nx_.accum_f16, g.split_k});
  }
  void rope(Ptr x, int n, int heads, int head_dim, const Weight& cos, const Weight& sin) const {
    ops::rope(x, n, heads, head_dim, cols_->pos.data(), cos.ptr(), sin.ptr(), act_);
  }
  void copy(Ptr dst, Ptr src, size_t n) const { std::memcpy(dst, src, sizeof(T) * n); }
  void attention(Ptr out, Ptr q, Ptr k_cache, Ptr v_cache, const AttentionCall& a) {
    if (scores_.size() < static_cast<size_t>(a.max_keys)) scores_.resize(a.max_keys);
    ops::attention(out, q, k_cache, v_cache, a.rows, &cols_->pos[a.r0], a.n_heads, a.n_kv_heads,
                   a.head_dim, a.window, T(a.scale),
                   ops::AttnNumerics{act_, act_, nx_.accum_f16, a.splits}, scores_.data());
  }
  void swiglu(Ptr out, Ptr gate, Ptr up, size_t n) const { ops::swiglu(out, gate, up, n, act_); }
  void add(Ptr y, Ptr a, Ptr b, size_t n) const { ops::add(y, a, b, n, act_); }
  // Reference rows into a buffer, stored as this run stores activations.
  void load_rows(Ptr y, const float* host, size_t n) const {
    std::copy(host, host + n, y);
    ops::round_to(y, n, act_);
  }
  void round(Ptr y, size_t n, Storage to) const { ops::round_to(y, n, to); }
  void all_reduce(Ptr y, Ptr parts, int tp, size_t n, ops::AllReduce order) const {
    ops::all_reduce(y, parts, tp, n, order, act_);
  }

  void tap(const Site& site, Ptr p, int n, int width) const {
    hook_->on_tap(site, tap_tensor(p, n, width, cols_->slot.data(), cols_->pos.data()));
  }
  void end_pass(Ptr logits, int n, std::vector<double>& out) const {
    out.assign(logits, logits + static_cast<size_t>(n) * vocab_);
  }

 private:
  template <typename It>
  static Weight narrow(It begin, It end, Storage s) {
    auto out = std::make_shared<std::vector<T>>(begin, end);
    ops::round_to(out->data(), out->size(), s);
    return {out, out->data(), out->size()};
  }

  Numerics nx_;
  Storage weights_, act_;  // storage of weights; of activations and the KV cache
  double eps_;
  int vocab_;
  const BatchColumns* cols_ = nullptr;
  TapHook* hook_ = nullptr;
  std::vector<T> scores_;  // attention scratch, one value per key
};

}  // namespace

std::unique_ptr<Runtime> make_cpu_runtime(const Model& model, const Numerics& numerics,
                                          int capacity, int slots) {
  const int elem = numerics.dtype == DType::fp64 ? 8 : 4;  // weights, activations and KV as T
  const uint64_t kv = kv_bytes_per_token(model.config, elem) * static_cast<uint64_t>(capacity) *
                      static_cast<uint64_t>(std::max(1, slots));
  // fp32 uses the model's float32 weights in place; every other precision keeps its own copy
  const bool in_place = numerics.dtype == DType::fp32;
  const uint64_t weights = in_place ? 0 : weight_bytes_f32(model.config) / 4 * elem;
  const std::string weight_part =
      in_place ? std::string("the model's float32 weights used in place")
               : fmt::format("{} of weights at {} bytes a value", format_bytes(weights), elem);
  check_memory(
      fmt::format("the CPU runtime ({}, and a KV cache of {} positions x {} sequences: {})",
                  weight_part, capacity, slots, format_bytes(kv)),
      weights + kv,
      "a shorter --max-new or a smaller --batch shrinks the KV cache; or use a machine "
      "with more memory");
  if (numerics.dtype == DType::fp64) {
    return std::make_unique<ForwardRuntime<CpuBackend<double>>>(model, numerics, capacity, slots);
  }
  return std::make_unique<ForwardRuntime<CpuBackend<float>>>(model, numerics, capacity, slots);
}

std::unique_ptr<Runtime> make_cpu_runtime(const Model& model, DType dtype, int capacity,
                                          int slots) {
  Numerics nx;
  nx.dtype = dtype;
  return make_cpu_runtime(model, nx, capacity, slots);
}

}  // namespace ds
