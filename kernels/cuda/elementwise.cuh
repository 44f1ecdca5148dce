// Elementwise kernels: SwiGLU, residual add, bias add, casts. Grid-stride loops.
#pragma once

#include "kernels/cuda/types.cuh"

namespace ds::cuda {

template <typename T>
__global__ void swiglu_kernel(T* out, const T* gate, const T* up, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const float g = to_f(gate[i]);
    const float silu = __fdiv_rn(g, __fadd_rn(1.f, expf(-g)));
    out[i] = from_f<T>(__fmul_rn(silu, to_f(up[i])));
  }
}

template <typename T>
__global__ void add_kernel(T* y, const T* a, const T* b, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    y[i] = from_f<T>(__fadd_rn(to_f(a[i]), to_f(b[i])));
  }
}

template <typename T, typename TB>
__global__ void add_bias_kernel(T* y, const TB* bias, size_t total, int N) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    y[i] = from_f<T>(__fadd_rn(to_f(y[i]), to_f(bias[i % N])));
  }
}

template <typename TD, typename TS>
__global__ void cast_kernel(TD* dst, const TS* src, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    dst[i] = from_f<TD>(to_f(src[i]));
  }
}

}  // namespace ds::cuda
