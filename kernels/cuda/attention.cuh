// Attention kernels: one block per (key chunk, head, query row) computes scores, softmax and the
// weighted sum of values of its chunk; with several chunks (split-KV / flash-decoding) a merge
// kernel combines the per-chunk partials in chunk order. Reduction order: kernels/ops.h attention.
#pragma once

#include "kernels/chunks.h"
#include "kernels/cuda/types.cuh"

namespace ds::cuda {

struct AttnChunk {
  int t0, c0, c1, splits;  // first attended key, this chunk's keys [c0, c1), the row's chunk count
};

// The CPU reference's chunking of row p's keys (sizes differ by at most one, larger first).
__device__ __forceinline__ AttnChunk attn_chunk(int p, int window, int want_splits, int c) {
  const int t0 = window > 0 && p - window + 1 > 0 ? p - window + 1 : 0;
  const int n_keys = p - t0 + 1;
  const int splits = max(1, min(want_splits, n_keys));
  const Chunk ch = chunk_of(n_keys, splits, c);  // kernels/chunks.h
  return {t0, t0 + ch.begin, t0 + ch.end, splits};
}

// Row r's split count: its own (row_splits), else the call's.
__device__ __forceinline__ int row_splits(const AttentionArgs& a, int r) {
  return a.row_splits != nullptr ? a.row_splits[r] : a.num.split;
}

// scratch layout: scores (rows, n_heads, max_keys), then partials (rows, n_heads, splits,
// head_dim + 2) = [m, l, o[head_dim]] per chunk.
// acc + x * y with separate roundings; with kF16Acc the sum is rounded to fp16 (accum_f16).
template <bool kF16Acc>
__device__ __forceinline__ float attn_acc(float acc, float x, float y) {
  const float s = mul_add_rn(x, y, acc);
  return kF16Acc ? round_as<__half>(s) : s;
}

// grid (rows, n_heads, splits): rows in x, which has no 65535 limit (long prefills).
template <typename T, bool kF16Acc>
__global__ void attention_chunk_kernel(AttentionArgs a, float* scratch) {
  __shared__ float shared[32];
  const int r = blockIdx.x, h = blockIdx.y, c = blockIdx.z;
  const int p = a.positions[r];
  const int want = row_splits(a, r);
  if (want == 0) return;  // another kernel's row (uniform across the block)
  const AttnChunk ch = attn_chunk(p, a.window, want, c);
  if (c >= ch.splits) return;  // uniform across the block
  const int hd = a.head_dim;
  const size_t kv_stride = static_cast<size_t>(a.n_kv_heads) * hd;
  const size_t kv_off = static_cast<size_t>(h / (a.n_heads / a.n_kv_heads)) * hd;
  const size_t slot_off = static_cast<size_t>(a.row_slot[r]) * a.slot_stride;
  const T* q = static_cast<const T*>(a.q.p) + (static_cast<size_t>(r) * a.n_heads + h) * hd;
  const T* k = static_cast<const T*>(a.k_cache.p) + slot_off + kv_off;
  const T* v = static_cast<const T*>(a.v_cache.p) + slot_off + kv_off;
  float* sc = scratch + (static_cast<size_t>(r) * a.n_heads + h) * a.max_keys - ch.t0;

  float m = -INFINITY;
  for (int t = ch.c0 + threadIdx.x; t < ch.c1; t += blockDim.x) {
    const T* kt = k + t * kv_stride;
    float dot = 0.f;
    for (int d = 0; d < hd; ++d) dot = attn_acc<kF16Acc>(dot, to_f(q[d]), to_f(kt[d]));
    const float s = __fmul_rn(dot, static_cast<float>(a.scale));  // the CPU's T(scale)
    sc[t] = s;
    m = fmaxf(m, s);
  }
  m = block_max(m, shared);
  float l = 0.f;
  for (int t = ch.c0 + threadIdx.x; t < ch.c1; t += blockDim.x) {
    const float e = expf(sc[t] - m);
    l += e;
    sc[t] = ch.splits > 1 ? round_as<T>(e) : e;
  }
  l = block_sum(l, shared);  // its __syncthreads also publishes sc[] to the block
  if (ch.splits == 1) {
    for (int t = ch.c0 + threadIdx.x; t < ch.c1; t += blockDim.x) {
      sc[t] = round_as<T>(__fdiv_rn(sc[t], l));
    }
    __syncthreads();
    T* out = static_cast<T*>(a.out.p) + (static_cast<size_t>(r) * a.n_heads + h) * hd;
    for (int d = threadIdx.x; d < hd; d += blockDim.x) {
      float acc = 0.f;
      for (int t = ch.c0; t < ch.c1; ++t)
        acc = attn_acc<kF16Acc>(acc, sc[t], to_f(v[t * kv_stride + d]));
      out[d] = from_f<T>(acc);
    }
    return;
  }
  float* part = scratch + static_cast<size_t>(a.rows) * a.n_heads * a.max_keys +
                ((static_cast<size_t>(r) * a.n_heads + h) * a.num.split + c) * (hd + 2);
  if (threadIdx.x == 0) {
    part[0] = m;
    part[1] = l;
  }
  for (int d = threadIdx.x; d < hd; d += blockDim.x) {
    float acc = 0.f;
    for (int t = ch.c0; t < ch.c1; ++t)
      acc = attn_acc<kF16Acc>(acc, sc[t], to_f(v[t * kv_stride + d]));
    part[2 + d] = acc;
  }
}

// Merges a row's chunk partials: out = sum_c o_c e^(m_c - m) / sum_c l_c e^(m_c - m), in chunk
// order.
template <typename T>
__global__ void attention_merge_kernel(AttentionArgs a, const float* scratch) {
  const int r = blockIdx.x, h = blockIdx.y;  // grid (rows, n_heads)
  const int want = row_splits(a, r);
  if (want == 0) return;  // another kernel's row
  const AttnChunk ch = attn_chunk(a.positions[r], a.window, want, 0);
  if (ch.splits == 1) return;  // the chunk kernel wrote the output
  const int hd = a.head_dim;
  const float* part = scratch + static_cast<size_t>(a.rows) * a.n_heads * a.max_keys +
                      (static_cast<size_t>(r) * a.n_heads + h) * a.num.split * (hd + 2);
  float m = -INFINITY;
  for (int c = 0; c < ch.splits; ++c) m = fmaxf(m, part[c * (hd + 2)]);
  T* out = static_cast<T*>(a.out.p) + (static_cast<size_t>(r) * a.n_heads + h) * hd;
  for (int d = threadIdx.x; d < hd; d += blockDim.x) {
    float l = 0.f, o = 0.f;
    for (int c = 0; c < ch.splits; ++c) {
      const float* pc = part + c * (hd + 2);
      const float f = expf(pc[0] - m);
      l = mul_add_rn(pc[1], f, l);
      o = mul_add_rn(pc[2 + d], f, o);
    }
    out[d] = from_f<T>(__fdiv_rn(o, l));
  }
}

}  // namespace ds::cuda
