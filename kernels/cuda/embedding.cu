// Launcher of the embedding gather (kernels/cuda/ops_cuda.h).
#include "kernels/cuda/check.h"
#include "kernels/cuda/embedding.cuh"

namespace ds::cuda {

void embedding(void* out, Storage out_t, const void* table, Storage table_t, const int32_t* ids,
               int n, int dim, Stream stream) {
  if (n == 0) return;
  auto s = static_cast<cudaStream_t>(stream);
  DS_DISPATCH_STORAGE(out_t, TO, DS_DISPATCH_STORAGE(table_t, TT, {
                        embedding_kernel<TO, TT><<<n, 256, 0, s>>>(
                            static_cast<TO*>(out), static_cast<const TT*>(table), ids, dim);
                      }));
  DS_LAUNCH_CHECK();
}

}  // namespace ds::cuda
