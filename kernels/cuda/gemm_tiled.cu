// Launcher of the own tiled GEMM (kernels/cuda/ops_cuda.h).
#include <algorithm>

#include "kernels/cuda/check.h"
#include "kernels/cuda/gemm_tiled.cuh"

namespace ds::cuda {
namespace {

int effective_splits(const GemmArgs& g) {
  return std::clamp(g.num.split, 1, std::max(1, g.K));
}

template <typename TY, typename TX, typename TW, bool kF16Acc>
void launch(const GemmArgs& g, float* ws, cudaStream_t s) {
  const int splits = effective_splits(g);
  const dim3 grid((g.N + kTileN - 1) / kTileN, (g.M + kTileM - 1) / kTileM, splits);
  auto* y = static_cast<TY*>(g.y.p);
  auto* bias = static_cast<const TW*>(g.bias.p);
  gemm_tiled_kernel<TY, TX, TW, kF16Acc><<<grid, kTileThreads, 0, s>>>(
      y, static_cast<const TX*>(g.x.p), g.ldx, static_cast<const TW*>(g.w.p) + g.w_col, g.ldw, bias,
      g.M, g.N, g.K, splits, ws);
  DS_LAUNCH_CHECK();
  if (splits > 1) {
    const size_t mn = static_cast<size_t>(g.M) * g.N;
    const unsigned blocks = static_cast<unsigned>(std::min<size_t>((mn + 255) / 256, 65535));
    gemm_splitk_reduce_kernel<TY, TW, kF16Acc>
        <<<blocks, 256, 0, s>>>(y, ws, bias, g.M, g.N, splits);
    DS_LAUNCH_CHECK();
  }
}

}  // namespace

size_t gemm_tiled_workspace_floats(const GemmArgs& g) {
  const int splits = effective_splits(g);
  return splits > 1 ? static_cast<size_t>(splits) * g.M * g.N : 0;
}

void gemm_tiled(const GemmArgs& g, float* workspace, Stream stream) {
  if (g.M == 0 || g.N == 0) return;
  if (effective_splits(g) > 1 && workspace == nullptr) {
    throw Error("CUDA tiled GEMM: split-K needs a workspace");
  }
  auto s = static_cast<cudaStream_t>(stream);
  if (g.y.t != g.x.t) throw Error("CUDA tiled GEMM: output and input storage types must match");
  DS_DISPATCH_STORAGE(g.x.t, TX, DS_DISPATCH_STORAGE(g.w.t, TW, {
                        if (g.num.accum_f16) {
                          launch<TX, TX, TW, true>(g, workspace, s);
                        } else {
                          launch<TX, TX, TW, false>(g, workspace, s);
                        }
                      }));
}

}  // namespace ds::cuda
