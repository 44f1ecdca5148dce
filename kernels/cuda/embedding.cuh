// Embedding gather kernel: one block per row.
#pragma once

#include "kernels/cuda/types.cuh"

namespace ds::cuda {

template <typename TO, typename TT>
__global__ void embedding_kernel(TO* out, const TT* table, const int32_t* ids, int dim) {
  const int r = blockIdx.x;
  const TT* src = table + static_cast<size_t>(ids[r]) * dim;
  TO* dst = out + static_cast<size_t>(r) * dim;
  for (int i = threadIdx.x; i < dim; i += blockDim.x) dst[i] = from_f<TO>(to_f(src[i]));
}

}  // namespace ds::cuda
