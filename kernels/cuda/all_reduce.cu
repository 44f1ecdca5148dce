// The tensor-parallel all-reduce on one device (kernels/cuda/ops_cuda.h all_reduce): the CPU
// reference's ring and tree orders (kernels/cpu/ops_cpu.cpp), each addition by the add kernel,
// rounded to the storage type.
#include "kernels/cuda/check.h"
#include "kernels/cuda/ops_cuda.h"

namespace ds::cuda {

void all_reduce(void* y, void* parts, Storage t, int tp, size_t n, ops::AllReduce order,
                Stream stream) {
  auto s = static_cast<cudaStream_t>(stream);
  const size_t bytes = n * storage_bytes(t);
  auto part = [&](int i) { return static_cast<unsigned char*>(parts) + i * bytes; };
  if (order == ops::AllReduce::ring || tp <= 1) {
    DS_CUDA_CHECK(cudaMemcpyAsync(y, part(0), bytes, cudaMemcpyDeviceToDevice, s));
    for (int i = 1; i < tp; ++i) add(y, y, part(i), t, n, stream);
    return;
  }
  // tree: neighbours level by level; an odd one out moves up unchanged
  for (int width = tp; width > 1; width = (width + 1) / 2) {
    for (int i = 0; 2 * i + 1 < width; ++i)
      add(part(i), part(2 * i), part(2 * i + 1), t, n, stream);
    if (width % 2 == 1) {
      DS_CUDA_CHECK(
          cudaMemcpyAsync(part(width / 2), part(width - 1), bytes, cudaMemcpyDeviceToDevice, s));
    }
  }
  DS_CUDA_CHECK(cudaMemcpyAsync(y, part(0), bytes, cudaMemcpyDeviceToDevice, s));
}

void upcast_rows(void* dst, Storage dst_t, const void* w, Storage w_t, int rows, int cols, int ld,
                 Stream stream) {
  if (rows <= 0 || cols <= 0) return;
  cast(dst, dst_t, w, w_t, static_cast<size_t>(rows - 1) * ld + cols, stream);
}

}  // namespace ds::cuda
