// Launcher of RMSNorm (kernels/cuda/ops_cuda.h).
#include "kernels/cuda/check.h"
#include "kernels/cuda/rmsnorm.cuh"

namespace ds::cuda {

void rmsnorm(void* y, const void* x, Storage t, const void* w, Storage w_t, int rows, int dim,
             float eps, Stream stream) {
  if (rows == 0) return;
  auto s = static_cast<cudaStream_t>(stream);
  const int threads = dim >= 1024 ? 1024 : ((dim + 31) / 32) * 32;
  DS_DISPATCH_STORAGE(t, T, DS_DISPATCH_STORAGE(w_t, TW, {
                        rmsnorm_kernel<T, TW>
                            <<<rows, threads, 0, s>>>(static_cast<T*>(y), static_cast<const T*>(x),
                                                      static_cast<const TW*>(w), dim, eps);
                      }));
  DS_LAUNCH_CHECK();
}

}  // namespace ds::cuda
