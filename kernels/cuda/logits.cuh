// Logits row summary kernel: greedy token (largest logit, lowest id on ties) and log-sum-exp,
// one block per row.
#pragma once

#include "kernels/cuda/types.cuh"

namespace ds::cuda {

// (value, id) pairs: the larger value wins, the lower id on ties.
__device__ __forceinline__ void better(float& v, int& id, float v2, int id2) {
  if (v2 > v || (v2 == v && id2 < id)) {
    v = v2;
    id = id2;
  }
}

template <typename T>
__global__ void argmax_lse_kernel(int32_t* argmax, float* lse, const T* logits, int vocab) {
  __shared__ float shared[32];
  __shared__ float best_v[32];
  __shared__ int best_id[32];
  const T* row = logits + static_cast<size_t>(blockIdx.x) * vocab;
  float v = -INFINITY;
  int id = vocab;
  for (int i = threadIdx.x; i < vocab; i += blockDim.x) better(v, id, to_f(row[i]), i);
  for (int o = 16; o > 0; o >>= 1) {
    better(v, id, __shfl_xor_sync(0xffffffffu, v, o), __shfl_xor_sync(0xffffffffu, id, o));
  }
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = (blockDim.x + 31) / 32;
  if (lane == 0) {
    best_v[warp] = v;
    best_id[warp] = id;
  }
  __syncthreads();
  v = -INFINITY;
  id = vocab;
  for (int w = 0; w < warps; ++w) better(v, id, best_v[w], best_id[w]);
  float sum = 0.f;
  for (int i = threadIdx.x; i < vocab; i += blockDim.x) sum += expf(to_f(row[i]) - v);
  sum = block_sum(sum, shared);
  if (threadIdx.x == 0) {
    argmax[blockIdx.x] = id < vocab ? id : 0;  // an all-NaN row: 0 (its lse is NaN)
    lse[blockIdx.x] = v + logf(sum);
  }
}

}  // namespace ds::cuda
