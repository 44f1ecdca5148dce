// The CUDA backend of the forward skeleton (src/runtime/forward.h): buffers are device memory in
// the precision's storage type, ops are kernels/cuda/ops_cuda.h launched on one stream. Taps are
// copied on that stream into pinned memory and handed to the hook after the pass, so tracing
// never changes a value and never syncs mid-pass. The logits stay on the device: the greedy token
// of each row, and the trace's top-k and log-sum-exp when the hook takes a summary, are computed
// there (device_logits.h). Passes of up to kGraphRows rows are recorded as CUDA graphs and
// replayed (pass_graphs.h; DRIFTSCOPE_CUDA_GRAPHS=0 turns that off). Built into the CUDA module
// only (src/runtime/cuda/module_entry.cpp), never into the driftscope executable.
#include "src/runtime/cuda/cuda_runtime.h"

#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cuda/check.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/cuda/ops_cuda.h"
#include "src/runtime/cuda/device_logits.h"
#include "src/runtime/cuda/op_timer.h"
#include "src/runtime/cuda/pass_graphs.h"
#include "src/runtime/forward.h"
#include "src/runtime/policy.h"
#include "trace/kernel_recorder.h"

namespace ds::cuda {
namespace {

constexpr int kGraphRows = 256;  // passes of at most this many rows are recorded (decode steps)

bool env_flag(const char* name, bool dflt) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return dflt;
  return std::strcmp(v, "0") != 0 && std::strcmp(v, "off") != 0;
}

class CudaBackend {
 public:
  // A device pointer to activations, with their storage type (ops_cuda.h DevicePtr).
  using Ptr = DevicePtr;
  struct Buf {
    DeviceBuffer mem;
    Storage t = Storage::native;
    Ptr ptr(size_t offset) { return Ptr{mem.get(), t} + offset; }
  };
  struct Weight {
    DeviceBuffer mem;
    Storage t = Storage::native;
    const void* ptr(size_t offset = 0) const { return mem.bytes() + offset * storage_bytes(t); }
    bool empty() const { return mem.empty(); }
  };

  // capacity: positions per slot (the attention scratch's key stride); bytes_needed: the
  // estimate of device memory the runtime takes, checked against what the device has free.
  CudaBackend(const Numerics& nx, const ModelConfig& c, int capacity, size_t bytes_needed)
      : nx_(nx),
        w_t_(weight_storage(nx.dtype)),
        a_t_(activation_storage(nx.dtype)),
        vocab_(c.vocab_size),
        dim_(c.dim),
        kv_dim_(c.kv_dim()),
        n_heads_(c.n_heads),
        capacity_(capacity),
        graphs_on_(env_flag("DRIFTSCOPE_CUDA_GRAPHS", true)) {
    DS_CUDA_CHECK(cudaSetDevice(0));
    check_memory(bytes_needed);
    if (nx.attn_kernel == AttnKernel::tiled && !attention_tiled_supports(a_t_, c.head_dim)) {
      throw Error(fmt::format("attention=tiled on CUDA runs head_dim 16, 32, 64 or 128; this "
                              "model's is {}",
                              c.head_dim),
                  "use --kernel attention=rowwise");
    }
    stream_ = owned_stream_.get();
    if (nx.gemm_kernel == GemmKernel::cublas) cublas_ = std::make_unique<CublasGemm>();
    if (env_flag("DRIFTSCOPE_CUDA_OP_TIMES", false)) timer_ = std::make_unique<OpTimer>(stream_);
    graphs_.set_stream(stream_);
    logits_ = std::make_unique<DeviceLogits>(vocab_, a_t_, stream_);
  }
  // The members that use stream_ (graphs_, timer_, logits_) are declared after owned_stream_,
  // so they go first: PassGraphs' destructor asks the stream whether it is capturing, which on
  // a destroyed stream read freed driver memory (a crash at every CUDA run's exit, seen on an
  // H200).
  ~CudaBackend() = default;
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
    if (host.format() == w_t_) {  // stored as the precision stores it: the bits as they are
      DS_CUDA_CHECK(cudaMemcpy(w.mem.get(), host.halves(), n * elem, cudaMemcpyHostToDevice));
      return w;
    }
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
    b.t = a_t_;
    b.mem.ensure(n * storage_bytes(a_t_) + 1);
  }
  void resize_zeroed(Buf& b, size_t n) const {
    resize(b, n);
    DS_CUDA_CHECK(cudaMemset(b.mem.get(), 0, n * storage_bytes(a_t_)));
  }
  // uploads and memsets ran on the default stream, which the non-blocking stream_ ignores
  void ready() const { DS_CUDA_CHECK(cudaDeviceSynchronize()); }
  void set_recorder(trace::KernelRecorder* recorder) {
    recorder_ = recorder;
    graphs_.clear();  // a replay would launch kernels the recorder never sees attributed
  }
  void set_hook(TapHook* hook, const WantedSites& wanted) {
    hook_ = hook;
    // pinned staging per row: every wanted hidden site
    tap_row_bytes_ = static_cast<size_t>(wanted.hidden_sites()) * dim_ * storage_bytes(a_t_);
    const int k = hook != nullptr && wanted.logits ? hook->logits_summary_k() : 0;
    summary_k_ = k >= 1 && k <= kLogitsTopkMax ? std::min(k, vocab_) : 0;
    wanted_logits_ = wanted.logits;
    graphs_.clear();  // the passes launch other copies now
  }

  void begin_pass(const BatchColumns& cols) {
    cols_ = &cols;
    const int n = static_cast<int>(cols.tokens.size());
    plan_attention(cols);
    upload_columns(cols);
    // what the end of the pass fills: sized now, before any recording
    argmax_d_.ensure(2 * static_cast<size_t>(n) * sizeof(int32_t));
    argmax_h_.ensure(2 * static_cast<size_t>(n) * sizeof(int32_t));
    tap_h_.ensure(n * tap_row_bytes_ + 1);
    if (summary_k_ > 0) {
      const size_t k = static_cast<size_t>(n) * summary_k_;
      topk_d_.ensure(k * 8 + n * sizeof(float));
      topk_h_.ensure(k * 8 + n * sizeof(float));
    } else if (wanted_logits_) {
      logits_h_.ensure(static_cast<size_t>(n) * vocab_ * storage_bytes(a_t_));
    }
    step_ = PassStep::eager;
    if (graphs_on_ && recorder_ == nullptr && timer_ == nullptr && n <= kGraphRows) {
      step_ = graphs_.begin(pass_key(cols));
    }
    if (step_ == PassStep::replay) {
      pending_ = graphs_.saved();
    } else {
      pending_ = {};
    }
  }
  bool replayed() const { return step_ == PassStep::replay; }

  // Marks the kernels launched in its scope as (pass, site, op) for the kernel recorder, and
  // times them when op times are asked for.
  class Scope {
   public:
    Scope(trace::KernelRecorder* r, OpTimer* t, int pass, const std::string& site,
          const char* label)
        : r_(r), t_(t) {
      if (r_ != nullptr) r_->begin_op(pass, site, label);
      if (t_ != nullptr) t_->begin(label);
    }
    ~Scope() {
      if (r_ != nullptr) r_->end_op();
      if (t_ != nullptr) t_->end();
    }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    trace::KernelRecorder* r_;
    OpTimer* t_;
  };
  Scope op(const std::string& site, const char* label) const {
    return Scope(recorder_, timer_.get(), pass_, site, label);
  }
  Ptr offset(Ptr p, size_t n) const { return p + n; }
  // a weight as the ops read it; a rope table (fp32); the pass's positions (device)
  DevicePtr view(const Weight& w) const { return {const_cast<void*>(w.ptr()), w.t}; }
  static const float* table(const Weight& w) { return static_cast<const float*>(w.ptr()); }
  const int* positions() const { return pos_d(); }

  void embedding(Ptr x, const Weight& table, int n, int dim) const {
    cuda::embedding(x.p, a_t_, table.ptr(), table.t, tokens_d(), n, dim, stream_);
  }
  void rmsnorm(const RmsnormArgs& r) const { cuda::rmsnorm(r, stream_); }
  void gemm(const GemmArgs& call) {
    GemmArgs g = call;
    if (nx_.gemm_kernel == GemmKernel::tiled) {
      gemm_ws_.ensure(gemm_tiled_workspace_floats(g) * sizeof(float) + 1);
      gemm_tiled(g, gemm_ws_.as<float>(), stream_);
      return;
    }
    // cuBLAS: an explicit split, 1 under the invariant policy, else cuBLASLt's own choice (the
    // plan's split is the CPU emulation's guess of it).
    g.num.split =
        nx_.split_k > 0 ? nx_.split_k : (nx_.gemm_policy == GemmPolicy::invariant ? 1 : 0);
    cublas_->run(g, nx_.tf32, stream_);
  }
  void rope(const RopeArgs& r) const { cuda::rope(r, stream_); }
  void copy(Ptr dst, Ptr src, size_t n) const {
    DS_CUDA_CHECK(
        cudaMemcpyAsync(dst.p, src.p, n * storage_bytes(a_t_), cudaMemcpyDeviceToDevice, stream_));
  }
  // One sequence's rows against its slot's cache (the forward pass calls attention_all instead;
  // this completes the backend contract).
  void attention(const AttentionArgs& a) {
    attn_scratch_.ensure(attention_scratch_floats(a) * sizeof(float));
    cuda::attention(a, attn_scratch_.as<float>(), stream_);
  }
  // Every sequence of the pass at once: the rows' keys and values (k, v) appended at their slots
  // and positions, then the tiled kernel over the sequences whose split is 1 (attention=tiled)
  // and the row-wise kernel over the rest, each row with its sequence's split.
  void attention_all(const AttentionArgs& call, Ptr k, Ptr v) {
    const int n = static_cast<int>(cols_->tokens.size());
    kv_append(call.k_cache.p, call.v_cache.p, k.p, v.p, a_t_, n, slot_d(), pos_d(),
              call.slot_stride, kv_dim_, stream_);
    AttentionArgs a = call;
    a.row_slot = slot_d();
    if (!tiles_.empty()) attention_tiled(a, tiles_d(), static_cast<int>(tiles_.size()), stream_);
    if (rowwise_rows_ == 0) return;
    a.max_keys = key_stride_;
    a.num.split = max_splits_;
    a.row_splits = splits_d();
    attn_scratch_.ensure(attention_scratch_floats(a) * sizeof(float));
    cuda::attention(a, attn_scratch_.as<float>(), stream_);
  }
  // Elementwise ops round to the buffers' storage, which is the plan's (a plan that rounds an
  // op otherwise mixes configurations, which this backend refuses).
  void swiglu(Ptr out, Ptr gate, Ptr up, size_t n, Storage /*r*/) const {
    cuda::swiglu(out.p, gate.p, up.p, a_t_, n, stream_);
  }
  void add(Ptr y, Ptr a, Ptr b, size_t n, Storage /*r*/) const {
    cuda::add(y.p, a.p, b.p, a_t_, n, stream_);
  }
  void all_reduce(Ptr y, Ptr parts, int tp, size_t n, ops::AllReduce order, Storage /*r*/) const {
    cuda::all_reduce(y.p, parts.p, a_t_, tp, n, order, stream_);
  }

  // Queues a copy of the tensor as it is now into pinned memory, on the producing stream; the
  // logits are handled by end_pass.
  void tap(const Site& site, Ptr p, int n, int width) {
    if (site.kind == SiteKind::logits) {
      pending_.logits_tapped = true;
      return;
    }
    const size_t bytes = static_cast<size_t>(n) * width * storage_bytes(a_t_);
    DS_CUDA_CHECK(cudaMemcpyAsync(tap_h_.get() + pending_.tap_used, p.p, bytes,
                                  cudaMemcpyDeviceToHost, stream_));
    pending_.taps.push_back({site, pending_.tap_used, width});
    pending_.tap_used += bytes;
  }

  // The greedy tokens (and the trace's logits summary or rows) to the host, the pass's recording
  // launched, then every tapped tensor handed to the hook in forward order, the logits last.
  PassLogits& end_pass(Ptr logits, int n) {
    const size_t eb = storage_bytes(a_t_);
    if (step_ != PassStep::replay) {
      Scope scope = op("logits", "logits");
      auto* argmax = argmax_d_.as<int32_t>();
      logits_argmax(argmax, argmax + n, logits.p, a_t_, n, vocab_, stream_);
      copy_to_host(argmax_h_.get(), argmax, 2 * static_cast<size_t>(n) * sizeof(int32_t));
      if (pending_.logits_tapped && summary_k_ > 0) {
        const size_t nk = static_cast<size_t>(n) * summary_k_;
        logits_topk(topk_d_.as<int32_t>(), reinterpret_cast<float*>(topk_d_.bytes() + nk * 4),
                    reinterpret_cast<float*>(topk_d_.bytes() + nk * 8), logits.p, a_t_, n, vocab_,
                    summary_k_, stream_);
        copy_to_host(topk_h_.get(), topk_d_.get(), nk * 8 + n * sizeof(float));
      } else if (pending_.logits_tapped) {
        copy_to_host(logits_h_.get(), logits.p, static_cast<size_t>(n) * vocab_ * eb);
      }
    }
    if (step_ != PassStep::eager) graphs_.end(pending_);
    step_ = PassStep::eager;
    DS_CUDA_CHECK(cudaStreamSynchronize(stream_));
    if (timer_ != nullptr) timer_->collect();
    ++pass_;
    const bool full_rows = pending_.logits_tapped && summary_k_ == 0;
    logits_->set(n, static_cast<const unsigned char*>(logits.p),
                 reinterpret_cast<const int32_t*>(argmax_h_.get()),
                 full_rows ? logits_h_.get() : nullptr);
    if (hook_ != nullptr) hand_over_taps(n);
    return *logits_;
  }

 private:
  struct PendingTap {
    Site site;
    size_t offset;
    int width;
  };
  // What a pass queued for the host: its taps (pinned offsets) and whether it tapped the logits;
  // a recorded pass keeps it with its graph.
  struct PendingTaps {
    std::vector<PendingTap> taps;
    size_t tap_used = 0;
    bool logits_tapped = false;
  };
  using PassStep = PassGraphs<PendingTaps>::Step;

  static Weight upload_as(const float* host, size_t n, Storage t) {
    Weight w;
    w.t = t;
    if (n == 0) return w;
    w.mem.ensure(n * storage_bytes(t));
    cuda::upload(w.mem.get(), host, n, t);
    return w;
  }

  // Refuses, before anything is allocated, a runtime that would not fit in the device's memory.
  static void check_memory(size_t bytes_needed) {
    size_t free = 0, total = 0;
    DS_CUDA_CHECK(cudaMemGetInfo(&free, &total));
    const double gib = 1024.0 * 1024.0 * 1024.0;
    if (bytes_needed > free) {
      throw Error(fmt::format("this run needs about {:.1f} GiB of GPU memory (weights, KV cache, "
                              "work buffers), and the device has {:.1f} GiB free of {:.1f} GiB",
                              bytes_needed / gib, free / gib, total / gib),
                  "run fewer sequences at once (--batch), fewer positions (shorter prompts or "
                  "--max-new), a 16-bit --dtype, or on a device with more memory");
    }
  }

  void copy_to_host(void* dst, const void* src, size_t bytes) const {
    DS_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_));
  }

  // The attention plan of a pass: each row's split (0 for a row of the tiled kernel), the tiled
  // kernel's query tiles, and the row-wise kernel's scratch stride.
  void plan_attention(const BatchColumns& cols) {
    const int n = static_cast<int>(cols.tokens.size());
    const bool tiled = nx_.attn_kernel == AttnKernel::tiled;
    row_splits_.assign(n, 1);
    tiles_.clear();
    max_splits_ = 1;
    rowwise_rows_ = 0;
    int longest = 1;
    for (const SeqRows& s : cols.seqs) {
      const bool in_tiles = tiled && s.splits <= 1;  // as the CPU's OpNumerics::tile decides
      for (int r = s.r0; r < s.r0 + s.rows; ++r) row_splits_[r] = in_tiles ? 0 : s.splits;
      if (in_tiles) {
        for (int r = s.r0; r < s.r0 + s.rows; r += kAttentionTile) {
          tiles_.push_back({r, std::min(r + kAttentionTile, s.r0 + s.rows)});
        }
      } else {
        rowwise_rows_ += s.rows;
        max_splits_ = std::max(max_splits_, s.splits);
      }
      longest = std::max(longest, s.max_keys);
    }
    // the scores scratch: one stride for every pass that fits 64 MiB (the same recording serves
    // every decode step), else just the longest row's keys
    const size_t per_key = static_cast<size_t>(n) * n_heads_ * sizeof(float);
    key_stride_ = per_key * capacity_ <= (size_t{64} << 20) ? capacity_ : longest;
  }

  // tokens, slots, positions, splits and tiles of the pass, one copy to the device
  void upload_columns(const BatchColumns& cols) {
    const size_t n = cols.tokens.size(), ints = 4 * n + 2 * tiles_.size();
    cols_h_.ensure(ints * sizeof(int32_t));
    cols_d_.ensure(ints * sizeof(int32_t));
    auto* h = reinterpret_cast<int32_t*>(cols_h_.get());
    std::copy(cols.tokens.begin(), cols.tokens.end(), h);
    std::copy(cols.slot.begin(), cols.slot.end(), h + n);
    std::copy(cols.pos.begin(), cols.pos.end(), h + 2 * n);
    std::copy(row_splits_.begin(), row_splits_.end(), h + 3 * n);
    std::memcpy(h + 4 * n, tiles_.data(), tiles_.size() * sizeof(AttentionTile));
    DS_CUDA_CHECK(
        cudaMemcpyAsync(cols_d_.get(), h, ints * sizeof(int32_t), cudaMemcpyHostToDevice, stream_));
  }
  size_t rows() const { return cols_->tokens.size(); }
  const int32_t* tokens_d() const { return cols_d_.as<int32_t>(); }
  const int* slot_d() const { return cols_d_.as<int>() + rows(); }
  const int* pos_d() const { return cols_d_.as<int>() + 2 * rows(); }
  const int* splits_d() const { return cols_d_.as<int>() + 3 * rows(); }
  const AttentionTile* tiles_d() const {
    return reinterpret_cast<const AttentionTile*>(cols_d_.as<int>() + 4 * rows());
  }

  // What identifies a pass's launches: its rows per sequence and slot, the attention plan.
  std::vector<int64_t> pass_key(const BatchColumns& cols) const {
    std::vector<int64_t> key{static_cast<int64_t>(cols.tokens.size()), max_splits_, key_stride_,
                             static_cast<int64_t>(tiles_.size()), rowwise_rows_};
    for (const SeqRows& s : cols.seqs) {
      key.insert(key.end(), {cols.slot[s.r0], s.rows, s.splits});
    }
    return key;
  }

  // Every tapped tensor to the hook in forward order, widened to float; the logits last, as a
  // summary or as whole rows.
  void hand_over_taps(int n) {
    const int* slot = cols_->slot.data();
    const int* pos = cols_->pos.data();
    std::vector<float> values;
    for (const PendingTap& p : pending_.taps) {
      values.resize(static_cast<size_t>(n) * p.width);
      widen_host(tap_h_.get() + p.offset, a_t_, values.size(), values.data());
      hook_->on_tap(p.site, tap_tensor(values.data(), n, p.width, slot, pos));
    }
    if (!pending_.logits_tapped) return;
    if (summary_k_ > 0) {
      const size_t nk = static_cast<size_t>(n) * summary_k_;
      LogitsSummary s;
      s.rows = n;
      s.k = summary_k_;
      s.vocab = vocab_;
      s.ids = reinterpret_cast<const int32_t*>(topk_h_.get());
      s.logits = reinterpret_cast<const float*>(topk_h_.get() + nk * 4);
      s.lse = reinterpret_cast<const float*>(topk_h_.get() + nk * 8);
      s.slot = slot;
      s.pos = pos;
      hook_->on_logits(s);
      return;
    }
    values.resize(static_cast<size_t>(n) * vocab_);
    widen_host(logits_h_.get(), a_t_, values.size(), values.data());
    hook_->on_tap({SiteKind::logits}, tap_tensor(values.data(), n, vocab_, slot, pos));
  }

  Numerics nx_;
  Storage w_t_, a_t_;  // storage of weights; of activations and the KV cache
  int vocab_, dim_, kv_dim_, n_heads_, capacity_;
  bool graphs_on_;
  int pass_ = 0;
  OwnedStream owned_stream_;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<CublasGemm> cublas_;
  std::unique_ptr<OpTimer> timer_;
  DeviceBuffer cols_d_, attn_scratch_, gemm_ws_, argmax_d_, topk_d_;
  PinnedBuffer cols_h_, argmax_h_, topk_h_, logits_h_, tap_h_;
  size_t tap_row_bytes_ = 0;
  int summary_k_ = 0;  // the hook's logits summary k when the device computes it, else 0
  bool wanted_logits_ = false;
  // the pass's attention plan (plan_attention)
  std::vector<int> row_splits_;
  std::vector<AttentionTile> tiles_;
  int max_splits_ = 1, rowwise_rows_ = 0, key_stride_ = 1;
  PendingTaps pending_;
  PassGraphs<PendingTaps> graphs_;
  PassStep step_ = PassStep::eager;
  std::unique_ptr<DeviceLogits> logits_;
  const BatchColumns* cols_ = nullptr;
  TapHook* hook_ = nullptr;
  trace::KernelRecorder* recorder_ = nullptr;
};

// Device memory the runtime will take: the weights as stored, the KV cache, the work buffers of a
// pass of `capacity` rows, the row-wise attention's scores for them, cuBLAS's workspace.
size_t bytes_needed(const Model& model, const Numerics& nx, int capacity, int slots) {
  const ModelConfig& c = model.config;
  const size_t w = weight_storage(nx.dtype) == Storage::native ? 4 : 2;
  const size_t a = activation_storage(nx.dtype) == Storage::native ? 4 : 2;
  size_t weights = 0;
  for (const WeightUse& u : weight_uses(model)) weights += u.host->size() * w;
  const size_t positions = static_cast<size_t>(capacity);
  const size_t kv = 2 * static_cast<size_t>(slots) * c.n_layers * positions * c.kv_dim() * a;
  // a pass of up to 512 rows (a longer prefill allocates more when it comes, and says so if that
  // fails: kernels/cuda/device_buffer.h)
  const size_t rows = std::min<size_t>(positions, 512);
  const size_t work =
      rows * a * (2 * c.dim + 2 * c.q_dim() + 2 * c.kv_dim() + 2 * c.hidden_dim + c.vocab_size);
  const size_t scores = std::min(rows * c.n_heads * positions * 4, size_t{64} << 20);
  return weights + kv + work + scores + (size_t{96} << 20);
}

}  // namespace

std::unique_ptr<Runtime> make_runtime(const Model& model, const Numerics& numerics, int capacity,
                                      int slots) {
  return std::make_unique<ForwardRuntime<CudaBackend>>(
      model, numerics, capacity, slots, capacity, bytes_needed(model, numerics, capacity, slots));
}

}  // namespace ds::cuda
