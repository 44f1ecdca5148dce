// The KV-cache append of a pass: each row's key and value copied to its slot and position.
#pragma once

#include "kernels/cuda/types.cuh"

namespace ds::cuda {

// grid (rows): block r copies row r's kv_dim values of k and v.
template <typename T>
__global__ void kv_append_kernel(T* k_cache, T* v_cache, const T* k, const T* v,
                                 const int* row_slot, const int* positions, size_t slot_stride,
                                 int kv_dim) {
  const int r = blockIdx.x;
  const size_t at =
      static_cast<size_t>(row_slot[r]) * slot_stride + static_cast<size_t>(positions[r]) * kv_dim;
  const size_t from = static_cast<size_t>(r) * kv_dim;
  for (int i = threadIdx.x; i < kv_dim; i += blockDim.x) {
    k_cache[at + i] = k[from + i];
    v_cache[at + i] = v[from + i];
  }
}

}  // namespace ds::cuda
