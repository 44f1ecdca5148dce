// CUDA forward pass (Llama / Mistral / Qwen2): the CPU reference's blocks (src/runtime/cpu_runtime.cpp)
// with each op launched on one stream through kernels/cuda/ops_cuda.h. Buffers are shaped
// (rows, width) for the rows of this call. Taps are copied on the stream into pinned memory and
// handed to the hook after the pass, so tracing never changes a value and never syncs mid-pass.
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <array>
#include <cmath>
#include <cstring>
#include <utility>

#include "common/error.h"
#include "common/float_formats.h"
#include "kernels/cuda/ops_cuda.h"
#include "src/runtime/rope_table.h"
#include "src/runtime/runtime.h"
#include "src/runtime/policy.h"
#include "trace/kernel_recorder.h"

namespace ds {
namespace {

using cuda::DT;

void check(cudaError_t e, const char* what, const char* file, int line) {
  if (e != cudaSuccess) {
    throw Error(fmt::format("CUDA: {} failed: {} ({}:{})", what, cudaGetErrorString(e), file, line),
                "`nvidia-smi` shows the device state; CUDA_LAUNCH_BLOCKING=1 finds the failing op");
  }
}
#define DS_CHECK(call) check((call), #call, __FILE__, __LINE__)

// Device memory that grows on demand (contents are not kept when it grows).
class DevBuf {
 public:
  DevBuf() = default;
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
  DevBuf(DevBuf&& o) noexcept : p_(o.p_), bytes_(o.bytes_) { o.p_ = nullptr, o.bytes_ = 0; }
  DevBuf& operator=(DevBuf&& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  ~DevBuf() { cudaFree(p_); }
  void ensure(size_t bytes) {
    if (bytes <= bytes_) return;
    if (p_ != nullptr) DS_CHECK(cudaDeviceSynchronize());  // queued work may still use it
    cudaFree(p_);
    p_ = nullptr;
    bytes_ = 0;
    DS_CHECK(cudaMalloc(&p_, bytes));
    bytes_ = bytes;
  }
  void* get() const { return p_; }
  template <typename U>
  U* as() const {
    return static_cast<U*>(p_);
  }
  bool empty() const { return p_ == nullptr; }

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

// Pinned host memory that grows on demand.
class PinnedBuf {
 public:
  PinnedBuf() = default;
  PinnedBuf(const PinnedBuf&) = delete;
  PinnedBuf& operator=(const PinnedBuf&) = delete;
  ~PinnedBuf() { cudaFreeHost(p_); }
  void ensure(size_t bytes) {
    if (bytes <= bytes_) return;
    cudaFreeHost(p_);
    p_ = nullptr;
    bytes_ = 0;
    DS_CHECK(cudaMallocHost(&p_, bytes));
    bytes_ = bytes;
  }
  unsigned char* get() const { return static_cast<unsigned char*>(p_); }

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

// Weights and activations storage per precision (the CPU reference's weight_round / act_round).
DT weight_type(DType d) {
  switch (d) {
    case DType::fp16:
      return DT::f16;
    case DType::bf16:
    case DType::layercast:
      return DT::bf16;
    default:
      return DT::f32;
  }
}
DT act_type(DType d) {
  switch (d) {
    case DType::fp16:
      return DT::f16;
    case DType::bf16:
      return DT::bf16;
    default:
      return DT::f32;
  }
}

// Host floats -> device buffer of type t (round to nearest even when narrowing).
DevBuf upload(const std::vector<float>& v, DT t) {
  DevBuf b;
  if (v.empty()) return b;
  b.ensure(v.size() * cuda::dt_bytes(t));
  if (t == DT::f32) {
    DS_CHECK(cudaMemcpy(b.get(), v.data(), v.size() * 4, cudaMemcpyHostToDevice));
    return b;
  }
  std::vector<uint16_t> bits(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    bits[i] = t == DT::f16 ? f32_to_f16_bits(v[i]) : f32_to_bf16_bits(v[i]);
  }
  DS_CHECK(cudaMemcpy(b.get(), bits.data(), bits.size() * 2, cudaMemcpyHostToDevice));
  return b;
}

// n values of type t at p -> float.
void widen(const unsigned char* p, DT t, size_t n, float* out) {
  if (t == DT::f32) {
    std::memcpy(out, p, n * 4);
    return;
  }
  const auto* bits = reinterpret_cast<const uint16_t*>(p);
  for (size_t i = 0; i < n; ++i) {
    out[i] = t == DT::f16 ? f16_bits_to_f32(bits[i]) : bf16_bits_to_f32(bits[i]);
  }
}

struct LayerBufs {
  DevBuf attn_norm, wq, wk, wv, bq, bk, bv, wo, mlp_norm, w_gate, w_up, w_down;
};

class CudaRuntime final : public Runtime {
 public:
  CudaRuntime(const Model& m, const Numerics& nx, int capacity, int slots)
      : c_(m.config),
        nx_(nx),
        w_t_(weight_type(nx.dtype)),
        a_t_(act_type(nx.dtype)),
        capacity_(capacity),
        slots_(slots) {
    check_runtime_setup(c_, nx, capacity, slots);
    DS_CHECK(cudaSetDevice(0));
    DS_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    embed_ = upload(m.weights.embed, w_t_);
    for (const auto& w : m.weights.layers) {
      layers_.push_back({upload(w.attn_norm, w_t_), upload(w.wq, w_t_), upload(w.wk, w_t_),
                         upload(w.wv, w_t_), upload(w.bq, w_t_), upload(w.bk, w_t_),
                         upload(w.bv, w_t_), upload(w.wo, w_t_), upload(w.mlp_norm, w_t_),
                         upload(w.w_gate, w_t_), upload(w.w_up, w_t_), upload(w.w_down, w_t_)});
    }
    final_norm_ = upload(m.weights.final_norm, w_t_);
    if (!m.weights.lm_head.empty()) lm_head_ = upload(m.weights.lm_head, w_t_);
    RopeTable rt = rope_table(c_, capacity);
    cos_ = upload(std::vector<float>(rt.cos.begin(), rt.cos.end()),
                  DT::f32);  // as the CPU's float tables
    sin_ = upload(std::vector<float>(rt.sin.begin(), rt.sin.end()), DT::f32);
    const size_t cache = static_cast<size_t>(slots) * c_.n_layers * capacity * c_.kv_dim();
    k_cache_.ensure(cache * cuda::dt_bytes(a_t_));  // (slots, n_layers, capacity, kv_dim)
    v_cache_.ensure(cache * cuda::dt_bytes(a_t_));  // (slots, n_layers, capacity, kv_dim)
    DS_CHECK(cudaMemset(k_cache_.get(), 0, cache * cuda::dt_bytes(a_t_)));
    DS_CHECK(cudaMemset(v_cache_.get(), 0, cache * cuda::dt_bytes(a_t_)));
    if (nx.gemm_kernel == GemmKernel::cublas) cublas_ = std::make_unique<cuda::CublasGemm>();
    for (int l = 0; l < c_.n_layers; ++l) {
      std::array<std::string, kLayerSiteKinds> names;
      for (int k = 0; k < kLayerSiteKinds; ++k) {
        names[k] = site_name({static_cast<SiteKind>(static_cast<int>(SiteKind::attn_norm) + k), l});
      }
      layer_sites_.push_back(names);
    }
    set_tap_hook(nullptr);
    // uploads and memsets ran on the default stream, which the non-blocking stream_ ignores
    DS_CHECK(cudaDeviceSynchronize());
  }

  ~CudaRuntime() override {
    cudaStreamSynchronize(stream_);
    cudaStreamDestroy(stream_);
  }

  int capacity() const override { return capacity_; }
  int slots() const override { return slots_; }
  const ModelConfig& config() const override { return c_; }
  void set_kernel_recorder(trace::KernelRecorder* recorder) override { recorder_ = recorder; }
  using Runtime::forward;

  void set_tap_hook(TapHook* hook) override {
    hook_ = hook;
    wanted_.ask(hook, c_.n_layers);
    // pinned staging per row: every wanted hidden site (logits rows are copied anyway)
    tap_row_bytes_ = static_cast<size_t>(wanted_.hidden_sites()) * c_.dim * cuda::dt_bytes(a_t_);
  }

  void forward(std::span<const BatchRow> rows, std::vector<double>& logits) override {
    const int n = static_cast<int>(rows.size());
    if (n == 0) return;
    cols_.assign(rows, c_.vocab_size, slots_, capacity_);
    resize(n);
    DS_CHECK(cudaMemcpyAsync(tokens_d_.get(), cols_.tokens.data(), n * sizeof(int32_t),
                             cudaMemcpyHostToDevice, stream_));
    DS_CHECK(cudaMemcpyAsync(slot_d_.get(), cols_.slot.data(), n * sizeof(int),
                             cudaMemcpyHostToDevice, stream_));
    DS_CHECK(cudaMemcpyAsync(pos_d_.get(), cols_.pos.data(), n * sizeof(int),
                             cudaMemcpyHostToDevice, stream_));
    taps_.clear();
    tap_used_ = 0;

    {
      Op op(this, "embed", "embedding");
      cuda::embedding(x_.get(), a_t_, embed_.get(), w_t_, tokens_d_.as<int32_t>(), n, c_.dim,
                      stream_);
    }
    if (wanted_.embed) tap({SiteKind::embed}, x_, n, c_.dim);
    for (int l = 0; l < c_.n_layers; ++l) {
      attention_block(l, n);
      mlp_block(l, n);
    }
    {
      Op op(this, "final_norm", "rmsnorm");
      cuda::rmsnorm(xb_.get(), x_.get(), a_t_, final_norm_.get(), w_t_, n, c_.dim,
                    static_cast<float>(c_.rms_norm_eps), stream_);
    }
    if (wanted_.final_norm) tap({SiteKind::final_norm}, xb_, n, c_.dim);
    {
      Op op(this, "logits", "lm_head");
      gemm(logits_.get(), xb_.get(), lm_head_.empty() ? embed_ : lm_head_, DevBuf_null(), n,
           c_.vocab_size, c_.dim);
    }
    const size_t logit_count = static_cast<size_t>(n) * c_.vocab_size;
    logits_host_.ensure(logit_count * cuda::dt_bytes(a_t_));
    DS_CHECK(cudaMemcpyAsync(logits_host_.get(), logits_.get(), logit_count * cuda::dt_bytes(a_t_),
                             cudaMemcpyDeviceToHost, stream_));
    DS_CHECK(cudaStreamSynchronize(stream_));
    ++pass_;

    std::vector<float> row(logit_count);
    widen(logits_host_.get(), a_t_, logit_count, row.data());
    logits.assign(row.begin(), row.end());
    deliver_taps(n, row);
  }

 private:
  // Marks the kernels launched in its scope as (pass, site, op) for the kernel recorder.
  struct Op {
    Op(CudaRuntime* rt, const std::string& site, const char* op) : rt_(rt) {
      if (rt_->recorder_ != nullptr) rt_->recorder_->begin_op(rt_->pass_, site, op);
    }
    ~Op() {
      if (rt_->recorder_ != nullptr) rt_->recorder_->end_op();
    }
    CudaRuntime* rt_;
  };

  static const DevBuf& DevBuf_null() {
    static const DevBuf none;
    return none;
  }

  const std::string& lsite(int l, SiteKind k) const {
    return layer_sites_[l][static_cast<int>(k) - static_cast<int>(SiteKind::attn_norm)];
  }

  // x <- x + o_proj(attention(rope(q), rope(k), v)) over rmsnorm(x)
  void attention_block(int l, int n) {
    const LayerBufs& w = layers_[l];
    const int D = c_.dim, Q = c_.q_dim(), KV = c_.kv_dim();
    const float eps = static_cast<float>(c_.rms_norm_eps);
    {
      Op op(this, lsite(l, SiteKind::attn_norm), "rmsnorm");
      cuda::rmsnorm(xb_.get(), x_.get(), a_t_, w.attn_norm.get(), w_t_, n, D, eps, stream_);
    }
    tap_layer(l, SiteKind::attn_norm, xb_, n, D);
    const std::string& site = lsite(l, SiteKind::attn_out);
    {
      Op op(this, site, "q_proj");
      gemm(q_.get(), xb_.get(), w.wq, w.bq, n, Q, D);  // (n, q_dim)
    }
    {
      Op op(this, site, "k_proj");
      gemm(k_.get(), xb_.get(), w.wk, w.bk, n, KV, D);  // (n, kv_dim)
    }
    {
      Op op(this, site, "v_proj");
      gemm(v_.get(), xb_.get(), w.wv, w.bv, n, KV, D);  // (n, kv_dim)
    }
    {
      Op op(this, site, "rope");
      cuda::rope(q_.get(), a_t_, n, c_.n_heads, c_.head_dim, pos_d_.as<int>(), cos_.as<float>(),
                 sin_.as<float>(), stream_);
      cuda::rope(k_.get(), a_t_, n, c_.n_kv_heads, c_.head_dim, pos_d_.as<int>(), cos_.as<float>(),
                 sin_.as<float>(), stream_);
    }
    const size_t row_bytes = static_cast<size_t>(KV) * cuda::dt_bytes(a_t_);
    const size_t q_row_bytes = static_cast<size_t>(Q) * cuda::dt_bytes(a_t_);
    for (int r0 = 0; r0 < n;) {  // per sequence: rows of one slot are contiguous
      int r1 = r0 + 1;
      while (r1 < n && cols_.slot[r1] == cols_.slot[r0]) ++r1;
      // append to the slot's cache (stored like activations): consecutive positions, so the
      // sequence's new keys and values are one contiguous copy each
      const size_t bytes = (r1 - r0) * row_bytes;
      DS_CHECK(cudaMemcpyAsync(cache_row(k_cache_, cols_.slot[r0], l, cols_.pos[r0]),
                               k_.as<unsigned char>() + r0 * row_bytes, bytes,
                               cudaMemcpyDeviceToDevice, stream_));
      DS_CHECK(cudaMemcpyAsync(cache_row(v_cache_, cols_.slot[r0], l, cols_.pos[r0]),
                               v_.as<unsigned char>() + r0 * row_bytes, bytes,
                               cudaMemcpyDeviceToDevice, stream_));
      cuda::AttentionArgs a;
      a.out = att_.as<unsigned char>() + r0 * q_row_bytes;
      a.q = q_.as<unsigned char>() + r0 * q_row_bytes;
      a.k_cache = cache_row(k_cache_, 0, l, 0);
      a.v_cache = cache_row(v_cache_, 0, l, 0);
      a.t = a_t_;
      a.rows = r1 - r0;
      a.row_slot = slot_d_.as<int>() + r0;
      a.positions = pos_d_.as<int>() + r0;
      a.slot_stride = static_cast<size_t>(c_.n_layers) * capacity_ * KV;
      a.n_heads = c_.n_heads;
      a.n_kv_heads = c_.n_kv_heads;
      a.head_dim = c_.head_dim;
      a.window = c_.sliding_window;
      a.max_keys = cols_.pos[r1 - 1] + 1;
      a.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(c_.head_dim)));
      a.accum_f16 = nx_.accum_f16;
      a.splits = attention_splits(nx_, r1 - r0, cols_.pos[r1 - 1] + 1, cols_.n_seqs, c_.n_heads);
      attn_scratch_.ensure(cuda::attention_scratch_floats(a) * sizeof(float));
      Op op(this, site, "attention");
      cuda::attention(a, attn_scratch_.as<float>(), stream_);
      r0 = r1;
    }
    {
      Op op(this, site, "o_proj");
      row_parallel_gemm(xb_.get(), att_.get(), w.wo, n, D, Q);  // (n, dim)
    }
    tap_layer(l, SiteKind::attn_out, xb_, n, D);
    {
      Op op(this, lsite(l, SiteKind::resid_mid), "residual_add");
      cuda::add(x_.get(), x_.get(), xb_.get(), a_t_, static_cast<size_t>(n) * D, stream_);
    }
    tap_layer(l, SiteKind::resid_mid, x_, n, D);
  }

  // x <- x + down(silu(gate(h)) * up(h)), h = rmsnorm(x)
  void mlp_block(int l, int n) {
    const LayerBufs& w = layers_[l];
    const int D = c_.dim, F = c_.hidden_dim;
    {
      Op op(this, lsite(l, SiteKind::mlp_norm), "rmsnorm");
      cuda::rmsnorm(xb_.get(), x_.get(), a_t_, w.mlp_norm.get(), w_t_, n, D,
                    static_cast<float>(c_.rms_norm_eps), stream_);
    }
    tap_layer(l, SiteKind::mlp_norm, xb_, n, D);
    const std::string& site = lsite(l, SiteKind::mlp_out);
    {
      Op op(this, site, "gate_proj");
      gemm(gate_.get(), xb_.get(), w.w_gate, DevBuf_null(), n, F, D);  // (n, hidden)
    }
    {
      Op op(this, site, "up_proj");
      gemm(up_.get(), xb_.get(), w.w_up, DevBuf_null(), n, F, D);  // (n, hidden)
    }
    {
      Op op(this, site, "swiglu");
      cuda::swiglu(gate_.get(), gate_.get(), up_.get(), a_t_, static_cast<size_t>(n) * F, stream_);
    }
    {
      Op op(this, site, "down_proj");
      row_parallel_gemm(xb_.get(), gate_.get(), w.w_down, n, D, F);  // (n, dim)
    }
    tap_layer(l, SiteKind::mlp_out, xb_, n, D);
    {
      Op op(this, lsite(l, SiteKind::out), "residual_add");
      cuda::add(x_.get(), x_.get(), xb_.get(), a_t_, static_cast<size_t>(n) * D, stream_);
    }
    tap_layer(l, SiteKind::out, x_, n, D);
  }

  // y (M, N) = x (M, K; rows ldx apart) w^T (+ b), with the configured implementation and split.
  void gemm_at(void* y, const void* x, int ldx, const void* w, int ldw, const void* b, int M, int N,
               int K) {
    cuda::GemmArgs g;
    g.y = y;
    g.y_t = a_t_;
    g.x = x;
    g.x_t = a_t_;
    g.ldx = ldx;
    g.w = w;
    g.w_t = w_t_;
    g.ldw = ldw;
    g.bias = b;
    g.M = M;
    g.N = N;
    g.K = K;
    g.accum_f16 = nx_.accum_f16;
    if (nx_.gemm_kernel == GemmKernel::tiled) {
      g.split_k = gemm_split_k(nx_, M, N, K);
      gemm_ws_.ensure(cuda::gemm_tiled_workspace_floats(g) * sizeof(float) + 1);
      cuda::gemm_tiled(g, gemm_ws_.as<float>(), stream_);
      return;
    }
    // cuBLAS: an explicit split, 1 under the invariant policy, else cuBLASLt's own choice.
    g.split_k = nx_.split_k > 0 ? nx_.split_k : (nx_.gemm_policy == GemmPolicy::invariant ? 1 : 0);
    if (w_t_ != a_t_) {  // layercast: upcast the weight (its N rows of ldw) right before the GEMM
      const size_t count = static_cast<size_t>(N - 1) * ldw + K;  // rows of a TP shard end early
      upcast_.ensure(count * cuda::dt_bytes(a_t_));
      cuda::cast(upcast_.get(), a_t_, w, w_t_, count, stream_);
      g.w = upcast_.get();
      g.w_t = a_t_;
      if (b != nullptr) {
        bias_upcast_.ensure(static_cast<size_t>(N) * cuda::dt_bytes(a_t_));
        cuda::cast(bias_upcast_.get(), a_t_, b, w_t_, N, stream_);
        g.bias = bias_upcast_.get();
      }
    }
    cublas_->run(g, nx_.tf32, stream_);
  }

  void gemm(void* y, const void* x, const DevBuf& w, const DevBuf& b, int M, int N, int K) {
    gemm_at(y, x, K, w.get(), K, b.empty() ? nullptr : b.get(), M, N, K);
  }

  // o_proj / down_proj: K split over tp ranks, partial results all-reduced (kernels/ops.h).
  void row_parallel_gemm(void* y, const void* x, const DevBuf& w, int M, int N, int K) {
    const int tp = nx_.tp;
    if (tp <= 1) {
      gemm(y, x, w, DevBuf_null(), M, N, K);
      return;
    }
    const int ks = K / tp;
    const size_t mn = static_cast<size_t>(M) * N, eb = cuda::dt_bytes(a_t_);
    tp_scratch_.ensure((tp + 1) * mn * eb);
    auto part = [&](int s) { return tp_scratch_.as<unsigned char>() + s * mn * eb; };
    const auto* xb = static_cast<const unsigned char*>(x);
    const auto* wb = w.as<unsigned char>();
    for (int s = 0; s < tp; ++s) {
      gemm_at(part(s), xb + static_cast<size_t>(s) * ks * eb, K,
              wb + static_cast<size_t>(s) * ks * cuda::dt_bytes(w_t_), K, nullptr, M, N, ks);
    }
    if (nx_.allreduce == ops::AllReduce::ring) {
      DS_CHECK(cudaMemcpyAsync(y, part(0), mn * eb, cudaMemcpyDeviceToDevice, stream_));
      for (int s = 1; s < tp; ++s) cuda::add(y, y, part(s), a_t_, mn, stream_);
      return;
    }
    for (int width = tp; width > 1; width = (width + 1) / 2) {  // tree, as the CPU reference
      for (int s = 0; 2 * s + 1 < width; ++s)
        cuda::add(part(s), part(2 * s), part(2 * s + 1), a_t_, mn, stream_);
      if (width % 2 == 1) {
        DS_CHECK(cudaMemcpyAsync(part(width / 2), part(width - 1), mn * eb,
                                 cudaMemcpyDeviceToDevice, stream_));
      }
    }
    DS_CHECK(cudaMemcpyAsync(y, part(0), mn * eb, cudaMemcpyDeviceToDevice, stream_));
  }

  void* cache_row(const DevBuf& cache, int slot, int layer, int pos) const {
    const size_t idx =
        ((static_cast<size_t>(slot) * c_.n_layers + layer) * capacity_ + pos) * c_.kv_dim();
    return cache.as<unsigned char>() + idx * cuda::dt_bytes(a_t_);
  }

  void tap_layer(int l, SiteKind k, const DevBuf& buf, int n, int width) {
    if (wanted_.at(l, k)) {
      tap({k, l}, buf, n, width);
    }
  }

  // Queues a copy of the tensor as it is now into pinned memory, on the producing stream.
  void tap(const Site& site, const DevBuf& buf, int n, int width) {
    const size_t bytes = static_cast<size_t>(n) * width * cuda::dt_bytes(a_t_);
    DS_CHECK(cudaMemcpyAsync(tap_host_.get() + tap_used_, buf.get(), bytes, cudaMemcpyDeviceToHost,
                             stream_));
    taps_.push_back({site, tap_used_, width});
    tap_used_ += bytes;
  }

  // After the pass: hands every tapped tensor (and the logits) to the hook, in forward order.
  void deliver_taps(int n, const std::vector<float>& logits) {
    if (hook_ == nullptr) return;
    std::vector<float> values;
    auto hand_over = [&](const Site& site, const float* data, int width) {
      TapTensor t;
      t.f32 = data;
      t.rows = n;
      t.width = width;
      t.slot = cols_.slot.data();
      t.pos = cols_.pos.data();
      hook_->on_tap(site, t);
    };
    for (const PendingTap& p : taps_) {
      values.resize(static_cast<size_t>(n) * p.width);
      widen(tap_host_.get() + p.offset, a_t_, values.size(), values.data());
      hand_over(p.site, values.data(), p.width);
    }
    if (wanted_.logits) hand_over({SiteKind::logits}, logits.data(), c_.vocab_size);
  }

  void resize(int n) {
    const size_t rows = static_cast<size_t>(n), eb = cuda::dt_bytes(a_t_);
    x_.ensure(rows * c_.dim * eb);              // (n, dim) residual stream
    xb_.ensure(rows * c_.dim * eb);             // (n, dim) normed input / block output
    q_.ensure(rows * c_.q_dim() * eb);          // (n, q_dim)
    k_.ensure(rows * c_.kv_dim() * eb);         // (n, kv_dim)
    v_.ensure(rows * c_.kv_dim() * eb);         // (n, kv_dim)
    att_.ensure(rows * c_.q_dim() * eb);        // (n, q_dim) attention output before o_proj
    gate_.ensure(rows * c_.hidden_dim * eb);    // (n, hidden)
    up_.ensure(rows * c_.hidden_dim * eb);      // (n, hidden)
    logits_.ensure(rows * c_.vocab_size * eb);  // (n, vocab)
    tokens_d_.ensure(rows * sizeof(int32_t));
    slot_d_.ensure(rows * sizeof(int));
    pos_d_.ensure(rows * sizeof(int));
    tap_host_.ensure(rows * tap_row_bytes_ + 1);
  }

  struct PendingTap {
    Site site;
    size_t offset;
    int width;
  };

  ModelConfig c_;
  Numerics nx_;
  DT w_t_, a_t_;  // storage of weights, of activations and the KV cache
  int capacity_;
  int slots_;
  int pass_ = 0;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<cuda::CublasGemm> cublas_;
  DevBuf embed_, final_norm_, lm_head_, cos_, sin_;
  std::vector<LayerBufs> layers_;
  std::vector<std::array<std::string, kLayerSiteKinds>> layer_sites_;
  DevBuf k_cache_, v_cache_;
  DevBuf x_, xb_, q_, k_, v_, att_, gate_, up_, logits_;
  DevBuf tokens_d_, slot_d_, pos_d_;
  DevBuf attn_scratch_, gemm_ws_, tp_scratch_, upcast_, bias_upcast_;
  PinnedBuf logits_host_, tap_host_;
  size_t tap_row_bytes_ = 0, tap_used_ = 0;
  std::vector<PendingTap> taps_;
  BatchColumns cols_;  // tokens, slots and positions of the current pass
  TapHook* hook_ = nullptr;
  trace::KernelRecorder* recorder_ = nullptr;
  WantedSites wanted_;
};

}  // namespace

std::unique_ptr<Runtime> make_cuda_runtime(const Model& model, const Numerics& numerics,
                                           int capacity, int slots) {
  check_cuda_support(numerics);
  return std::make_unique<CudaRuntime>(model, numerics, capacity, slots);
}

}  // namespace ds
