// Launcher of attention (kernels/cuda/ops_cuda.h): the chunk kernel, then the merge when split.
#include <algorithm>

#include "kernels/cuda/attention.cuh"
#include "kernels/cuda/check.h"

namespace ds::cuda {

size_t attention_scratch_floats(const AttentionArgs& a) {
  const size_t rh = static_cast<size_t>(a.rows) * a.n_heads;
  const size_t splits = static_cast<size_t>(std::max(1, a.num.split));
  return rh * a.max_keys + (splits > 1 ? rh * splits * (a.head_dim + 2) : 0);
}

void attention(const AttentionArgs& a, float* scratch, Stream stream) {
  if (a.rows == 0) return;
  if (a.n_kv_heads <= 0 || a.n_heads % a.n_kv_heads != 0 || a.max_keys <= 0) {
    throw Error("CUDA attention: bad head counts or key bound");
  }
  AttentionArgs args = a;
  args.num.split = std::max(1, a.num.split);
  auto s = static_cast<cudaStream_t>(stream);
  if (args.num.split > 65535 || args.n_heads > 65535)
    throw Error("CUDA attention: too many heads or splits");
  const dim3 grid(args.rows, args.n_heads, args.num.split);
  const int threads = 128;
  DS_DISPATCH_STORAGE(a.out.t, T, {
    if (args.num.accum_f16) {
      attention_chunk_kernel<T, true><<<grid, threads, 0, s>>>(args, scratch);
    } else {
      attention_chunk_kernel<T, false><<<grid, threads, 0, s>>>(args, scratch);
    }
    DS_LAUNCH_CHECK();
    if (args.num.split > 1) {
      attention_merge_kernel<T><<<dim3(args.rows, args.n_heads), threads, 0, s>>>(args, scratch);
      DS_LAUNCH_CHECK();
    }
  });
}

}  // namespace ds::cuda
