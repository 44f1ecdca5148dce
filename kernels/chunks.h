// How every reduction in driftscope is cut into chunks (split-K GEMMs, split-KV attention), on the
// CPU and on CUDA alike: n items in `splits` contiguous chunks whose sizes differ by at most one,
// the larger first (kernels/ops.h documents the orders built on it).
#pragma once

#if defined(__CUDACC__)
#define DS_HOST_DEVICE __host__ __device__
#else
#define DS_HOST_DEVICE
#endif

namespace ds {

struct Chunk {
  int begin, end;  // items [begin, end)
};

// Chunk c (0 <= c < splits) of n items.
DS_HOST_DEVICE inline Chunk chunk_of(int n, int splits, int c) {
  const int base = n / splits, extra = n % splits;
  const int begin = c * base + (c < extra ? c : extra);
  return {begin, begin + base + (c < extra ? 1 : 0)};
}

}  // namespace ds
