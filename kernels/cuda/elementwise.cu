// Launchers of the elementwise ops (kernels/cuda/ops_cuda.h) and the storage-type helpers.
#include <algorithm>

#include "kernels/cuda/check.h"
#include "kernels/cuda/elementwise.cuh"

namespace ds::cuda {

size_t storage_bytes(Storage t) {
  return t == Storage::native ? 4 : 2;
}
const char* storage_name(Storage t) {
  return t == Storage::native ? "f32" : (t == Storage::f16 ? "f16" : "bf16");
}

namespace {
constexpr int kThreads = 256;
unsigned blocks_for(size_t n) {
  return static_cast<unsigned>(std::min<size_t>((n + kThreads - 1) / kThreads, 65535));
}
}  // namespace

void swiglu(void* out, const void* gate, const void* up, Storage t, size_t n, Stream stream) {
  if (n == 0) return;
  auto s = static_cast<cudaStream_t>(stream);
  DS_DISPATCH_STORAGE(t, T, {
    swiglu_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(
        static_cast<T*>(out), static_cast<const T*>(gate), static_cast<const T*>(up), n);
  });
  DS_LAUNCH_CHECK();
}

void add(void* y, const void* a, const void* b, Storage t, size_t n, Stream stream) {
  if (n == 0) return;
  auto s = static_cast<cudaStream_t>(stream);
  DS_DISPATCH_STORAGE(t, T, {
    add_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(static_cast<T*>(y), static_cast<const T*>(a),
                                                     static_cast<const T*>(b), n);
  });
  DS_LAUNCH_CHECK();
}

void add_bias(void* y, Storage t, const void* bias, Storage bias_t, int M, int N, Stream stream) {
  const size_t total = static_cast<size_t>(M) * N;
  if (total == 0) return;
  auto s = static_cast<cudaStream_t>(stream);
  DS_DISPATCH_STORAGE(t, T, DS_DISPATCH_STORAGE(bias_t, TB, {
                        add_bias_kernel<T, TB><<<blocks_for(total), kThreads, 0, s>>>(
                            static_cast<T*>(y), static_cast<const TB*>(bias), total, N);
                      }));
  DS_LAUNCH_CHECK();
}

void cast(void* dst, Storage dst_t, const void* src, Storage src_t, size_t n, Stream stream) {
  if (n == 0) return;
  auto s = static_cast<cudaStream_t>(stream);
  DS_DISPATCH_STORAGE(dst_t, TD, DS_DISPATCH_STORAGE(src_t, TS, {
                        cast_kernel<TD, TS><<<blocks_for(n), kThreads, 0, s>>>(
                            static_cast<TD*>(dst), static_cast<const TS*>(src), n);
                      }));
  DS_LAUNCH_CHECK();
}

}  // namespace ds::cuda
