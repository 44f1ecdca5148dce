// Launcher of the tiled (FlashAttention-2 order) attention (kernels/cuda/ops_cuda.h).
#include "kernels/cuda/attention_tiled.cuh"
#include "kernels/cuda/check.h"

namespace ds::cuda {
namespace {

template <typename T, int HD>
void launch(const AttentionArgs& a, const AttentionTile* tiles, int n_tiles, cudaStream_t s) {
  constexpr int kBytes = (kTileRows + 2 * kTileKeys) * (HD + 8) * sizeof(T);
  static const bool raised = [] {  // above the default 48 KiB of shared memory (HD 128: 51 KiB)
    DS_CUDA_CHECK(cudaFuncSetAttribute(attention_tiled_kernel<T, HD>,
                                       cudaFuncAttributeMaxDynamicSharedMemorySize, kBytes));
    return true;
  }();
  (void)raised;
  attention_tiled_kernel<T, HD><<<dim3(n_tiles, a.n_heads), kTiledThreads, kBytes, s>>>(a, tiles);
  DS_LAUNCH_CHECK();
}

template <typename T>
void launch_head_dim(const AttentionArgs& a, const AttentionTile* tiles, int n_tiles,
                     cudaStream_t s) {
  switch (a.head_dim) {
    case 16:
      return launch<T, 16>(a, tiles, n_tiles, s);
    case 32:
      return launch<T, 32>(a, tiles, n_tiles, s);
    case 64:
      return launch<T, 64>(a, tiles, n_tiles, s);
    case 128:
      return launch<T, 128>(a, tiles, n_tiles, s);
    default:
      break;
  }
}

}  // namespace

bool attention_tiled_supports(Storage t, int head_dim) {
  return t != Storage::native &&
         (head_dim == 16 || head_dim == 32 || head_dim == 64 || head_dim == 128);
}

void attention_tiled(const AttentionArgs& a, const AttentionTile* tiles, int n_tiles,
                     Stream stream) {
  if (n_tiles == 0) return;
  if (!attention_tiled_supports(a.out.t, a.head_dim) || a.num.accum_f16) {
    throw Error(
        "CUDA tiled attention runs fp16 and bf16 with fp32 accumulation and head_dim 16, "
        "32, 64 or 128 (got " +
            std::string(storage_name(a.out.t)) + ", head_dim " + std::to_string(a.head_dim) +
            (a.num.accum_f16 ? ", fp16 accumulation)" : ")"),
        "use --kernel attention=rowwise");
  }
  if (a.n_kv_heads <= 0 || a.n_heads % a.n_kv_heads != 0 || a.n_heads > 65535) {
    throw Error("CUDA tiled attention: bad head counts");
  }
  auto s = static_cast<cudaStream_t>(stream);
  if (a.out.t == Storage::bf16) {
    launch_head_dim<__nv_bfloat16>(a, tiles, n_tiles, s);
  } else {
    launch_head_dim<__half>(a, tiles, n_tiles, s);
  }
}

}  // namespace ds::cuda
