// The CPU reference backend of the forward skeleton (forward.h): buffers are std::vector<T>, ops
// are kernels/ops.h on T = float (fp32, and fp16 / bf16 / layercast emulated by rounding where a
// GPU stores) or T = double (the fp64 oracle). Taps hand the buffer to the hook at once.
#include <fmt/format.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <span>
#include <stdexcept>
#include <type_traits>

#include "common/error.h"
#include "kernels/ops.h"
#include "src/model/mapped_file.h"
#include "src/model/memory.h"
#include "src/runtime/forward.h"
#include "src/runtime/runtime.h"

namespace ds {

namespace {

// Uninitialised memory for all the packed weights of a runtime, taken in turn (every byte is
// written by the packing; zeroing it first would write it twice). One mapping, on a 2 MiB
// boundary, whose whole 2 MiB pieces are offered to transparent huge pages (madvise, which a
// kernel set to "madvise" needs; a refusal changes nothing but speed): decode reads every weight
// once per token, and in 4 KiB pages each 4 KiB of it costs a TLB miss (bench/RESULTS.md). The
// pages past the last whole piece stay 4 KiB, so the memory used is the packed bytes rounded up
// to 4 KiB, as the memory check counts them.
class PackedArena {
 public:
  static constexpr size_t kAlign = 64;  // each matrix starts on a cache line
  static size_t taken(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

  explicit PackedArena(size_t bytes) {
    if (bytes == 0) return;
    constexpr size_t kHuge = size_t{2} << 20, kPage = 4096;
    len_ = (bytes + kPage - 1) / kPage * kPage;
    const size_t span = len_ + kHuge;
    void* m = ::mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) throw std::bad_alloc();
    const uintptr_t start = reinterpret_cast<uintptr_t>(m);
    const uintptr_t at = (start + kHuge - 1) / kHuge * kHuge;  // page-aligned, so is the slack
    if (at > start) ::munmap(m, at - start);
    if (start + span > at + len_) {
      ::munmap(reinterpret_cast<void*>(at + len_), start + span - at - len_);
    }
    base_ = reinterpret_cast<char*>(at);
    ::madvise(base_, bytes / kHuge * kHuge, MADV_HUGEPAGE);
  }
  ~PackedArena() {
    if (base_ != nullptr) ::munmap(base_, len_);
  }
  PackedArena(const PackedArena&) = delete;
  PackedArena& operator=(const PackedArena&) = delete;

  // The next `bytes`; the arena was sized for every matrix (the same weight_uses).
  void* take(size_t bytes) {
    if (used_ + taken(bytes) > len_) throw std::logic_error("packed weights outgrew their arena");
    void* p = base_ + used_;
    used_ += taken(bytes);
    return p;
  }

 private:
  char* base_ = nullptr;
  size_t len_ = 0, used_ = 0;
};

template <typename T>
class CpuBackend {
 public:
  using Ptr = T*;
  struct Buf {
    std::vector<T> v;
    T* ptr(size_t offset) { return v.data() + offset; }
  };
  // A weight used where the model holds it (mapped from the file, or the loader's own copy),
  // in its stored format, when that is what this precision computes from (widening bf16 / fp16
  // to float is exact); else this backend's copy rounded to the precision's weight format, held
  // in that 16-bit format (float) or as double (the fp64 oracle).
  struct Weight {
    std::shared_ptr<const void> owner;  // keeps the values valid
    const void* values = nullptr;
    Storage format = Storage::native;  // native: T values; bf16 / f16: their bit patterns (float)
    bool packed = false;               // a GEMM matrix in the packed layout (kernels/ops.h)
    size_t n = 0;
    bool empty() const { return n == 0; }
    // the values (from column `col` on, for a matrix), as the ops take them
    auto arg(size_t col = 0) const {
      if constexpr (std::is_same_v<T, float>) {
        return ops::StoredWeights{values, format, packed}.column(col);
      } else {
        return static_cast<const T*>(values) + col;
      }
    }
  };

  // `pack`: lay GEMM matrices out for the GEMM (packed) at set-up, or read them where they lie.
  // `packed_bytes`: what the packing of every matrix takes (PackedArena::taken of each).
  CpuBackend(const Numerics& nx, const ModelConfig& c, bool pack, size_t packed_bytes)
      : nx_(nx),
        weights_(weight_storage(nx.dtype)),
        act_(activation_storage(nx.dtype)),
        vocab_(c.vocab_size),
        pack_(pack),
        arena_(pack ? std::make_shared<PackedArena>(packed_bytes) : nullptr) {}

  // true when `host` is used where it lies; else upload copies it (copy_bytes says how much).
  static bool in_place(const WeightTensor& host, Storage weights) {
    return std::is_same_v<T, float> && (weights == Storage::native || host.format() == weights);
  }
  // The format a float backend computes `host` from: as stored, or rounded to `weights`.
  static Storage used_format(const WeightTensor& host, Storage weights) {
    return in_place(host, weights) ? host.format() : weights;
  }
  // Bytes this backend holds of its own for `host`: the copy of a weight it cannot use in place,
  // or the packed copy of a float GEMM matrix (N, K), which replaces the mapped values.
  static uint64_t copy_bytes(const WeightTensor& host, Storage weights, int N = 0, int K = 0) {
    if constexpr (std::is_same_v<T, float>) {
      const uint64_t elem = used_format(host, weights) == Storage::native ? 4 : 2;
      if (N > 0) return elem * ops::packed_values(N, K);
      return in_place(host, weights) ? 0 : elem * host.size();
    } else {
      return static_cast<uint64_t>(host.size()) * sizeof(T);
    }
  }

  // A GEMM matrix: float weights packed (kernels/ops.h) in the format they are computed from;
  // the mapped file's pages of a packed tensor are given back (they are read again only if
  // another runtime is made from the model).
  Weight upload_matrix(const WeightTensor& host, int N, int K) const {
    Weight w = upload(host);
    if constexpr (std::is_same_v<T, float>) {
      if (w.empty() || !pack_) return w;
      const size_t values = ops::packed_values(N, K);
      void* out = arena_->take(copy_bytes(host, weights_, N, K));  // as the arena was sized
      ops::pack_weights(out, ops::StoredWeights{w.values, w.format}, N, K);
      if (host.mapped() && w.values == host.raw()) release_pages(host.raw(), host.bytes());
      return {std::shared_ptr<const void>(arena_, out), out, w.format, true, values};
    } else {
      return w;
    }
  }

  Weight upload(const WeightTensor& host) const {
    if (in_place(host, weights_)) {
      return {host.owner(), host.raw(), host.format(), false, host.size()};
    }
    if constexpr (std::is_same_v<T, float>) {  // rounded to the 16-bit weight format
      auto bits = std::make_shared<std::vector<uint16_t>>(host.size());
      for (size_t i = 0; i < host.size(); ++i) {
        (*bits)[i] =
            weights_ == Storage::bf16 ? f32_to_bf16_bits(host[i]) : f32_to_f16_bits(host[i]);
      }
      return {bits, bits->data(), weights_, false, bits->size()};
    } else {
      auto out = std::make_shared<std::vector<T>>(host.size());
      for (size_t i = 0; i < host.size(); ++i) (*out)[i] = host[i];
      return {out, out->data(), Storage::native, false, out->size()};
    }
  }
  Weight upload_table(const std::vector<double>& host) const {
    auto out = std::make_shared<std::vector<T>>(host.begin(), host.end());
    return {out, out->data(), Storage::native, false, out->size()};
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

  // the weight as the ops read it (its matrix from column 0: a call's w_col selects a shard)
  auto view(const Weight& w) const { return w.arg(); }
  static const T* table(const Weight& w) { return static_cast<const T*>(w.values); }
  const int* positions() const { return cols_->pos.data(); }

  void embedding(Ptr x, const Weight& table, int n, int dim) const {
    ops::embedding(x, table.arg(), cols_->tokens.data(), n, dim);
  }
  template <typename W>
  void rmsnorm(const ops::Rmsnorm<T*, W>& r) const {
    ops::rmsnorm(r);
  }
  template <typename W>
  void gemm(const ops::Gemm<T*, W>& g) const {
    ops::matmul(g);
  }
  // float only: the fp64 oracle runs its GEMMs one by one (same results)
  void gemm_group(std::span<const ops::StoredGemm> group) const requires std::is_same_v<T, float> {
    ops::matmul_group(group.data(), group.size());
  }
  void rope(const ops::Rope<T*, const T*>& r) const { ops::rope(r); }
  void copy(Ptr dst, Ptr src, size_t n) const { std::memcpy(dst, src, sizeof(T) * n); }
  void attention(const ops::Attention<T*>& a) {
    if (scores_.size() < static_cast<size_t>(a.max_keys)) scores_.resize(a.max_keys);
    ops::attention(a, scores_.data());
  }
  void swiglu(Ptr out, Ptr gate, Ptr up, size_t n, Storage r) const {
    ops::swiglu(out, gate, up, n, r);
  }
  void add(Ptr y, Ptr a, Ptr b, size_t n, Storage r) const { ops::add(y, a, b, n, r); }
  // Reference rows into a buffer, stored as this run stores activations.
  void load_rows(Ptr y, const float* host, size_t n) const {
    std::copy(host, host + n, y);
    ops::round_to(y, n, act_);
  }
  // The test perturbation of an op's output (numerics_plan.h Nudge).
  void nudge(Ptr y, size_t n, Nudge how) const {
    switch (how) {
      case Nudge::bf16:
        return ops::round_to(y, n, Storage::bf16);
      case Nudge::f16:
        return ops::round_to(y, n, Storage::f16);
      case Nudge::ulp_up:
        return ops::step_bf16(y, n, 1);
      case Nudge::ulp_down:
        return ops::step_bf16(y, n, -1);
      case Nudge::none:
        return;
    }
  }
  void all_reduce(Ptr y, Ptr parts, int tp, size_t n, ops::AllReduce order, Storage r) const {
    ops::all_reduce(y, parts, tp, n, order, r);
  }

  void tap(const Site& site, Ptr p, int n, int width) const {
    hook_->on_tap(site, tap_tensor(p, n, width, cols_->slot.data(), cols_->pos.data()));
  }
  PassLogits& end_pass(Ptr logits, int n) {
    logits_.reset(n, vocab_).assign(logits, logits + static_cast<size_t>(n) * vocab_);
    return logits_;
  }

 private:
  Numerics nx_;
  Storage weights_, act_;  // storage of weights; of activations and the KV cache
  int vocab_;
  bool pack_;
  std::shared_ptr<PackedArena> arena_;  // the packed matrices (when pack_)
  const BatchColumns* cols_ = nullptr;
  TapHook* hook_ = nullptr;
  std::vector<T> scores_;  // attention scratch, one value per key
  HostPassLogits logits_;  // the last pass's logits rows
};

// Whether a float runtime packs its GEMM matrices (docs/numerics.md): when the packed copy and the
// file's pages fit in memory side by side, so the page cache keeps the file warm for the next
// run; a model larger than that (a 7B model on a 24 GiB machine) is read where it lies, which
// needs no copy and no set-up. DRIFTSCOPE_PACK=always|never overrides (for tests); neither
// choice changes a bit.
bool pack_matrices(const Model& model) {
  if (const char* env = std::getenv("DRIFTSCOPE_PACK"); env && *env) {
    const std::string v = env;
    if (v == "always") return true;
    if (v == "never") return false;
    if (v != "auto") {
      throw Error(fmt::format("DRIFTSCOPE_PACK='{}' is not always, never or auto", v),
                  "unset it, or give one of the three");
    }
  }
  const uint64_t available = available_memory_bytes();
  return available > 0 && 2 * model_weight_bytes(model) <= available;
}

}  // namespace

std::unique_ptr<Runtime> make_cpu_runtime(const Model& model, const Numerics& numerics,
                                          int capacity, int slots) {
  const bool fp64 = numerics.dtype == DType::fp64;
  const uint64_t kv = kv_bytes_per_token(model.config, fp64 ? 8 : 4) *  // activations and KV as T
                      static_cast<uint64_t>(capacity) * static_cast<uint64_t>(std::max(1, slots));
  // the weights this precision cannot compute from where they lie are copied, and the GEMM
  // matrices packed when that pays (counted exactly)
  const Storage ws = weight_storage(numerics.dtype);
  const bool pack = !fp64 && pack_matrices(model);
  uint64_t copies = 0, packed = 0;
  for (const WeightUse& u : weight_uses(model)) {
    if (u.host->empty()) continue;
    if (pack && u.N > 0) {  // a packed matrix, in the arena
      const uint64_t bytes =
          PackedArena::taken(CpuBackend<float>::copy_bytes(*u.host, ws, u.N, u.K));
      copies += bytes;
      packed += bytes;
    } else {
      copies += fp64 ? CpuBackend<double>::copy_bytes(*u.host, ws)
                     : CpuBackend<float>::copy_bytes(*u.host, ws);
    }
  }
  const std::string weight_part =
      fp64   ? fmt::format("{} of weights copied to float64", format_bytes(copies))
      : pack ? fmt::format("{} of weights laid out for its GEMM, in the format it computes from",
                           format_bytes(copies))
             : fmt::format(
                   "the model's weights read where they lie, {} copied to the format "
                   "it computes from",
                   format_bytes(copies));
  check_memory(
      fmt::format("the CPU runtime ({}, and a KV cache of {} positions x {} sequences: {})",
                  weight_part, capacity, slots, format_bytes(kv)),
      copies + kv,
      "a shorter --max-new or a smaller --batch shrinks the KV cache; or use a machine "
      "with more memory");
  if (numerics.dtype == DType::fp64) {
    return std::make_unique<ForwardRuntime<CpuBackend<double>>>(model, numerics, capacity, slots,
                                                                false, size_t{0});
  }
  return std::make_unique<ForwardRuntime<CpuBackend<float>>>(model, numerics, capacity, slots, pack,
                                                             static_cast<size_t>(packed));
}

std::unique_ptr<Runtime> make_cpu_runtime(const Model& model, DType dtype, int capacity,
                                          int slots) {
  Numerics nx;
  nx.dtype = dtype;
  return make_cpu_runtime(model, nx, capacity, slots);
}

}  // namespace ds
