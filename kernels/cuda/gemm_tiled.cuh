// The own tiled GEMM y = x w^T with explicit split-K: 64x64 output tiles, 16-deep K slices in
// shared memory, 4x4 outputs per thread. Each output sums its chunk's k in increasing order with
// separate multiply and add roundings (the CPU reference's order), so results are reproducible
// for any M and tile position: a batch-invariant kernel.
#pragma once

#include "kernels/chunks.h"
#include "kernels/cuda/types.cuh"

namespace ds::cuda {

constexpr int kTileM = 64, kTileN = 64, kTileK = 16, kTileThreads = 256;

template <bool kF16Acc>
__device__ __forceinline__ float acc_step(float acc, float x, float w) {
  const float s = mul_add_rn(x, w, acc);
  return kF16Acc ? round_as<__half>(s) : s;
}

// grid (ceil(N/64), ceil(M/64), splits). splits == 1: writes y (+ bias, rounded to TY);
// else writes the chunk's fp32 partial to ws[chunk][M][N].
template <typename TY, typename TX, typename TW, bool kF16Acc>
__global__ void __launch_bounds__(kTileThreads)
    gemm_tiled_kernel(TY* y, const TX* x, int ldx, const TW* w, int ldw, const TW* bias, int M,
                      int N, int K, int splits, float* ws) {
  __shared__ float xs[kTileK][kTileM + 4];
  __shared__ float wsh[kTileK][kTileN + 4];
  const int tid = threadIdx.x;
  const int tx = tid % 16, ty = tid / 16;
  const int m_base = blockIdx.y * kTileM, n_base = blockIdx.x * kTileN;
  const Chunk chunk = chunk_of(K, splits, blockIdx.z);  // the CPU reference's chunks (chunks.h)
  const int k0 = chunk.begin, k1 = chunk.end;

  float acc[4][4] = {};
  for (int kt = k0; kt < k1; kt += kTileK) {
    // load 64 x 16 of x and of w: 1024 values each, 4 per thread, k fastest for coalescing
    for (int i = tid; i < kTileM * kTileK; i += kTileThreads) {
      const int mm = i / kTileK, kk = i % kTileK;
      const int m = m_base + mm, n = n_base + mm, k = kt + kk;
      const bool k_ok = k < k1;
      xs[kk][mm] = (m < M && k_ok) ? to_f(x[static_cast<size_t>(m) * ldx + k]) : 0.f;
      wsh[kk][mm] = (n < N && k_ok) ? to_f(w[static_cast<size_t>(n) * ldw + k]) : 0.f;
    }
    __syncthreads();
    const int k_steps = min(kTileK, k1 - kt);  // no padded steps: acc + 0 * 0 would turn -0 into +0
    for (int kk = 0; kk < k_steps; ++kk) {
      float xv[4], wv[4];
      for (int i = 0; i < 4; ++i) xv[i] = xs[kk][ty + 16 * i];
      for (int j = 0; j < 4; ++j) wv[j] = wsh[kk][tx + 16 * j];
      for (int i = 0; i < 4; ++i) {
        for (int j = 0; j < 4; ++j) acc[i][j] = acc_step<kF16Acc>(acc[i][j], xv[i], wv[j]);
      }
    }
    __syncthreads();
  }
  for (int i = 0; i < 4; ++i) {
    const int m = m_base + ty + 16 * i;
    if (m >= M) continue;
    for (int j = 0; j < 4; ++j) {
      const int n = n_base + tx + 16 * j;
      if (n >= N) continue;
      if (splits == 1) {
        const float v = bias != nullptr ? __fadd_rn(acc[i][j], to_f(bias[n])) : acc[i][j];
        y[static_cast<size_t>(m) * N + n] = from_f<TY>(v);
      } else {
        ws[(static_cast<size_t>(blockIdx.z) * M + m) * N + n] = acc[i][j];
      }
    }
  }
}

// Adds the chunk partials in chunk order (in the accumulator's precision), then the bias.
template <typename TY, typename TW, bool kF16Acc>
__global__ void gemm_splitk_reduce_kernel(TY* y, const float* ws, const TW* bias, int M, int N,
                                          int splits) {
  const size_t mn = static_cast<size_t>(M) * N;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < mn;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    float acc = ws[i];
    for (int c = 1; c < splits; ++c) {
      acc = __fadd_rn(acc, ws[c * mn + i]);
      if (kF16Acc) acc = round_as<__half>(acc);
    }
    if (bias != nullptr) acc = __fadd_rn(acc, to_f(bias[i % N]));
    y[i] = from_f<TY>(acc);
  }
}

}  // namespace ds::cuda
