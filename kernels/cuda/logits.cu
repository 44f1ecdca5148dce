// Launcher of the logits row summary (kernels/cuda/ops_cuda.h).
#include "kernels/cuda/check.h"
#include "kernels/cuda/logits.cuh"

namespace ds::cuda {

void argmax_lse(int32_t* argmax, float* lse, const void* logits, Storage t, int rows, int vocab,
                Stream stream) {
  if (rows == 0) return;
  auto s = static_cast<cudaStream_t>(stream);
  DS_DISPATCH_STORAGE(t, T, {
    argmax_lse_kernel<T><<<rows, 256, 0, s>>>(argmax, lse, static_cast<const T*>(logits), vocab);
  });
  DS_LAUNCH_CHECK();
}

}  // namespace ds::cuda
