// Launcher of RMSNorm (kernels/cuda/ops_cuda.h).
#include "kernels/cuda/check.h"
#include "kernels/cuda/rmsnorm.cuh"

namespace ds::cuda {

void rmsnorm(const RmsnormArgs& r, Stream stream) {
  if (r.rows == 0) return;
  if (r.x.t != r.y.t) throw Error("CUDA rmsnorm: x and y must have one storage type");
  auto s = static_cast<cudaStream_t>(stream);
  const int threads = r.dim >= 1024 ? 1024 : ((r.dim + 31) / 32) * 32;
  const float eps = static_cast<float>(r.eps);
  DS_DISPATCH_STORAGE(r.y.t, T, DS_DISPATCH_STORAGE(r.w.t, TW, {
                        rmsnorm_kernel<T, TW><<<r.rows, threads, 0, s>>>(
                            static_cast<T*>(r.y.p), static_cast<const T*>(r.x.p),
                            static_cast<const TW*>(r.w.p), r.dim, eps);
                      }));
  DS_LAUNCH_CHECK();
}

}  // namespace ds::cuda
