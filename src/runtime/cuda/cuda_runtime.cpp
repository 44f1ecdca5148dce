// The CUDA backend of the forward skeleton (src/runtime/forward.h): buffers are device memory in
// the precision's storage type, ops are kernels/cuda/ops_cuda.h launched on one stream. Taps are
// copied on that stream into pinned memory and handed to the hook after the pass, so tracing
// never changes a value and never syncs mid-pass. Built into the CUDA module only
// (src/runtime/cuda/module_entry.cpp), never into the driftscope executable.
#include "src/runtime/cuda/cuda_runtime.h"

#include <cuda_runtime.h>

#include <memory>
#include <string>
#include <vector>

#include "kernels/cuda/check.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/cuda/ops_cuda.h"
#include "src/runtime/forward.h"
#include "src/runtime/policy.h"
#include "trace/kernel_recorder.h"

namespace ds::cuda {
namespace {

class CudaBackend {
 public:
  // A device pointer to activations (element offsets scale by the activation type's size).
  struct Ptr {
    unsigned char* p = nullptr;
  };
  struct Buf {
    DeviceBuffer mem;
    size_t elem = 4;
    Ptr ptr(size_t offset) { return {mem.bytes() + offset * elem}; }
  };
  struct Weight {
    DeviceBuffer mem;
    Storage t = Storage::native;
    const void* ptr(size_t offset = 0) const { return mem.bytes() + offset * storage_bytes(t); }
    bool empty() const { return mem.empty(); }
  };

  CudaBackend(const Numerics& nx, const ModelConfig& c)
      : nx_(nx),
        w_t_(weight_storage(nx.dtype)),
        a_t_(activation_storage(nx.dtype)),
        eps_(static_cast<float>(c.rms_norm_eps)),
        vocab_(c.vocab_size),
        dim_(c.dim) {
    DS_CUDA_CHECK(cudaSetDevice(0));
    DS_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    if (nx.gemm_kernel == GemmKernel::cublas) cublas_ = std::make_unique<CublasGemm>();
  }
  ~CudaBackend() {
    cudaStreamSynchronize(stream_);
    cudaStreamDestroy(stream_);
  }
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  Weight upload(const WeightTensor& host) const {
    if (host.format() == Storage::native) return upload_as(host.data(), host.size(), w_t_);
    // 16-bit weights: widened (exactly) a slice at a time, then stored as the precision stores
    // weights, as a float32 copy of them would be
    Weight w;
    w.t = w_t_;
    if (host.empty()) return w;
    const size_t n = host.size(), elem = storage_bytes(w_t_);
    w.mem.ensure(n * elem);
    constexpr size_t kSlice = size_t{1} << 22;
    std::vector<float> f;
    for (size_t i = 0; i < n; i += kSlice) {
      const size_t m = std::min(kSlice, n - i);
      f.resize(m);
      widen(host.halves() + i, f.data(), m, host.format());
      cuda::upload(static_cast<unsigned char*>(w.mem.get()) + i * elem, f.data(), m, w_t_);
    }
    return w;
  }
  // GEMM matrices keep the row-major layout the cuBLAS and tiled kernels read
  Weight upload_matrix(const WeightTensor& host, int /*N*/, int /*K*/) const {
    return upload(host);
  }
  // rope tables: fp32, as the CPU reference's float tables
  Weight upload_table(const std::vector<double>& host) const {
    const std::vector<float> f(host.begin(), host.end());
    return upload_as(f.data(), f.size(), Storage::native);
  }
  void resize(Buf& b, size_t n) const {
    b.elem = storage_bytes(a_t_);
    b.mem.ensure(n * b.elem + 1);
  }
  void resize_zeroed(Buf& b, size_t n) const {
    resize(b, n);
    DS_CUDA_CHECK(cudaMemset(b.mem.get(), 0, n * b.elem));
  }
  // uploads and memsets ran on the default stream, which the non-blocking stream_ ignores
  void ready() const { DS_CUDA_CHECK(cudaDeviceSynchronize()); }
  void set_recorder(trace::KernelRecorder* recorder) { recorder_ = recorder; }
  void set_hook(TapHook* hook, const WantedSites& wanted) {
    hook_ = hook;
    // pinned staging per row: every wanted hidden site (the logits come back anyway)
    tap_row_bytes_ = static_cast<size_t>(wanted.hidden_sites()) * dim_ * storage_bytes(a_t_);
  }

  void begin_pass(const BatchColumns& cols) {
    cols_ = &cols;
    const size_t n = cols.tokens.size();
    tokens_d_.ensure(n * sizeof(int32_t));
    slot_d_.ensure(n * sizeof(int));
    pos_d_.ensure(n * sizeof(int));
    tap_host_.ensure(n * tap_row_bytes_ + 1);
    DS_CUDA_CHECK(cudaMemcpyAsync(tokens_d_.get(), cols.tokens.data(), n * sizeof(int32_t),
                                  cudaMemcpyHostToDevice, stream_));
    DS_CUDA_CHECK(cudaMemcpyAsync(slot_d_.get(), cols.slot.data(), n * sizeof(int),
                                  cudaMemcpyHostToDevice, stream_));
    DS_CUDA_CHECK(cudaMemcpyAsync(pos_d_.get(), cols.pos.data(), n * sizeof(int),
                                  cudaMemcpyHostToDevice, stream_));
    taps_.clear();
    tap_used_ = 0;
    logits_tapped_ = false;
  }

  // Marks the kernels launched in its scope as (pass, site, op) for the kernel recorder.
  class Scope {
   public:
    Scope(trace::KernelRecorder* r, int pass, const std::string& site, const char* label) : r_(r) {
      if (r_ != nullptr) r_->begin_op(pass, site, label);
    }
    ~Scope() {
      if (r_ != nullptr) r_->end_op();
    }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    trace::KernelRecorder* r_;
  };
  Scope op(const std::string& site, const char* label) const {
    return Scope(recorder_, pass_, site, label);
  }
  Ptr offset(Ptr p, size_t n) const { return {p.p + n * storage_bytes(a_t_)}; }

  void embedding(Ptr x, const Weight& table, int n, int dim) const {
    cuda::embedding(x.p, a_t_, table.ptr(), table.t, tokens_d_.as<int32_t>(), n, dim, stream_);
  }
  void rmsnorm(Ptr y, Ptr x, const Weight& w, int n, int dim) const {
    cuda::rmsnorm(y.p, x.p, a_t_, w.ptr(), w.t, n, dim, eps_, stream_);
  }
  void gemm(Ptr y, Ptr x, const Weight& w, const Weight* b, const GemmCall& call) {
    GemmArgs g;
    g.y = y.p;
    g.y_t = a_t_;
    g.x = x.p;
    g.x_t = a_t_;
    g.ldx = call.ldx;
    g.w = w.ptr(call.w_col);
    g.w_t = w.t;
    g.ldw = call.ldw;
    g.bias = b != nullptr ? b->ptr() : nullptr;
    g.M = call.M;
    g.N = call.N;
    g.K = call.K;
    g.accum_f16 = nx_.accum_f16;
    if (nx_.gemm_kernel == GemmKernel::tiled) {
      g.split_k = call.split_k;
      gemm_ws_.ensure(gemm_tiled_workspace_floats(g) * sizeof(float) + 1);
      gemm_tiled(g, gemm_ws_.as<float>(), stream_);
      return;
    }
    // cuBLAS: an explicit split, 1 under the invariant policy, else cuBLASLt's own choice.
    g.split_k = nx_.split_k > 0 ? nx_.split_k : (nx_.gemm_policy == GemmPolicy::invariant ? 1 : 0);
    cublas_->run(g, nx_.tf32, stream_);
  }
  void rope(Ptr x, int n, int heads, int head_dim, const Weight& cos, const Weight& sin) const {
    cuda::rope(x.p, a_t_, n, heads, head_dim, pos_d_.as<int>(),
               static_cast<const float*>(cos.ptr()), static_cast<const float*>(sin.ptr()), stream_);
  }
  void copy(Ptr dst, Ptr src, size_t n) const {
    DS_CUDA_CHECK(
        cudaMemcpyAsync(dst.p, src.p, n * storage_bytes(a_t_), cudaMemcpyDeviceToDevice, stream_));
  }
  // One sequence's rows against its slot's cache (k_cache, v_cache: the slot's layer at pos 0).
  void attention(Ptr out, Ptr q, Ptr k_cache, Ptr v_cache, const AttentionCall& c) {
    AttentionArgs a;
    a.out = out.p;
    a.q = q.p;
    a.k_cache = k_cache.p;
    a.v_cache = v_cache.p;
    a.t = a_t_;
    a.rows = c.rows;
    a.row_slot = slot_d_.as<int>() + c.r0;
    a.positions = pos_d_.as<int>() + c.r0;
    a.slot_stride = 0;  // every row of the call reads this slot's cache
    a.n_heads = c.n_heads;
    a.n_kv_heads = c.n_kv_heads;
    a.head_dim = c.head_dim;
    a.window = c.window;
    a.max_keys = c.max_keys;
    a.scale = static_cast<float>(c.scale);
    a.accum_f16 = nx_.accum_f16;
    a.splits = c.splits;
    attn_scratch_.ensure(attention_scratch_floats(a) * sizeof(float));
    cuda::attention(a, attn_scratch_.as<float>(), stream_);
  }
  void swiglu(Ptr out, Ptr gate, Ptr up, size_t n) const {
    cuda::swiglu(out.p, gate.p, up.p, a_t_, n, stream_);
  }
  void add(Ptr y, Ptr a, Ptr b, size_t n) const { cuda::add(y.p, a.p, b.p, a_t_, n, stream_); }
  void all_reduce(Ptr y, Ptr parts, int tp, size_t n, ops::AllReduce order) const {
    cuda::all_reduce(y.p, parts.p, a_t_, tp, n, order, stream_);
  }

  // Queues a copy of the tensor as it is now into pinned memory, on the producing stream; the
  // logits are copied by end_pass anyway.
  void tap(const Site& site, Ptr p, int n, int width) {
    if (site.kind == SiteKind::logits) {
      logits_tapped_ = true;
      return;
    }
    const size_t bytes = static_cast<size_t>(n) * width * storage_bytes(a_t_);
    DS_CUDA_CHECK(
        cudaMemcpyAsync(tap_host_.get() + tap_used_, p.p, bytes, cudaMemcpyDeviceToHost, stream_));
    taps_.push_back({site, tap_used_, width});
    tap_used_ += bytes;
  }

  // Logits to the host (as double), then every tapped tensor handed to the hook in forward order.
  void end_pass(Ptr logits, int n, std::vector<double>& out) {
    const size_t count = static_cast<size_t>(n) * vocab_;
    logits_host_.ensure(count * storage_bytes(a_t_));
    DS_CUDA_CHECK(cudaMemcpyAsync(logits_host_.get(), logits.p, count * storage_bytes(a_t_),
                                  cudaMemcpyDeviceToHost, stream_));
    DS_CUDA_CHECK(cudaStreamSynchronize(stream_));
    ++pass_;
    std::vector<float> row(count);
    widen_host(logits_host_.get(), a_t_, count, row.data());
    out.assign(row.begin(), row.end());
    if (hook_ == nullptr) return;
    std::vector<float> values;
    auto hand_over = [&](const Site& site, const float* data, int width) {
      hook_->on_tap(site, tap_tensor(data, n, width, cols_->slot.data(), cols_->pos.data()));
    };
    for (const PendingTap& p : taps_) {
      values.resize(static_cast<size_t>(n) * p.width);
      widen_host(tap_host_.get() + p.offset, a_t_, values.size(), values.data());
      hand_over(p.site, values.data(), p.width);
    }
    if (logits_tapped_) hand_over({SiteKind::logits}, row.data(), vocab_);
  }

 private:
  static Weight upload_as(const float* host, size_t n, Storage t) {
    Weight w;
    w.t = t;
    if (n == 0) return w;
    w.mem.ensure(n * storage_bytes(t));
    cuda::upload(w.mem.get(), host, n, t);
    return w;
  }

  struct PendingTap {
    Site site;
    size_t offset;
    int width;
  };

  Numerics nx_;
  Storage w_t_, a_t_;  // storage of weights; of activations and the KV cache
  float eps_;
  int vocab_;
  int dim_;
  int pass_ = 0;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<CublasGemm> cublas_;
  DeviceBuffer tokens_d_, slot_d_, pos_d_, attn_scratch_, gemm_ws_;
  PinnedBuffer logits_host_, tap_host_;
  size_t tap_row_bytes_ = 0, tap_used_ = 0;
  std::vector<PendingTap> taps_;
  bool logits_tapped_ = false;
  const BatchColumns* cols_ = nullptr;
  TapHook* hook_ = nullptr;
  trace::KernelRecorder* recorder_ = nullptr;
};

}  // namespace

std::unique_ptr<Runtime> make_runtime(const Model& model, const Numerics& numerics, int capacity,
                                      int slots) {
  return std::make_unique<ForwardRuntime<CudaBackend>>(model, numerics, capacity, slots);
}

}  // namespace ds::cuda
