// The one forward pass of driftscope (Llama / Mistral / Qwen2), written once over a backend's ops:
// the weight set, the nine work buffers, the KV-cache layout, the block order, the seven tap
// points, the per-sequence attention loop and the tensor-parallel shards with their all-reduce.
// The CPU reference (cpu_runtime.cpp) and the CUDA runtime (cuda/cuda_runtime.cpp) supply buffers
// and ops only, so the two cannot drift apart in structure; docs/architecture.md argues the
// template over a virtual ops interface.
//
// The backend contract is the concept ForwardBackend below: the compiler checks it for both
// backends where ForwardRuntime is instantiated.
#pragma once

#include <array>
#include <cmath>
#include <concepts>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "common/error.h"
#include "src/model/model.h"
#include "src/runtime/numerics_plan.h"
#include "src/runtime/policy.h"
#include "src/runtime/rope_table.h"
#include "src/runtime/runtime.h"
#include "src/runtime/shadow.h"
#include "src/runtime/taps.h"

namespace ds {

// The op calls are kernels/ops.h's descriptions (ops::Gemm, ops::Attention, ops::Rmsnorm,
// ops::Rope), built here over the backend's pointer types and taken by its kernels as they are:
// one struct per op call, from the forward pass to the kernel. Their OpNumerics is the plan entry
// of the op (numerics_plan.h).

// What a backend B supplies to the forward pass: storage and ops, nothing of the model's structure.
//   Ptr                 a pointer to activations (a T* on the CPU, a typed device pointer on CUDA)
//   Buf                 activation storage that grows on demand; buf.ptr(element offset) -> Ptr
//   Weight              a weight tensor as the backend stores it; empty() when absent (a bias)
//   view(Weight)        the weight as its kernels read it (the W of ops::Gemm and ops::Rmsnorm)
//   table(Weight)       a rope table as its kernels read it (the Table of ops::Rope)
//   positions()         the pass's positions, where its kernels read them (ops::Rope, Attention)
//   upload, upload_table   host weights and rope cos/sin tables into the backend's storage
//   upload_matrix       a GEMM's (N, K) weight matrix, which a backend may lay out for its GEMM
//   resize, resize_zeroed  a Buf to n values; ready() after set-up
//   set_recorder, set_hook kernel records (CUDA) and the tap hook with the sites it wants
//   begin_pass(cols)    the rows of this pass (tokens, KV-cache slots, positions)
//   op(site, label)     a scope object naming the kernels launched inside it (kernel records)
//   offset(Ptr, n)      a pointer n elements further
//   embedding, rmsnorm, gemm, rope, copy, attention, swiglu, add, all_reduce: the ops of
//                       kernels/ops.h, in the backend's storage and precision
//   tap(site, Ptr, rows, width)  hands a tensor to the hook (now, or after the pass on CUDA)
//   end_pass(logits, rows)  the pass's logits as the caller reads them (pass_logits.h), pending
//                       taps delivered
// Optional (detected with requires; a backend without them refuses the feature): load_rows
// (shadow layers' reference inputs) and nudge (the plan's test perturbation of an op's output,
// numerics_plan.h). Optional, with the same
// results without them:
//   gemm_group(span of ops::Gemm)  GEMMs that read none of each other's outputs run as one job
//                       (the CPU's threads then wait once for q, k and v, not three times);
//   attention_all(call, k, v)  every sequence's attention of a layer in one call, the new keys
//                       and values appended at each row's slot and position first (CUDA: one
//                       launch for a batch instead of three per sequence);
//   replayed()          after begin_pass: true when the backend has replayed a recording of this
//                       pass's launches (CUDA graphs), so the ops are not issued again.
template <class B>
using WeightView =
    decltype(std::declval<const B&>().view(std::declval<const typename B::Weight&>()));
template <class B>
using TableView =
    decltype(std::declval<const B&>().table(std::declval<const typename B::Weight&>()));

template <class B>
concept ForwardBackend = requires(B& b, typename B::Buf& buf, typename B::Ptr p,
                                  const typename B::Weight& w, const WeightTensor& host,
                                  const std::vector<double>& table, const BatchColumns& cols,
                                  const ops::Attention<typename B::Ptr>& attention,
                                  const ops::Gemm<typename B::Ptr, WeightView<B>>& gemm,
                                  const ops::Rmsnorm<typename B::Ptr, WeightView<B>>& rmsnorm,
                                  const ops::Rope<typename B::Ptr, TableView<B>>& rope,
                                  const Site& site, TapHook* hook, const WantedSites& wanted,
                                  trace::KernelRecorder* recorder, const std::string& label_site,
                                  size_t n, int i, ops::AllReduce order) {
  { buf.ptr(n) } -> std::same_as<typename B::Ptr>;
  { w.empty() } -> std::convertible_to<bool>;
  { b.upload(host) } -> std::same_as<typename B::Weight>;
  { b.upload_matrix(host, i, i) } -> std::same_as<typename B::Weight>;
  { b.upload_table(table) } -> std::same_as<typename B::Weight>;
  { b.positions() } -> std::same_as<const int*>;
  b.resize(buf, n);
  b.resize_zeroed(buf, n);
  b.ready();
  b.set_recorder(recorder);
  b.set_hook(hook, wanted);
  b.begin_pass(cols);
  b.op(label_site, "label");
  { b.offset(p, n) } -> std::same_as<typename B::Ptr>;
  b.embedding(p, w, i, i);
  b.rmsnorm(rmsnorm);
  b.gemm(gemm);
  b.rope(rope);
  b.copy(p, p, n);
  b.attention(attention);
  b.swiglu(p, p, p, n, Storage::native);
  b.add(p, p, p, n, Storage::native);
  b.all_reduce(p, p, i, n, order, Storage::native);
  b.tap(site, p, i, i);
  { b.end_pass(p, i) } -> std::same_as<PassLogits&>;
};

// The weights of one layer, in a backend's storage (absent biases are empty).
template <typename W>
struct StoredLayer {
  W attn_norm, wq, wk, wv, bq, bk, bv, wo, mlp_norm, w_gate, w_up, w_down;
};

// How the forward pass uses a weight: a GEMM's (N, K) matrix, or (N = 0) a vector, a bias or a
// lookup-only table. The one place the weights' roles are named: uploads and a backend's memory
// estimate (cpu_runtime.cpp) both read it.
struct WeightUse {
  const WeightTensor* host;
  int N = 0, K = 0;
};
// In order: embed, then per layer the twelve StoredLayer fields in their order, final_norm, and
// lm_head when the model has one (a tied embedding is the classifier's matrix).
inline std::vector<WeightUse> weight_uses(const Model& m) {
  const ModelConfig& c = m.config;
  const int D = c.dim, F = c.hidden_dim, Q = c.q_dim(), KV = c.kv_dim(), V = c.vocab_size;
  const bool tied = m.weights.lm_head.empty();
  std::vector<WeightUse> u{{&m.weights.embed, tied ? V : 0, tied ? D : 0}};
  for (const LayerWeights& w : m.weights.layers) {
    u.insert(u.end(), {{&w.attn_norm},
                       {&w.wq, Q, D},
                       {&w.wk, KV, D},
                       {&w.wv, KV, D},
                       {&w.bq},
                       {&w.bk},
                       {&w.bv},
                       {&w.wo, D, Q},
                       {&w.mlp_norm},
                       {&w.w_gate, F, D},
                       {&w.w_up, F, D},
                       {&w.w_down, D, F}});
  }
  u.push_back({&m.weights.final_norm});
  if (!tied) u.push_back({&m.weights.lm_head, V, D});
  return u;
}

template <ForwardBackend B>
class ForwardRuntime final : public Runtime {
 public:
  using Buf = typename B::Buf;
  using Weight = typename B::Weight;
  using Ptr = typename B::Ptr;
  using GemmCall = ops::Gemm<Ptr, WeightView<B>>;

  // B is built from (numerics, config) and owns the device state; the skeleton owns the rest.
  // `backend_args` go to B's constructor after (numerics, config): how it executes, never what.
  template <typename... A>
  ForwardRuntime(const Model& m, const Numerics& nx, int capacity, int slots, A&&... backend_args)
      : c_(m.config),
        plan_(nx),
        capacity_(capacity),
        slots_(slots),
        b_(nx, m.config, std::forward<A>(backend_args)...) {
    check_runtime_setup(c_, nx, capacity, slots);
    const std::vector<WeightUse> uses = weight_uses(m);
    auto upload = [&](size_t i) {
      const WeightUse& u = uses[i];
      return u.N > 0 ? b_.upload_matrix(*u.host, u.N, u.K) : b_.upload(*u.host);
    };
    size_t i = 0;
    embed_ = upload(i++);
    for (int l = 0; l < c_.n_layers; ++l) {
      StoredLayer<Weight> w;
      for (Weight StoredLayer<Weight>::*f :
           {&StoredLayer<Weight>::attn_norm, &StoredLayer<Weight>::wq, &StoredLayer<Weight>::wk,
            &StoredLayer<Weight>::wv, &StoredLayer<Weight>::bq, &StoredLayer<Weight>::bk,
            &StoredLayer<Weight>::bv, &StoredLayer<Weight>::wo, &StoredLayer<Weight>::mlp_norm,
            &StoredLayer<Weight>::w_gate, &StoredLayer<Weight>::w_up,
            &StoredLayer<Weight>::w_down}) {
        w.*f = upload(i++);
      }
      layers_.push_back(std::move(w));
    }
    final_norm_ = upload(i++);
    if (i < uses.size()) lm_head_ = upload(i++);
    const RopeTable rt = rope_table(c_, capacity);
    cos_ = b_.upload_table(rt.cos);
    sin_ = b_.upload_table(rt.sin);
    // KV cache: (slots, n_layers, capacity, kv_dim), stored like activations
    b_.resize_zeroed(k_cache_, cache_index(slots_, 0, 0));
    b_.resize_zeroed(v_cache_, cache_index(slots_, 0, 0));
    for (int l = 0; l < c_.n_layers; ++l) {
      std::array<std::string, kLayerSiteCount> names;
      for (int k = 0; k < kLayerSiteCount; ++k) names[k] = site_name({layer_site_kind(k), l});
      layer_sites_.push_back(names);
    }
    set_tap_hook(nullptr);
    b_.ready();
  }

  int capacity() const override { return capacity_; }
  int slots() const override { return slots_; }
  const ModelConfig& config() const override { return c_; }
  void set_kernel_recorder(trace::KernelRecorder* recorder) override { b_.set_recorder(recorder); }
  using Runtime::forward;

  void set_plan(NumericsPlan plan) override {
    if (plan.numerics().dtype != plan_.numerics().dtype ||
        plan.numerics().device != plan_.numerics().device) {
      throw Error("a numerics plan's own side must be the runtime's configuration (dtype, device)");
    }
    if constexpr (!kCanNudge) {
      if (plan.mixed()) {
        throw Error("a plan that mixes two configurations op by op needs the CPU emulation",
                    "op-level explain runs with --device cpu");
      }
      if (plan.perturbs()) {
        throw Error("this backend cannot apply the test perturbation (test_perturb)",
                    "drop test_perturb, or use --device cpu");
      }
    }
    plan_ = std::move(plan);
  }

  void set_tap_hook(TapHook* hook) override {
    hook_ = hook;
    wanted_.ask(hook, c_.n_layers);
    b_.set_hook(hook, wanted_);
  }

  void set_shadow_source(ShadowSource* source) override {
    shadow_ = source;
    if (source == nullptr) return;
    if constexpr (!kCanShadow) {
      shadow_ = nullptr;
      throw Error(
          "shadow layers (attribute) need taps delivered during the pass, which this "
          "backend defers to its end",
          "run attribute with --device cpu");
    } else {
      shadow_layer_.assign(c_.n_layers, false);
      shadow_mlp_.assign(c_.n_layers, false);
      for (int l = 0; l < c_.n_layers; ++l) {
        shadow_layer_[l] = source->wants(ShadowKind::layer, l);
        shadow_mlp_[l] = source->wants(ShadowKind::mlp, l);
      }
      shadow_head_ = source->wants(ShadowKind::head, -1);
      shadow_taps_.source = source;
      shadow_wanted_.ask(&shadow_taps_, c_.n_layers);  // every site
      // the shadow KV cache: same layout as the real one, allocated only now
      b_.resize_zeroed(shadow_k_cache_, cache_index(slots_, 0, 0));
      b_.resize_zeroed(shadow_v_cache_, cache_index(slots_, 0, 0));
    }
  }

  PassLogits& forward(std::span<const BatchRow> rows) override {
    const int n = static_cast<int>(rows.size());
    if (n == 0) {
      no_rows_.reset(0, c_.vocab_size);
      return no_rows_;
    }
    cols_.assign(rows, c_.vocab_size, slots_, capacity_);
    plan_.begin_pass({n, cols_.n_seqs});
    for (SeqRows& s : cols_.seqs) {  // a backend's view (attention_all): layer 0's, as all are
      s.splits = plan_.attention(0, s, c_.n_heads).split;
    }
    resize(n);
    b_.begin_pass(cols_);
    if (!replayed()) {
      {
        [[maybe_unused]] auto scope = b_.op(embed_site_, "embedding");
        b_.embedding(x_.ptr(0), embed_, n, c_.dim);
        perturbed({-1, PlanOp::embedding}, x_.ptr(0), static_cast<size_t>(n) * c_.dim);
      }
      if (wanted_.embed) b_.tap({SiteKind::embed}, x_.ptr(0), n, c_.dim);
      for (int l = 0; l < c_.n_layers; ++l) {
        attention_block(l, n);
        mlp_block(l, n);
        if (shadow_ != nullptr) shadow_layer(l, n);
      }
      head_block(n);
      if (shadow_ != nullptr && shadow_head_) shadow_head(n);
    }
    return b_.end_pass(logits_.ptr(0), n);
  }

 private:
  // x <- x + o_proj(attention(rope(q), rope(k), v)) over rmsnorm(x)
  void attention_block(int l, int n) {
    const StoredLayer<Weight>& w = layers_[l];
    const int D = c_.dim, Q = c_.q_dim(), KV = c_.kv_dim();
    const std::string& site = lsite(l, SiteKind::attn_out);
    rmsnorm(lsite(l, SiteKind::attn_norm), {l, PlanOp::attn_norm}, xb_, x_, w.attn_norm, n);
    tap_layer(l, SiteKind::attn_norm, xb_.ptr(0), n, D);
    gemms(site, "q_proj,k_proj,v_proj", l, xb_, n, D,
          {{PlanOp::q_proj, q_, w.wq, &w.bq, Q},     // (n, q_dim)
           {PlanOp::k_proj, k_, w.wk, &w.bk, KV},    // (n, kv_dim)
           {PlanOp::v_proj, v_, w.wv, &w.bv, KV}});  // (n, kv_dim)
    rope(site, l, n);
    attention(site, l);
    perturbed({l, PlanOp::attention}, att_.ptr(0), static_cast<size_t>(n) * Q);
    row_parallel_gemm(site, {l, PlanOp::o_proj}, xb_, att_, w.wo, n, D, Q);  // (n, dim)
    tap_layer(l, SiteKind::attn_out, xb_.ptr(0), n, D);
    residual_add(lsite(l, SiteKind::resid_mid), {l, PlanOp::attn_add}, n);
    tap_layer(l, SiteKind::resid_mid, x_.ptr(0), n, D);
  }

  // x <- x + down(silu(gate(h)) * up(h)), h = rmsnorm(x)
  void mlp_block(int l, int n) {
    const StoredLayer<Weight>& w = layers_[l];
    const int D = c_.dim, F = c_.hidden_dim;
    const std::string& site = lsite(l, SiteKind::mlp_out);
    rmsnorm(lsite(l, SiteKind::mlp_norm), {l, PlanOp::mlp_norm}, xb_, x_, w.mlp_norm, n);
    tap_layer(l, SiteKind::mlp_norm, xb_.ptr(0), n, D);
    gemms(site, "gate_proj,up_proj", l, xb_, n, D,
          {{PlanOp::gate_proj, gate_, w.w_gate, nullptr, F},  // (n, hidden)
           {PlanOp::up_proj, up_, w.w_up, nullptr, F}});      // (n, hidden)
    swiglu(site, l, n);                                       // silu(gate) * up
    row_parallel_gemm(site, {l, PlanOp::down_proj}, xb_, gate_, w.w_down, n, D, F);  // (n, dim)
    tap_layer(l, SiteKind::mlp_out, xb_.ptr(0), n, D);
    residual_add(lsite(l, SiteKind::out), {l, PlanOp::mlp_add}, n);
    tap_layer(l, SiteKind::out, x_.ptr(0), n, D);
  }

  // att <- attention of every sequence's rows over its cache, after the rows' keys and values
  // are appended to it (rows of one slot are contiguous, in position order)
  void attention(const std::string& site, int l) {
    const int Q = c_.q_dim(), KV = c_.kv_dim();
    ops::Attention<Ptr> a{att_.ptr(0), q_.ptr(0), k_cache_.ptr(cache_index(0, l, 0)),
                          v_cache_.ptr(cache_index(0, l, 0))};
    a.rows = static_cast<int>(cols_.tokens.size());
    a.positions = b_.positions();
    a.slot_stride = cache_index(1, 0, 0);
    a.n_heads = c_.n_heads;
    a.n_kv_heads = c_.n_kv_heads;
    a.head_dim = c_.head_dim;
    a.window = c_.sliding_window;
    a.scale = 1.0 / std::sqrt(static_cast<double>(c_.head_dim));
    a.num = plan_.attention(l, cols_.seqs.front(), c_.n_heads);
    [[maybe_unused]] auto scope = b_.op(site, "attention");
    if constexpr (kCanAttendAll) {  // the per-sequence splits are the pass's (cols_.seqs)
      b_.attention_all(a, k_.ptr(0), v_.ptr(0));
      return;
    }
    for (const SeqRows& s : cols_.seqs) {
      const int slot = cols_.slot[s.r0];
      // the sequence's new keys and values: consecutive positions, so one contiguous block each
      const size_t at = cache_index(slot, l, cols_.pos[s.r0]);
      const size_t kv_rows = static_cast<size_t>(s.r0) * KV,
                   kv_n = static_cast<size_t>(s.rows) * KV;
      b_.copy(k_cache_.ptr(at), k_.ptr(kv_rows), kv_n);
      b_.copy(v_cache_.ptr(at), v_.ptr(kv_rows), kv_n);
      const size_t q_off = static_cast<size_t>(s.r0) * Q;
      ops::Attention<Ptr> one = a;
      one.out = att_.ptr(q_off);
      one.q = q_.ptr(q_off);
      one.k_cache = k_cache_.ptr(cache_index(slot, l, 0));
      one.v_cache = v_cache_.ptr(cache_index(slot, l, 0));
      one.rows = s.rows;
      one.positions = a.positions + s.r0;
      one.slot_stride = 0;
      one.max_keys = s.max_keys;
      one.num = plan_.attention(l, s, c_.n_heads);
      b_.attention(one);
    }
  }

  // logits <- lm_head(rmsnorm(x))
  void head_block(int n) {
    rmsnorm(final_norm_site_, {-1, PlanOp::final_norm}, xb_, x_, final_norm_, n);
    if (wanted_.final_norm) b_.tap({SiteKind::final_norm}, xb_.ptr(0), n, c_.dim);
    gemm(logits_site_, {-1, PlanOp::lm_head}, logits_, xb_, lm_head_.empty() ? embed_ : lm_head_,
         nullptr, n, c_.vocab_size, c_.dim);
    if (wanted_.logits) b_.tap({SiteKind::logits}, logits_.ptr(0), n, c_.vocab_size);
  }

  // ---- the ops of a block, each under its label (site, op): the backend names the kernels it
  // launches inside after them (kernel records); the CPU backend records nothing ----

  // y (n, dim) = rmsnorm(x) * w
  void rmsnorm(const std::string& site, OpId id, Buf& y, Buf& x, const Weight& w, int n) {
    [[maybe_unused]] auto scope = b_.op(site, "rmsnorm");
    b_.rmsnorm(ops::Rmsnorm<Ptr, WeightView<B>>{y.ptr(0), x.ptr(0), b_.view(w), n, c_.dim,
                                                c_.rms_norm_eps, plan_.stored(id)});
    perturbed(id, y.ptr(0), static_cast<size_t>(n) * c_.dim);
  }

  // q and k rotated in place at the rows' positions
  void rope(const std::string& site, int l, int n) {
    [[maybe_unused]] auto scope = b_.op(site, "rope");
    for (auto [x, heads] :
         {std::pair{q_.ptr(0), c_.n_heads}, std::pair{k_.ptr(0), c_.n_kv_heads}}) {
      b_.rope(ops::Rope<Ptr, TableView<B>>{x, n, heads, c_.head_dim, b_.positions(), b_.table(cos_),
                                           b_.table(sin_), plan_.stored({l, PlanOp::rope})});
    }
    perturbed({l, PlanOp::rope}, q_.ptr(0), static_cast<size_t>(n) * c_.q_dim());
    perturbed({l, PlanOp::rope}, k_.ptr(0), static_cast<size_t>(n) * c_.kv_dim());
  }

  // gate <- silu(gate) * up
  void swiglu(const std::string& site, int l, int n) {
    [[maybe_unused]] auto scope = b_.op(site, "swiglu");
    b_.swiglu(gate_.ptr(0), gate_.ptr(0), up_.ptr(0), static_cast<size_t>(n) * c_.hidden_dim,
              plan_.stored({l, PlanOp::swiglu}).out);
    perturbed({l, PlanOp::swiglu}, gate_.ptr(0), static_cast<size_t>(n) * c_.hidden_dim);
  }

  // x <- x + xb
  void residual_add(const std::string& site, OpId id, int n) {
    [[maybe_unused]] auto scope = b_.op(site, "residual_add");
    b_.add(x_.ptr(0), x_.ptr(0), xb_.ptr(0), static_cast<size_t>(n) * c_.dim, plan_.stored(id).out);
    perturbed(id, x_.ptr(0), static_cast<size_t>(n) * c_.dim);
  }

  // y (M, N) = x (M, K) w^T (+ b), decided by the plan at op `id`.
  void gemm(const std::string& site, OpId id, Buf& y, Buf& x, const Weight& w, const Weight* bias,
            int M, int N, int K) {
    [[maybe_unused]] auto scope = b_.op(site, plan_op_name(id.op));
    b_.gemm(gemm_call(id, y.ptr(0), x.ptr(0), w, bias, M, N, K));
    perturbed(id, y.ptr(0), static_cast<size_t>(M) * N);
  }
  GemmCall gemm_call(OpId id, Ptr y, Ptr x, const Weight& w, const Weight* bias, int M, int N,
                     int K) const {
    const bool has_bias = bias != nullptr && !bias->empty();
    return {y, x, b_.view(w),          has_bias ? b_.view(*bias) : WeightView<B>{}, M, N, K, K,
            K, 0, plan_.gemm(id, N, K)};
  }
  // One projection of gemms: y (M, N) = x w^T (+ bias).
  struct Projection {
    PlanOp op;
    Buf& y;
    const Weight& w;
    const Weight* bias;
    int N;
  };
  // Projections of one input x (M, K) at layer l that read none of each other's outputs (q, k,
  // v; gate, up): one job under the group's label where the backend has gemm_group, else each
  // under its own.
  void gemms(const std::string& site, const char* group_label, int l, Buf& x, int M, int K,
             std::initializer_list<Projection> projections) {
    if constexpr (kCanGroup) {
      [[maybe_unused]] auto scope = b_.op(site, group_label);
      group_.clear();
      for (const Projection& p : projections)
        group_.push_back(gemm_call({l, p.op}, p.y.ptr(0), x.ptr(0), p.w, p.bias, M, p.N, K));
      b_.gemm_group(std::span<const GemmCall>(group_));
      for (const Projection& p : projections) {
        perturbed({l, p.op}, p.y.ptr(0), static_cast<size_t>(M) * p.N);
      }
    } else {
      for (const Projection& p : projections) {
        gemm(site, {l, p.op}, p.y, x, p.w, p.bias, M, p.N, K);
      }
    }
  }

  // o_proj / down_proj: K cut into tp equal shards (rank s multiplies x[:, s*K/tp ...] by the
  // weight's columns of the same range), each rank's result stored like activations, then
  // all-reduced in the plan's order (kernels/ops.h all_reduce).
  void row_parallel_gemm(const std::string& site, OpId id, Buf& y_buf, Buf& x_buf, const Weight& w,
                         int M, int N, int K) {
    [[maybe_unused]] auto scope = b_.op(site, plan_op_name(id.op));
    const Ptr y = y_buf.ptr(0), x = x_buf.ptr(0);
    const RowParallel rp = plan_.row_parallel(id);
    if (rp.tp <= 1) {
      b_.gemm(gemm_call(id, y, x, w, nullptr, M, N, K));
      perturbed(id, y, static_cast<size_t>(M) * N);
      return;
    }
    const int ks = K / rp.tp;
    const size_t mn = static_cast<size_t>(M) * N;
    b_.resize(tp_parts_, static_cast<size_t>(rp.tp) * mn);
    for (int s = 0; s < rp.tp; ++s) {
      GemmCall g = gemm_call(id, tp_parts_.ptr(s * mn), b_.offset(x, static_cast<size_t>(s) * ks),
                             w, nullptr, M, N, ks);
      g.ldx = g.ldw = K;
      g.w_col = static_cast<size_t>(s) * ks;
      b_.gemm(g);
    }
    b_.all_reduce(y, tp_parts_.ptr(0), rp.tp, mn, rp.order, plan_.stored(id).out);
    perturbed(id, y, mn);
  }

  // The plan's test perturbation of op `id`'s output (`count` values at p), right after the op.
  void perturbed(OpId id, Ptr p, size_t count) {
    if constexpr (kCanNudge) {
      if (const Nudge how = plan_.perturbation(id); how != Nudge::none) b_.nudge(p, count, how);
    }
  }

  // Index of (slot, layer, position) in the KV cache (slots, n_layers, capacity, kv_dim);
  // (slots, 0, 0) is its size in values.
  size_t cache_index(int slot, int layer, int pos) const {
    return ((static_cast<size_t>(slot) * c_.n_layers + layer) * capacity_ + pos) * c_.kv_dim();
  }

  const std::string& lsite(int l, SiteKind k) const { return layer_sites_[l][layer_site_index(k)]; }

  // A per-layer site's tensor, right after its op: handed to the hook if wanted.
  void tap_layer(int l, SiteKind k, Ptr p, int n, int width) {
    if (wanted_.at(l, k)) b_.tap({k, l}, p, n, width);
  }

  // ---- shadow layers (shadow.h): a copy of a block on the reference's recorded input rows ----
  static constexpr bool kCanShadow = requires(B & b, Ptr p, const float* h) {
    b.load_rows(p, h, 1);
  };
  static constexpr bool kCanNudge = requires(B & b, Ptr p) { b.nudge(p, 1, Nudge::bf16); };
  static constexpr bool kCanGroup = requires(B & b, std::span<const GemmCall> g) {
    b.gemm_group(g);
  };
  static constexpr bool kCanAttendAll = requires(B & b, Ptr p, const ops::Attention<Ptr>& a) {
    b.attention_all(a, p, p);
  };
  bool replayed() {
    if constexpr (requires(B & b) { b.replayed(); }) {
      return b_.replayed();
    } else {
      return false;
    }
  }

  // Forwards the taps of a shadow to the source, tagged with the shadow's kind.
  struct ShadowTaps final : TapHook {
    ShadowSource* source = nullptr;
    ShadowKind kind = ShadowKind::layer;
    bool wants(const Site&) override { return true; }
    void on_tap(const Site& site, const TapTensor& t) override {
      source->on_shadow_tap(kind, site, t);
    }
  };

  // Runs `body` with the shadow residual and KV cache swapped in, the reference's rows of
  // `input` loaded into the residual, and every tap going to the source as `kind`.
  template <typename F>
  void in_shadow(ShadowKind kind, const Site& input, int n, F&& body) {
    if constexpr (kCanShadow) {
      const size_t values = static_cast<size_t>(n) * c_.dim;
      shadow_in_.resize(values);
      shadow_->reference_rows(input, cols_.slot.data(), cols_.pos.data(), n, c_.dim,
                              shadow_in_.data());
      b_.resize(shadow_x_, values);
      std::swap(x_, shadow_x_);
      std::swap(k_cache_, shadow_k_cache_);
      std::swap(v_cache_, shadow_v_cache_);
      std::swap(wanted_, shadow_wanted_);
      shadow_taps_.kind = kind;
      b_.set_hook(&shadow_taps_, wanted_);
      b_.load_rows(x_.ptr(0), shadow_in_.data(), values);
      body();
      std::swap(x_, shadow_x_);
      std::swap(k_cache_, shadow_k_cache_);
      std::swap(v_cache_, shadow_v_cache_);
      std::swap(wanted_, shadow_wanted_);
      b_.set_hook(hook_, wanted_);
    }
  }

  // After the real layer l: layer l on the reference's input of layer l, then its MLP alone on
  // the reference's L<l>/resid_mid.
  void shadow_layer(int l, int n) {
    if (shadow_layer_[l]) {
      const Site input = l == 0 ? Site{SiteKind::embed} : Site{SiteKind::out, l - 1};
      in_shadow(ShadowKind::layer, input, n, [&] {
        attention_block(l, n);
        mlp_block(l, n);
      });
    }
    if (shadow_mlp_[l]) {
      in_shadow(ShadowKind::mlp, {SiteKind::resid_mid, l}, n, [&] { mlp_block(l, n); });
    }
  }

  // After the real LM head: final norm and LM head on the reference's last layer output.
  void shadow_head(int n) {
    b_.resize(shadow_logits_, static_cast<size_t>(n) * c_.vocab_size);
    std::swap(logits_, shadow_logits_);
    in_shadow(ShadowKind::head, {SiteKind::out, c_.n_layers - 1}, n, [&] { head_block(n); });
    std::swap(logits_, shadow_logits_);
  }

  void resize(int n) {
    const size_t rows = static_cast<size_t>(n);
    b_.resize(x_, rows * c_.dim);              // (n, dim) residual stream
    b_.resize(xb_, rows * c_.dim);             // (n, dim) normed input / block output
    b_.resize(q_, rows * c_.q_dim());          // (n, q_dim)
    b_.resize(k_, rows * c_.kv_dim());         // (n, kv_dim)
    b_.resize(v_, rows * c_.kv_dim());         // (n, kv_dim)
    b_.resize(att_, rows * c_.q_dim());        // (n, q_dim) attention output before o_proj
    b_.resize(gate_, rows * c_.hidden_dim);    // (n, hidden)
    b_.resize(up_, rows * c_.hidden_dim);      // (n, hidden)
    b_.resize(logits_, rows * c_.vocab_size);  // (n, vocab)
  }

  ModelConfig c_;
  NumericsPlan plan_;  // every op's numerics (numerics_plan.h); made from the runtime's knobs
  int capacity_;
  int slots_;
  B b_;
  Weight embed_, final_norm_, lm_head_, cos_, sin_;
  std::vector<StoredLayer<Weight>> layers_;
  const std::string embed_site_ = site_name({SiteKind::embed});
  const std::string final_norm_site_ = site_name({SiteKind::final_norm});
  const std::string logits_site_ = site_name({SiteKind::logits});
  std::vector<std::array<std::string, kLayerSiteCount>> layer_sites_;  // op labels per layer
  Buf k_cache_, v_cache_;
  Buf x_, xb_, q_, k_, v_, att_, gate_, up_, logits_, tp_parts_;
  std::vector<GemmCall> group_;  // gemms' calls, kept to reuse their storage
  HostPassLogits no_rows_;       // what a pass of no rows returns
  BatchColumns cols_;            // tokens, slots and positions of the current pass
  WantedSites wanted_;
  TapHook* hook_ = nullptr;
  // shadow layers: nothing below is allocated or used unless a source is set
  ShadowSource* shadow_ = nullptr;
  std::vector<bool> shadow_layer_, shadow_mlp_;
  bool shadow_head_ = false;
  ShadowTaps shadow_taps_;
  WantedSites shadow_wanted_;
  Buf shadow_k_cache_, shadow_v_cache_;  // (slots, n_layers, capacity, kv_dim)
  Buf shadow_x_;                         // (n, dim) the shadow's residual stream
  Buf shadow_logits_;                    // (n, vocab)
  std::vector<float> shadow_in_;         // (n, dim) the reference's input rows
};

}  // namespace ds
