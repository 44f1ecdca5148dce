// Logits row kernels, one block per row: the greedy token under both tie rules, and what a trace
// stores of a row (top-k ids and logits by a radix select, the log-sum-exp in double).
#pragma once

#include <cstdint>

#include "kernels/cuda/types.cuh"

namespace ds::cuda {

// (value, id) pairs of a greedy argmax: the larger value wins; among equals the lower id, or the
// higher with kHighest. A NaN never compares larger, so it is never taken.
template <bool kHighest>
__device__ __forceinline__ void better(float& v, int& id, float v2, int id2) {
  if (v2 > v || (v2 == v && (kHighest ? id2 > id : id2 < id))) {
    v = v2;
    id = id2;
  }
}

// The block's best (value, id) pair; `sv`, `sid` hold 32 entries.
template <bool kHighest>
__device__ __forceinline__ int block_best(float v, int id, float* sv, int* sid) {
  for (int o = 16; o > 0; o >>= 1) {
    better<kHighest>(v, id, __shfl_xor_sync(0xffffffffu, v, o),
                     __shfl_xor_sync(0xffffffffu, id, o));
  }
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = (blockDim.x + 31) / 32;
  __syncthreads();
  if (lane == 0) {
    sv[warp] = v;
    sid[warp] = id;
  }
  __syncthreads();
  v = -INFINITY;
  id = kHighest ? -1 : 0x7fffffff;
  for (int w = 0; w < warps; ++w) better<kHighest>(v, id, sv[w], sid[w]);
  return id;
}

template <typename T>
__global__ void argmax_kernel(int32_t* lowest, int32_t* highest, const T* logits, int vocab) {
  __shared__ float sv[32];
  __shared__ int sid[32];
  const T* row = logits + static_cast<size_t>(blockIdx.x) * vocab;
  float lo_v = -INFINITY, hi_v = -INFINITY;
  int lo_id = 0x7fffffff, hi_id = -1;
  for (int i = threadIdx.x; i < vocab; i += blockDim.x) {
    const float x = to_f(row[i]);
    better<false>(lo_v, lo_id, x, i);
    better<true>(hi_v, hi_id, x, i);
  }
  const int lo = block_best<false>(lo_v, lo_id, sv, sid);
  const int hi = block_best<true>(hi_v, hi_id, sv, sid);
  if (threadIdx.x == 0) {
    lowest[blockIdx.x] = lo < vocab ? lo : 0;  // an all-NaN row: 0
    highest[blockIdx.x] = hi >= 0 ? hi : 0;
  }
}

// The order of a trace's top-k as an unsigned key: a larger logit has a larger key, -0 and +0
// share one, and NaN has the smallest (it sorts after every number).
__device__ __forceinline__ uint32_t logit_key(float v) {
  if (v != v) return 0u;
  const uint32_t b = __float_as_uint(v == 0.f ? 0.f : v);
  return (b & 0x80000000u) != 0 ? ~b : (b | 0x80000000u);
}

// Block-wide sum of a double (every thread gets it); `shared` holds 32 doubles.
__device__ __forceinline__ double block_sum_double(double v, double* shared) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = (blockDim.x + 31) / 32;
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = lane < warps ? shared[lane] : 0.0;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Block-wide exclusive prefix sum of a 0/1 flag in thread order; *total gets the block's sum.
// `shared` holds 33 ints.
__device__ __forceinline__ int block_exclusive_scan(int flag, int* shared, int* total) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = (blockDim.x + 31) / 32;
  const unsigned ballot = __ballot_sync(0xffffffffu, flag);
  const int in_warp = __popc(ballot & ((1u << lane) - 1u));
  __syncthreads();
  if (lane == 0) shared[warp] = __popc(ballot);
  __syncthreads();
  if (threadIdx.x == 0) {
    int run = 0;
    for (int w = 0; w < warps; ++w) {
      const int c = shared[w];
      shared[w] = run;
      run += c;
    }
    shared[32] = run;
  }
  __syncthreads();
  *total = shared[32];
  return shared[warp] + in_warp;
}

constexpr int kTopkThreads = 512;
constexpr int kTopkSlots = 1024;  // kLogitsTopkMax, a power of two for the bitonic sort

// "a goes before b" in a trace's top-k: larger key, then lower id.
__device__ __forceinline__ bool topk_before(uint32_t ka, int ia, uint32_t kb, int ib) {
  return ka > kb || (ka == kb && ia < ib);
}

// One block (kTopkThreads) per row. 1: radix select, 8 bits at a time from the top, of the k-th
// largest key T, and how many of the keys equal to T belong to the top k (the lowest ids among
// them); 2: the keys above T, then the first of those equal to T in id order, into shared memory;
// 3: a bitonic sort of them by (key descending, id ascending); 4: the log-sum-exp.
template <typename T>
__global__ void __launch_bounds__(kTopkThreads)
    topk_kernel(int32_t* ids, float* values, float* lse, const T* logits, int vocab, int k) {
  __shared__ uint32_t hist[256];
  __shared__ uint32_t cand_key[kTopkSlots];
  __shared__ int cand_id[kTopkSlots];
  __shared__ int scan[33];
  __shared__ double dsum[32];
  __shared__ float fmax_[32];
  __shared__ uint32_t prefix_s, need_s;
  __shared__ int n_above;
  const T* row = logits + static_cast<size_t>(blockIdx.x) * vocab;

  uint32_t prefix = 0, mask = 0, need = static_cast<uint32_t>(k);
  for (int shift = 24; shift >= 0; shift -= 8) {
    for (int i = threadIdx.x; i < 256; i += blockDim.x) hist[i] = 0;
    __syncthreads();
    for (int i = threadIdx.x; i < vocab; i += blockDim.x) {
      const uint32_t key = logit_key(to_f(row[i]));
      if ((key & mask) == prefix) atomicAdd(&hist[(key >> shift) & 255u], 1u);
    }
    __syncthreads();
    if (threadIdx.x == 0) {  // the digit where the count from the top reaches `need`
      uint32_t above = 0;
      int d = 255;
      for (; d > 0 && above + hist[d] < need; --d) above += hist[d];
      prefix_s = prefix | (static_cast<uint32_t>(d) << shift);
      need_s = need - above;
    }
    __syncthreads();
    prefix = prefix_s;
    need = need_s;
    mask |= 255u << shift;
  }
  const uint32_t threshold = prefix;  // the k-th largest key; `need` of its equals are taken
  if (threadIdx.x == 0) n_above = 0;
  __syncthreads();
  for (int i = threadIdx.x; i < vocab; i += blockDim.x) {
    const uint32_t key = logit_key(to_f(row[i]));
    if (key > threshold) {
      const int at = atomicAdd(&n_above, 1);
      cand_key[at] = key;
      cand_id[at] = i;
    }
  }
  __syncthreads();
  const int above = n_above;  // = k - need
  int taken = 0;
  for (int base = 0; base < vocab && taken < static_cast<int>(need); base += blockDim.x) {
    const int i = base + threadIdx.x;
    const int equal = i < vocab && logit_key(to_f(row[i])) == threshold;
    int total = 0;
    const int rank = block_exclusive_scan(equal, scan, &total);
    if (equal && taken + rank < static_cast<int>(need)) {
      cand_key[above + taken + rank] = threshold;
      cand_id[above + taken + rank] = i;
    }
    taken += total;  // uniform: every thread sees the same total
  }
  int slots = 1;
  while (slots < k) slots <<= 1;
  for (int i = k + threadIdx.x; i < slots; i += blockDim.x) {  // padding sorts last
    cand_key[i] = 0;
    cand_id[i] = 0x7fffffff;
  }
  __syncthreads();
  for (int size = 2; size <= slots; size <<= 1) {
    for (int stride = size >> 1; stride > 0; stride >>= 1) {
      for (int i = threadIdx.x; i < slots; i += blockDim.x) {
        const int j = i ^ stride;
        if (j > i) {
          const bool ascending_block = (i & size) == 0;  // this pair's half sorts "before" first
          const bool swap = ascending_block
                                ? topk_before(cand_key[j], cand_id[j], cand_key[i], cand_id[i])
                                : topk_before(cand_key[i], cand_id[i], cand_key[j], cand_id[j]);
          if (swap) {
            const uint32_t tk = cand_key[i];
            cand_key[i] = cand_key[j];
            cand_key[j] = tk;
            const int ti = cand_id[i];
            cand_id[i] = cand_id[j];
            cand_id[j] = ti;
          }
        }
      }
      __syncthreads();
    }
  }
  int32_t* out_ids = ids + static_cast<size_t>(blockIdx.x) * k;
  float* out_values = values + static_cast<size_t>(blockIdx.x) * k;
  for (int i = threadIdx.x; i < k; i += blockDim.x) {
    out_ids[i] = cand_id[i];
    out_values[i] = to_f(row[cand_id[i]]);
  }
  // log-sum-exp as trace/topk.h: the largest value (a NaN is passed over), max + log(sum e^(x-m))
  float m = -INFINITY;
  for (int i = threadIdx.x; i < vocab; i += blockDim.x) m = fmaxf(m, to_f(row[i]));
  m = block_max(m, fmax_);
  double s = 0;
  if (isfinite(m)) {
    for (int i = threadIdx.x; i < vocab; i += blockDim.x) {
      s += exp(static_cast<double>(to_f(row[i])) - static_cast<double>(m));
    }
  }
  s = block_sum_double(s, dsum);
  if (threadIdx.x == 0) {
    lse[blockIdx.x] = isfinite(m) ? static_cast<float>(static_cast<double>(m) + log(s)) : m;
  }
}

}  // namespace ds::cuda
