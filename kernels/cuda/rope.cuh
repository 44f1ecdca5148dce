// Rotary embedding kernel (half-split layout): one thread per (row, head, i < head_dim/2).
#pragma once

#include "kernels/cuda/types.cuh"

namespace ds::cuda {

template <typename T>
__global__ void rope_kernel(T* x, int rows, int n_heads, int head_dim, const int* positions,
                            const float* cos, const float* sin) {
  const int half = head_dim / 2;
  const size_t idx = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const size_t total = static_cast<size_t>(rows) * n_heads * half;
  if (idx >= total) return;
  const int i = static_cast<int>(idx % half);
  const size_t rh = idx / half;  // row * n_heads + head
  const int r = static_cast<int>(rh / n_heads);
  T* v = x + rh * head_dim;
  const float c = cos[static_cast<size_t>(positions[r]) * half + i];
  const float s = sin[static_cast<size_t>(positions[r]) * half + i];
  const float x0 = to_f(v[i]), x1 = to_f(v[i + half]);
  v[i] = from_f<T>(__fsub_rn(__fmul_rn(x0, c), __fmul_rn(x1, s)));
  v[i + half] = from_f<T>(__fadd_rn(__fmul_rn(x1, c), __fmul_rn(x0, s)));
}

}  // namespace ds::cuda
