// CPU reference implementation of kernels/ops.h: plain loops in the documented reduction order,
// with reduced-precision storage and accumulation emulated on float. The loops are split across
// threads only where results are independent (output features, (row, head) pairs of attention,
// rows), never inside a reduction, and the fp32 GEMM has a vectorised twin (gemm_lanes.h) that
// keeps each output's order; cpu_exec.h selects them, CpuKernels::reference runs these loops as
// written on one thread.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <type_traits>
#include <vector>

#include "common/float_formats.h"
#include "kernels/chunks.h"
#include "kernels/cpu/cpu_exec.h"
#include "kernels/cpu/gemm_lanes.h"
#include "kernels/cpu/weight_read.h"
#include "kernels/ops.h"

namespace ds::ops {
namespace {

template <typename T>
inline T rnd(T v, Storage r) {
  if (r == Storage::native) return v;
  const float f = static_cast<float>(v);
  return static_cast<T>(ds::round_to(f, r));
}

// sum_{k=k0..k1-1} x[k] * w[k] in order, in T or with every partial sum rounded to fp16 (w: a
// T pointer or a widening reader of 16-bit weights, weight_read.h).
template <typename T, typename W>
inline T dot(const T* x, W w, int k0, int k1, bool accum_f16) {
  T acc = 0;
  if (!accum_f16) {
    for (int k = k0; k < k1; ++k) acc += x[k] * w[k];
  } else {
    for (int k = k0; k < k1; ++k) acc = rnd<T>(acc + x[k] * w[k], Storage::f16);
  }
  return acc;
}

// Adds b to acc in the accumulator's precision.
template <typename T>
inline T acc_add(T acc, T b, bool accum_f16) {
  return accum_f16 ? rnd<T>(acc + b, Storage::f16) : acc + b;
}

}  // namespace

template <typename T>
void round_to(T* x, size_t n, Storage r) {
  if (r == Storage::native) return;
  for (size_t i = 0; i < n; ++i) x[i] = rnd(x[i], r);
}

template <typename T>
void step_bf16(T* x, size_t n, int dir) {
  for (size_t i = 0; i < n; ++i)
    x[i] = static_cast<T>(ds::bf16_step(static_cast<float>(x[i]), dir));
}

namespace {

// Items per thread so that each gets at least ~32k multiply-adds (smaller jobs run inline).
size_t grain_for(size_t work_per_item) {
  return std::max<size_t>(1, (size_t{1} << 15) / std::max<size_t>(1, work_per_item));
}

// Output features [n_begin, n_end) of matmul, in the documented order (the reference loops):
// g's weights read through W (a T pointer, or a widening reader for float), its split clamped.
template <typename T, typename W>
void matmul_rows(const Gemm<T*, W, const T*>& g, int n_begin, int n_end) {
  for (int m = 0; m < g.M; ++m) {
    const T* xm = g.x + static_cast<size_t>(m) * g.ldx;
    for (int n = n_begin; n < n_end; ++n) {
      const auto wn = row(g.w, static_cast<size_t>(n), static_cast<size_t>(g.ldw));
      T acc = 0;
      for (int c = 0; c < g.num.split; ++c) {
        const Chunk ch = chunk_of(g.K, g.num.split, c);
        const T part = dot(xm, wn, ch.begin, ch.end, g.num.accum_f16);
        acc = c == 0 ? part : acc_add(acc, part, g.num.accum_f16);
      }
      if (g.bias != nullptr) acc = acc + g.bias[n];
      g.y[static_cast<size_t>(m) * g.N + n] = rnd(acc, g.num.out);
    }
  }
}

// A matmul cut into items that threads may take in any order (each item's outputs are summed
// whole by whoever runs it): run(i0, i1) computes items [i0, i1); grain is the fewest items worth
// a thread (grain_for).
struct MatmulWork {
  size_t items = 0, grain = 1;
  std::function<void(size_t, size_t)> run;
};

// matmul as items: g with its weights read through W, its bias a T pointer (or null), its split
// clamped to 1..K.
template <typename T, typename W>
MatmulWork matmul_work(Gemm<T*, W, const T*> g) {
  g.num.split = std::clamp(g.num.split, 1, std::max(1, g.K));
  const size_t row_work = static_cast<size_t>(g.M) * std::max(1, g.K);
  if constexpr (std::is_same_v<T, float>) {
    if (!g.num.accum_f16 && cpu_kernels() == CpuKernels::simd && gemm_lanes_available()) {
      // items: the kernel's passes (lanes_blocks_per_pass blocks of 8 output features; the
      // last may be short), then one item for the N mod 8 left over
      const size_t pass = static_cast<size_t>(lanes_blocks_per_pass<W>(g.M));
      const size_t blocks = static_cast<size_t>(g.N / 8), passes = (blocks + pass - 1) / pass;
      return {passes + (g.N % 8 != 0 ? 1 : 0), grain_for(8 * pass * row_work),
              [=](size_t i0, size_t i1) {
                const int n0 = static_cast<int>(std::min(i0 * pass, blocks)) * 8,
                          n1 = static_cast<int>(std::min(std::min(i1, passes) * pass, blocks)) * 8;
                if (n0 < n1) matmul_f32_lanes(g, n0, n1);
                if (i1 > passes) matmul_rows(g, 8 * static_cast<int>(blocks), g.N);
              }};
    }
  }
  return {static_cast<size_t>(g.N), grain_for(row_work), [=](size_t n0, size_t n1) {
            matmul_rows(g, static_cast<int>(n0), static_cast<int>(n1));
          }};
}

// Several matmuls' items as one job of the threads: item i of the whole is item i - start of the
// matmul whose range [start, start + items) holds it.
void run_works(const std::vector<MatmulWork>& works) {
  size_t total = 0, grain = SIZE_MAX;
  for (const MatmulWork& m : works) {
    total += m.items;
    grain = std::min(grain, m.grain);
  }
  parallel_for(total, grain, [&](size_t i0, size_t i1) {
    size_t start = 0;
    for (const MatmulWork& m : works) {
      const size_t b = std::max(i0, start), e = std::min(i1, start + m.items);
      if (b < e) m.run(b - start, e - start);
      start += m.items;
    }
  });
}

// A small stored vector (a bias, a norm's weights) widened to float for one call: null when
// absent, the values themselves when float32, else a copy in scratch.
const float* widened(StoredWeights v, size_t n, std::vector<float>& scratch) {
  if (v.data == nullptr || v.format == Storage::native) return static_cast<const float*>(v.data);
  scratch.resize(n);
  widen(static_cast<const uint16_t*>(v.data), scratch.data(), n, v.format);
  return scratch.data();
}

}  // namespace

template <typename T>
void matmul(const Gemm<T*, const T*>& g) {
  Gemm<T*, const T*> shard = g;
  shard.w = g.w + g.w_col;
  run_works({matmul_work(shard)});
}

void matmul(const StoredGemm& g) {
  matmul_group(&g, 1);
}

void matmul_group(const StoredGemm* calls, size_t n) {
  std::vector<MatmulWork> works;
  std::vector<std::vector<float>> biases(n);  // 16-bit biases widened, one per call
  for (size_t i = 0; i < n; ++i) {
    const StoredGemm& c = calls[i];
    const float* bias = widened(c.bias, static_cast<size_t>(c.N), biases[i]);
    works.push_back(with_weights(c.w.column(c.w_col), [&](auto wr) {
      return matmul_work(Gemm<float*, decltype(wr), const float*>{c.y, c.x, wr, bias, c.M, c.N, c.K,
                                                                  c.ldx, c.ldw, 0, c.num});
    }));
  }
  run_works(works);
}

template <typename T>
void all_reduce(T* y, T* parts, int tp, size_t n, AllReduce order, Storage out) {
  if (order == AllReduce::ring || tp <= 1) {
    std::memcpy(y, parts, sizeof(T) * n);
    for (int s = 1; s < tp; ++s) {
      const T* p = parts + s * n;
      for (size_t i = 0; i < n; ++i) y[i] = rnd(y[i] + p[i], out);
    }
    return;
  }
  // tree: combine neighbours level by level; an odd one out moves up unchanged
  for (int width = tp; width > 1; width = (width + 1) / 2) {
    for (int s = 0; 2 * s + 1 < width; ++s) {
      T* dst = parts + s * n;
      const T* a = parts + (2 * s) * n;
      const T* c = parts + (2 * s + 1) * n;
      for (size_t i = 0; i < n; ++i) dst[i] = rnd(a[i] + c[i], out);
    }
    if (width % 2 == 1)
      std::memmove(parts + (width / 2) * n, parts + (width - 1) * n, sizeof(T) * n);
  }
  std::memcpy(y, parts, sizeof(T) * n);
}

template <typename T>
void embedding(T* out, const T* table, const int32_t* ids, int n, int dim) {
  for (int r = 0; r < n; ++r) {
    std::memcpy(out + static_cast<size_t>(r) * dim, table + static_cast<size_t>(ids[r]) * dim,
                sizeof(T) * dim);
  }
}

void embedding(float* out, StoredWeights table, const int32_t* ids, int n, int dim) {
  if (table.format == Storage::native && !table.packed) {
    embedding(out, static_cast<const float*>(table.data), ids, n, dim);
    return;
  }
  with_weights(table, [&](auto t) {
    for (int r = 0; r < n; ++r) {
      const auto values = row(t, static_cast<size_t>(ids[r]), static_cast<size_t>(dim));
      float* o = out + static_cast<size_t>(r) * dim;
      for (int i = 0; i < dim; ++i) o[i] = values[i];
    }
  });
}

size_t packed_values(int N, int K) {
  return static_cast<size_t>((N + 7) / 8) * 8 * static_cast<size_t>(std::max(0, K));
}

namespace {
template <typename E>
void pack_rows(E* out, const E* w, int N, int K) {
  const size_t blocks = static_cast<size_t>((N + 7) / 8);
  parallel_for(blocks, 1, [&](size_t b0, size_t b1) {
    for (size_t b = b0; b < b1; ++b) {
      // the block's eight rows read side by side, its values written in order
      const E* rows[8];
      for (int i = 0; i < 8; ++i) {
        const size_t n = std::min<size_t>(8 * b + i, static_cast<size_t>(N) - 1);
        rows[i] = w + n * static_cast<size_t>(K);
      }
      const int real = static_cast<int>(std::min<size_t>(8, static_cast<size_t>(N) - 8 * b));
      E* blk = out + b * 8 * static_cast<size_t>(K);
      for (int k = 0; k < K; ++k) {
        E* o = blk + 8 * static_cast<size_t>(k);
        for (int i = 0; i < 8; ++i) o[i] = i < real ? rows[i][k] : E(0);
      }
    }
  });
}
}  // namespace

void pack_weights(void* out, StoredWeights w, int N, int K) {
  if (w.format == Storage::native) {
    pack_rows(static_cast<float*>(out), static_cast<const float*>(w.data), N, K);
  } else {
    pack_rows(static_cast<uint16_t*>(out), static_cast<const uint16_t*>(w.data), N, K);
  }
}

void rmsnorm(const Rmsnorm<float*, StoredWeights>& r) {
  thread_local std::vector<float> scratch;
  rmsnorm(Rmsnorm<float*, const float*>{r.y, r.x, widened(r.w, static_cast<size_t>(r.dim), scratch),
                                        r.rows, r.dim, r.eps, r.num});
}

template <typename T>
void rmsnorm(const Rmsnorm<T*, const T*>& n) {
  const int dim = n.dim;
  parallel_for(static_cast<size_t>(n.rows), grain_for(4 * static_cast<size_t>(dim)),
               [&](size_t r0, size_t r1) {
                 for (int r = static_cast<int>(r0); r < static_cast<int>(r1); ++r) {
                   const T* xr = n.x + static_cast<size_t>(r) * dim;
                   T* yr = n.y + static_cast<size_t>(r) * dim;
                   T ss = 0;
                   for (int i = 0; i < dim; ++i) ss += xr[i] * xr[i];
                   const T inv = T(1) / std::sqrt(ss / T(dim) + T(n.eps));
                   for (int i = 0; i < dim; ++i) yr[i] = rnd((xr[i] * inv) * n.w[i], n.num.out);
                 }
               });
}

template <typename T>
void rope(const Rope<T*, const T*>& rp) {
  const int half = rp.head_dim / 2;
  const Storage out = rp.num.out;
  for (int r = 0; r < rp.rows; ++r) {
    const T* c = rp.cos + static_cast<size_t>(rp.positions[r]) * half;
    const T* s = rp.sin + static_cast<size_t>(rp.positions[r]) * half;
    for (int h = 0; h < rp.n_heads; ++h) {
      T* v = rp.x + (static_cast<size_t>(r) * rp.n_heads + h) * rp.head_dim;
      for (int i = 0; i < half; ++i) {
        const T x0 = v[i];
        const T x1 = v[i + half];
        v[i] = rnd(x0 * c[i] - x1 * s[i], out);
        v[i + half] = rnd(x1 * c[i] + x0 * s[i], out);
      }
    }
  }
}

namespace {

// The scores q . k_t * scale into scratch[t], t0 <= t <= p; one key per SIMD lane when fast (each
// lane's dot product over d in order, as the scalar loop).
template <typename T>
void attention_scores(const HeadRows<T>& h, T scale, const OpNumerics& a, T* scratch, bool lanes) {
  const int n_keys = h.p - h.t0 + 1;
  int t_scalar = h.t0;
  if constexpr (std::is_same_v<T, float>) {
    if (lanes && !a.accum_f16 && n_keys >= 8) {
      const int vec = n_keys / 8 * 8;
      // the keys as the rows of a GEMM's weights: one query row against n_keys of them
      const LanesGemm<const float*> g{
          scratch + h.t0, h.q,        h.k + h.t0 * h.kv_stride,      nullptr, 1,           n_keys,
          h.head_dim,     h.head_dim, static_cast<int>(h.kv_stride), 0,       OpNumerics{}};
      matmul_f32_lanes(g, 0, vec);
      for (int t = h.t0; t < h.t0 + vec; ++t) scratch[t] = scratch[t] * scale;
      t_scalar = h.t0 + vec;
    }
  }
  for (int t = t_scalar; t <= h.p; ++t) {
    scratch[t] = dot(h.q, h.k + t * h.kv_stride, 0, h.head_dim, a.accum_f16) * scale;
  }
}

// Softmax over all keys at once, then P.V summed in key order (eight d per SIMD lane register
// when fast: each lane's sum over t in order, as the scalar loop).
template <typename T>
void softmax_pv_whole(const HeadRows<T>& h, const OpNumerics& a, T* scratch, bool lanes) {
  T max_score = -INFINITY;
  for (int t = h.t0; t <= h.p; ++t) max_score = std::max(max_score, scratch[t]);
  T sum = 0;
  for (int t = h.t0; t <= h.p; ++t) {
    scratch[t] = std::exp(scratch[t] - max_score);
    sum += scratch[t];
  }
  for (int t = h.t0; t <= h.p; ++t) scratch[t] = rnd(scratch[t] / sum, a.p_round);
  T* oh = h.out;
  int d_scalar = 0;  // the d from here on take the scalar loop
  if constexpr (std::is_same_v<T, float>) {
    if (lanes && !a.accum_f16) {
      pv_f32_lanes(h, scratch);
      d_scalar = h.head_dim / 8 * 8;
    }
  }
  for (int d = d_scalar; d < h.head_dim; ++d) oh[d] = 0;
  for (int t = h.t0; t <= h.p; ++t) {
    const T* vt = h.v + t * h.kv_stride;
    if (a.accum_f16) {
      for (int d = d_scalar; d < h.head_dim; ++d) oh[d] = acc_add(oh[d], scratch[t] * vt[d], true);
    } else {  // independent per d: the compiler vectorises it with the same roundings
      for (int d = d_scalar; d < h.head_dim; ++d) oh[d] = oh[d] + scratch[t] * vt[d];
    }
  }
  round_to(oh, h.head_dim, a.out);
}

// Split-KV: per chunk of keys the max, the sum of exp and the unnormalised output (part, one
// row of head_dim + 2 per chunk), then the standard merge in chunk order.
template <typename T>
void softmax_pv_split(const HeadRows<T>& h, const OpNumerics& a, int splits, const T* scratch,
                      std::vector<T>& part) {
  const int n_keys = h.p - h.t0 + 1;
  const int stride = h.head_dim + 2;
  part.assign(static_cast<size_t>(splits) * stride, T(0));
  for (int c = 0; c < splits; ++c) {
    const Chunk ch = chunk_of(n_keys, splits, c);
    const int c0 = h.t0 + ch.begin, c1 = h.t0 + ch.end;
    T* pc = &part[static_cast<size_t>(c) * stride];
    T m = -INFINITY;
    for (int t = c0; t < c1; ++t) m = std::max(m, scratch[t]);
    T l = 0;
    for (int t = c0; t < c1; ++t) {
      const T e = std::exp(scratch[t] - m);
      l += e;
      const T ep = rnd(e, a.p_round);
      const T* vt = h.v + t * h.kv_stride;
      if (a.accum_f16) {
        for (int d = 0; d < h.head_dim; ++d) pc[2 + d] = acc_add(pc[2 + d], ep * vt[d], true);
      } else {
        for (int d = 0; d < h.head_dim; ++d) pc[2 + d] = pc[2 + d] + ep * vt[d];
      }
    }
    pc[0] = m;
    pc[1] = l;
  }
  T m = -INFINITY;
  for (int c = 0; c < splits; ++c) m = std::max(m, part[static_cast<size_t>(c) * stride]);
  T l = 0;
  T* oh = h.out;
  for (int d = 0; d < h.head_dim; ++d) oh[d] = 0;
  for (int c = 0; c < splits; ++c) {
    const T* pc = &part[static_cast<size_t>(c) * stride];
    const T f = std::exp(pc[0] - m);
    l += pc[1] * f;
    for (int d = 0; d < h.head_dim; ++d) oh[d] += pc[2 + d] * f;
  }
  for (int d = 0; d < h.head_dim; ++d) oh[d] = rnd(oh[d] / l, a.out);
}

// FlashAttention-2's order (ops.h OpNumerics::tile): an online softmax over aligned key tiles,
// the output rescaled by each tile's alpha before the tile's P.V is added.
template <typename T>
void softmax_pv_tiled(const HeadRows<T>& h, const OpNumerics& a, T* scratch) {
  T m = -INFINITY, l = 0;
  T* oh = h.out;
  for (int d = 0; d < h.head_dim; ++d) oh[d] = 0;
  for (int b0 = h.t0 / a.tile * a.tile; b0 <= h.p; b0 += a.tile) {
    const int lo = std::max(h.t0, b0), hi = std::min(h.p, b0 + a.tile - 1);
    T tile_max = -INFINITY;
    for (int t = lo; t <= hi; ++t) tile_max = std::max(tile_max, scratch[t]);
    const T m_new = std::max(m, tile_max);
    const T alpha = std::exp(m - m_new);  // 0 for the first tile (m = -inf)
    T sum = 0;
    for (int t = lo; t <= hi; ++t) {
      scratch[t] = std::exp(scratch[t] - m_new);
      sum += scratch[t];
    }
    l = l * alpha + sum;
    for (int d = 0; d < h.head_dim; ++d) {
      T acc = oh[d] * alpha;
      for (int t = lo; t <= hi; ++t) {
        acc = acc_add(acc, rnd(scratch[t], a.p_round) * h.v[t * h.kv_stride + d], a.accum_f16);
      }
      oh[d] = acc;
    }
    m = m_new;
  }
  for (int d = 0; d < h.head_dim; ++d) oh[d] = rnd(oh[d] / l, a.out);
}

// Query row r, head h of attention call a (see ops.h): scratch holds the scores (indexed by key
// position), part the split-KV partials.
template <typename T>
void attention_head(const Attention<T*>& a, int r, int h, T* scratch, std::vector<T>& part,
                    bool lanes) {
  const int group = a.n_heads / a.n_kv_heads;
  const size_t q_stride = static_cast<size_t>(a.n_heads) * a.head_dim;
  const size_t kv_stride = static_cast<size_t>(a.n_kv_heads) * a.head_dim;
  const size_t kv_off = static_cast<size_t>(h / group) * a.head_dim;
  const int p = a.positions[r];
  const int t0 = a.window > 0 && p - a.window + 1 > 0 ? p - a.window + 1 : 0;
  const HeadRows<T> rows{a.q + r * q_stride + static_cast<size_t>(h) * a.head_dim,
                         a.out + r * q_stride + static_cast<size_t>(h) * a.head_dim,
                         a.k_cache + kv_off,
                         a.v_cache + kv_off,
                         kv_stride,
                         a.head_dim,
                         t0,
                         p};
  attention_scores(rows, static_cast<T>(a.scale), a.num, scratch, lanes);
  const int splits = std::clamp(a.num.split, 1, p - t0 + 1);
  if (a.num.tile > 0 && a.num.split <= 1) {  // the requested split, as the CUDA backend decides
    softmax_pv_tiled(rows, a.num, scratch);
  } else if (splits == 1) {
    softmax_pv_whole(rows, a.num, scratch, lanes);
  } else {
    softmax_pv_split(rows, a.num, splits, scratch, part);
  }
}

}  // namespace

template <typename T>
void attention(const Attention<T*>& a, T* scratch) {
  if (cpu_kernels() == CpuKernels::reference) {
    std::vector<T> part;  // split-KV partials: per chunk m, l, o[head_dim]
    for (int r = 0; r < a.rows; ++r) {
      for (int h = 0; h < a.n_heads; ++h) attention_head(a, r, h, scratch, part, false);
    }
    return;
  }
  // (row, head) pairs split across threads, each with its own scores and partials
  const bool lanes = cpu_kernels() == CpuKernels::simd && gemm_lanes_available();
  const int max_pos = a.rows > 0 ? *std::max_element(a.positions, a.positions + a.rows) : 0;
  const size_t work = static_cast<size_t>(max_pos + 1) * a.head_dim * 2;
  parallel_for(static_cast<size_t>(a.rows) * a.n_heads, grain_for(work), [&](size_t i0, size_t i1) {
    thread_local std::vector<T> scores, part;
    if (scores.size() < static_cast<size_t>(max_pos) + 1)
      scores.resize(static_cast<size_t>(max_pos) + 1);
    for (size_t i = i0; i < i1; ++i) {
      attention_head(a, static_cast<int>(i / a.n_heads), static_cast<int>(i % a.n_heads),
                     scores.data(), part, lanes);
    }
  });
}

template <typename T>
void swiglu(T* out, const T* gate, const T* up, size_t n, Storage r) {
  // an exp costs some 64 multiply-adds: a decode step's 2048 elements still go to two threads
  parallel_for(n, grain_for(64), [&](size_t i0, size_t i1) {
    for (size_t i = i0; i < i1; ++i) {
      const T g = gate[i];
      out[i] = rnd((g / (T(1) + std::exp(-g))) * up[i], r);
    }
  });
}

template <typename T>
void add(T* y, const T* a, const T* b, size_t n, Storage r) {
  for (size_t i = 0; i < n; ++i) y[i] = rnd(a[i] + b[i], r);
}

int heuristic_split_k(int M, int /*N*/, int K) {
  const int s = M == 1 ? 4 : (M <= 16 ? 2 : 1);
  return std::max(1, std::min(s, K / 16));
}

int heuristic_attn_splits(int kv_len, int sequences, int n_heads) {
  const int blocks = std::max(1, sequences * n_heads);
  const int by_sms = std::max(1, 132 / blocks);
  const int by_len = std::max(1, kv_len / 64);
  return std::min({16, by_sms, by_len});
}

#define DS_INSTANTIATE(T)                                               \
  template void round_to<T>(T*, size_t, Storage);                       \
  template void step_bf16<T>(T*, size_t, int);                          \
  template void matmul<T>(const Gemm<T*, const T*>&);                   \
  template void all_reduce<T>(T*, T*, int, size_t, AllReduce, Storage); \
  template void embedding<T>(T*, const T*, const int32_t*, int, int);   \
  template void rmsnorm<T>(const Rmsnorm<T*, const T*>&);               \
  template void rope<T>(const Rope<T*, const T*>&);                     \
  template void attention<T>(const Attention<T*>&, T*);                 \
  template void swiglu<T>(T*, const T*, const T*, size_t, Storage);     \
  template void add<T>(T*, const T*, const T*, size_t, Storage);

DS_INSTANTIATE(float)
DS_INSTANTIATE(double)

}  // namespace ds::ops
