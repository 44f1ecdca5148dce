// Launcher of the rotary embedding (kernels/cuda/ops_cuda.h).
#include "kernels/cuda/check.h"
#include "kernels/cuda/rope.cuh"

namespace ds::cuda {

void rope(void* x, Storage t, int rows, int n_heads, int head_dim, const int* positions,
          const float* cos, const float* sin, Stream stream) {
  const size_t total = static_cast<size_t>(rows) * n_heads * (head_dim / 2);
  if (total == 0) return;
  const int threads = 256;
  const unsigned blocks = static_cast<unsigned>((total + threads - 1) / threads);
  auto s = static_cast<cudaStream_t>(stream);
  DS_DISPATCH_STORAGE(t, T, {
    rope_kernel<T><<<blocks, threads, 0, s>>>(static_cast<T*>(x), rows, n_heads, head_dim,
                                              positions, cos, sin);
  });
  DS_LAUNCH_CHECK();
}

}  // namespace ds::cuda
