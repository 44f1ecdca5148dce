// RMSNorm kernel: one block per row, fp32 tree reduction of the sum of squares.
#pragma once

#include "kernels/cuda/types.cuh"

namespace ds::cuda {

template <typename T, typename TW>
__global__ void rmsnorm_kernel(T* y, const T* x, const TW* w, int dim, float eps) {
  __shared__ float shared[32];
  const T* xr = x + static_cast<size_t>(blockIdx.x) * dim;
  T* yr = y + static_cast<size_t>(blockIdx.x) * dim;
  float ss = 0.f;
  for (int i = threadIdx.x; i < dim; i += blockDim.x) {
    const float v = to_f(xr[i]);
    ss += v * v;
  }
  ss = block_sum(ss, shared);
  const float inv = 1.f / sqrtf(ss / static_cast<float>(dim) + eps);
  for (int i = threadIdx.x; i < dim; i += blockDim.x) {
    yr[i] = from_f<T>(__fmul_rn(__fmul_rn(to_f(xr[i]), inv), to_f(w[i])));
  }
}

}  // namespace ds::cuda
