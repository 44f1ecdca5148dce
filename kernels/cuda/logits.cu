// Launchers of the logits row kernels (kernels/cuda/ops_cuda.h).
#include <algorithm>
#include <string>

#include "kernels/cuda/check.h"
#include "kernels/cuda/logits.cuh"

namespace ds::cuda {

void logits_argmax(int32_t* lowest, int32_t* highest, const void* logits, Storage t, int rows,
                   int vocab, Stream stream) {
  if (rows == 0) return;
  auto s = static_cast<cudaStream_t>(stream);
  DS_DISPATCH_STORAGE(t, T, {
    argmax_kernel<T><<<rows, 256, 0, s>>>(lowest, highest, static_cast<const T*>(logits), vocab);
  });
  DS_LAUNCH_CHECK();
}

void logits_topk(int32_t* ids, float* values, float* lse, const void* logits, Storage t, int rows,
                 int vocab, int k, Stream stream) {
  if (rows == 0) return;
  if (k < 1 || k > vocab || k > kLogitsTopkMax) {
    throw Error("CUDA logits_topk: k " + std::to_string(k) + " outside 1.." +
                std::to_string(std::min(vocab, kLogitsTopkMax)));
  }
  auto s = static_cast<cudaStream_t>(stream);
  DS_DISPATCH_STORAGE(t, T, {
    topk_kernel<T>
        <<<rows, kTopkThreads, 0, s>>>(ids, values, lse, static_cast<const T*>(logits), vocab, k);
  });
  DS_LAUNCH_CHECK();
}

}  // namespace ds::cuda
