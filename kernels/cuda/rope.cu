// Launcher of the rotary embedding (kernels/cuda/ops_cuda.h).
#include "kernels/cuda/check.h"
#include "kernels/cuda/rope.cuh"

namespace ds::cuda {

void rope(const RopeArgs& r, Stream stream) {
  const size_t total = static_cast<size_t>(r.rows) * r.n_heads * (r.head_dim / 2);
  if (total == 0) return;
  const int threads = 256;
  const unsigned blocks = static_cast<unsigned>((total + threads - 1) / threads);
  auto s = static_cast<cudaStream_t>(stream);
  DS_DISPATCH_STORAGE(r.x.t, T, {
    rope_kernel<T><<<blocks, threads, 0, s>>>(static_cast<T*>(r.x.p), r.rows, r.n_heads, r.head_dim,
                                              r.positions, r.cos, r.sin);
  });
  DS_LAUNCH_CHECK();
}

}  // namespace ds::cuda
