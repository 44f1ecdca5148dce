// Storage types of device buffers and their conversions. Every kernel loads its inputs as float,
// computes in float, and rounds to the output's storage type once, round to nearest even, where
// the CPU reference rounds (kernels/ops.h).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/cuda/ops_cuda.h"

namespace ds::cuda {

template <typename T>
__device__ __forceinline__ float to_f(T v);
template <>
__device__ __forceinline__ float to_f<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ float to_f<__half>(__half v) {
  return __half2float(v);
}
template <>
__device__ __forceinline__ float to_f<__nv_bfloat16>(__nv_bfloat16 v) {
  return __bfloat162float(v);
}

template <typename T>
__device__ __forceinline__ T from_f(float v);
template <>
__device__ __forceinline__ float from_f<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __half from_f<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

// v rounded to T's precision, as float.
template <typename T>
__device__ __forceinline__ float round_as(float v) {
  return to_f<T>(from_f<T>(v));
}

// a * b + c with two roundings (no FMA contraction), the order the CPU reference uses.
__device__ __forceinline__ float mul_add_rn(float a, float b, float c) {
  return __fadd_rn(c, __fmul_rn(a, b));
}

}  // namespace ds::cuda

// Runs the statement with `T` bound to the C++ type of storage type `dt`.
#define DS_DISPATCH_STORAGE(dt, T, ...) \
  switch (dt) {                         \
    case ::ds::Storage::native: {       \
      using T = float;                  \
      __VA_ARGS__;                      \
      break;                            \
    }                                   \
    case ::ds::Storage::f16: {          \
      using T = __half;                 \
      __VA_ARGS__;                      \
      break;                            \
    }                                   \
    case ::ds::Storage::bf16: {         \
      using T = __nv_bfloat16;          \
      __VA_ARGS__;                      \
      break;                            \
    }                                   \
  }

// Block-wide reductions over blockDim.x threads (a multiple of 32, at most 1024).
namespace ds::cuda {

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Every thread gets the block's sum (resp. max). `shared` holds 32 floats.
__device__ __forceinline__ float block_sum(float v, float* shared) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = warp_sum(v);
  __syncthreads();  // shared may still be read by a previous reduction
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  const int warps = (blockDim.x + 31) / 32;
  v = lane < warps ? shared[lane] : 0.f;
  return warp_sum(v);
}
__device__ __forceinline__ float block_max(float v, float* shared) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = warp_max(v);
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  const int warps = (blockDim.x + 31) / 32;
  v = lane < warps ? shared[lane] : -INFINITY;
  return warp_max(v);
}

}  // namespace ds::cuda
