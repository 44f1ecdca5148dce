// Launcher of the KV-cache append (kernels/cuda/ops_cuda.h).
#include "kernels/cuda/check.h"
#include "kernels/cuda/kv_append.cuh"

namespace ds::cuda {

void kv_append(void* k_cache, void* v_cache, const void* k, const void* v, Storage t, int rows,
               const int* row_slot, const int* positions, size_t slot_stride, int kv_dim,
               Stream stream) {
  if (rows == 0) return;
  auto s = static_cast<cudaStream_t>(stream);
  DS_DISPATCH_STORAGE(t, T, {
    kv_append_kernel<T><<<rows, 256, 0, s>>>(static_cast<T*>(k_cache), static_cast<T*>(v_cache),
                                             static_cast<const T*>(k), static_cast<const T*>(v),
                                             row_slot, positions, slot_stride, kv_dim);
  });
  DS_LAUNCH_CHECK();
}

}  // namespace ds::cuda
