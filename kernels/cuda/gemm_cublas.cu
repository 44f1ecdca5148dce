// GEMMs through cuBLASLt (kernels/cuda/ops_cuda.h CublasGemm). Row-major y = x w^T is computed as
// the column-major product y^T (N x M) = w (K x N)^T * x^T (K x M), so no data is transposed.
// Plans (descriptors, layouts, the chosen algorithm) are cached per shape, types and knobs.
#include <cuda_fp16.h>

#include <map>
#include <string>
#include <tuple>
#include <utility>

#include "kernels/cuda/check.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/cuda/ops_cuda.h"

namespace ds::cuda {
namespace {

cudaDataType_t cuda_type(Storage t) {
  switch (t) {
    case Storage::native:
      return CUDA_R_32F;
    case Storage::f16:
      return CUDA_R_16F;
    case Storage::bf16:
      return CUDA_R_16BF;
  }
  return CUDA_R_32F;
}

constexpr size_t kWorkspaceBytes = 32u << 20;

struct Plan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  bool half_scale = false;  // alpha/beta are __half (fp16 compute)
};

void destroy(Plan& p) {
  if (p.a != nullptr) cublasLtMatrixLayoutDestroy(p.a);
  if (p.b != nullptr) cublasLtMatrixLayoutDestroy(p.b);
  if (p.c != nullptr) cublasLtMatrixLayoutDestroy(p.c);
  if (p.op != nullptr) cublasLtMatmulDescDestroy(p.op);
  p = Plan{};
}

// The largest power of two (<= 256) that divides the address: cuBLASLt's heuristic assumes 256
// unless told, and tensor-parallel shards start at offsets inside a buffer.
uint32_t alignment(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  uint32_t al = 256;
  while (al > 1 && a % al != 0) al /= 2;
  return al;
}

using PlanKey =
    std::tuple<int, int, int, int, int, int, bool, bool, int, uint32_t, uint32_t, uint32_t>;

}  // namespace

struct CublasGemm::Impl {
  cublasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
  DeviceBuffer upcast;  // LayerCast: the weight in the activations' type, right before its GEMM
  std::map<PlanKey, Plan> plans;

  // g's weights at their column already (w.p), split-K as cuBLASLt takes it (0: its choice).
  Plan& plan(const GemmArgs& g, bool tf32) {
    const uint32_t align_w = alignment(g.w.p), align_x = alignment(g.x.p),
                   align_y = alignment(g.y.p);
    const PlanKey key{
        g.M,  g.N,         g.K,     g.ldx,   g.ldw,  static_cast<int>(g.x.t), g.num.accum_f16,
        tf32, g.num.split, align_w, align_x, align_y};
    auto it = plans.find(key);
    if (it != plans.end()) return it->second;
    Plan p;
    try {
      cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
      cudaDataType_t scale = CUDA_R_32F;
      if (g.num.accum_f16) {
        if (g.x.t != Storage::f16) {
          throw Error(
              "cuBLAS has no fp16 accumulation for " + std::string(storage_name(g.x.t)) + " GEMMs",
              "use --kernel gemm=tiled, whose fp16 accumulation works with every dtype");
        }
        compute = CUBLAS_COMPUTE_16F;
        scale = CUDA_R_16F;
        p.half_scale = true;
      } else if (g.x.t == Storage::native) {
        compute = tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
      }
      const cudaDataType_t t = cuda_type(g.x.t);
      DS_CUDA_CHECK(cublasLtMatmulDescCreate(&p.op, compute, scale));
      const cublasOperation_t trans = CUBLAS_OP_T, no_trans = CUBLAS_OP_N;
      DS_CUDA_CHECK(
          cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSA, &trans, sizeof(trans)));
      DS_CUDA_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSB, &no_trans,
                                                   sizeof(no_trans)));
      DS_CUDA_CHECK(cublasLtMatrixLayoutCreate(&p.a, t, g.K, g.N, g.ldw));  // w: K x N col-major
      DS_CUDA_CHECK(cublasLtMatrixLayoutCreate(&p.b, t, g.K, g.M, g.ldx));  // x^T: K x M col-major
      DS_CUDA_CHECK(cublasLtMatrixLayoutCreate(&p.c, t, g.N, g.M, g.N));    // y^T: N x M col-major

      cublasLtMatmulPreference_t pref = nullptr;
      DS_CUDA_CHECK(cublasLtMatmulPreferenceCreate(&pref));
      DS_CUDA_CHECK(
          cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                               &kWorkspaceBytes, sizeof(kWorkspaceBytes)));
      const std::pair<cublasLtMatmulPreferenceAttributes_t, uint32_t> aligns[] = {
          {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, align_w},
          {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, align_x},
          {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, align_y},
          {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, align_y}};
      for (const auto& [attr, value] : aligns) {
        DS_CUDA_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, attr, &value, sizeof(value)));
      }
      cublasLtMatmulHeuristicResult_t results[8] = {};
      int found = 0;
      const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(handle, p.op, p.a, p.b, p.c, p.c,
                                                               pref, 8, results, &found);
      cublasLtMatmulPreferenceDestroy(pref);
      if (st != CUBLAS_STATUS_SUCCESS || found == 0) {
        throw Error("cuBLASLt found no algorithm for a " + std::string(storage_name(g.x.t)) +
                        " GEMM of M=" + std::to_string(g.M) + " N=" + std::to_string(g.N) +
                        " K=" + std::to_string(g.K),
                    "use --kernel gemm=tiled");
      }
      bool chosen = false;
      for (int i = 0; i < found && !chosen; ++i) {
        p.algo = results[i].algo;
        if (g.num.split <= 0) {
          chosen = true;  // cuBLASLt's own choice, split-K included
          break;
        }
        const int32_t splits = g.num.split;
        const uint32_t scheme =
            splits > 1 ? CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE : CUBLASLT_REDUCTION_SCHEME_NONE;
        if (cublasLtMatmulAlgoConfigSetAttribute(&p.algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splits,
                                                 sizeof(splits)) != CUBLAS_STATUS_SUCCESS ||
            cublasLtMatmulAlgoConfigSetAttribute(&p.algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME,
                                                 &scheme,
                                                 sizeof(scheme)) != CUBLAS_STATUS_SUCCESS) {
          continue;
        }
        cublasLtMatmulHeuristicResult_t check{};
        chosen = cublasLtMatmulAlgoCheck(handle, p.op, p.a, p.b, p.c, p.c, &p.algo, &check) ==
                     CUBLAS_STATUS_SUCCESS &&
                 check.workspaceSize <= kWorkspaceBytes;
      }
      if (!chosen) {
        throw Error("cuBLASLt has no algorithm with split-K " + std::to_string(g.num.split) +
                        " for M=" + std::to_string(g.M) + " N=" + std::to_string(g.N) +
                        " K=" + std::to_string(g.K),
                    "use --split-k auto, or --kernel gemm=tiled (any split)");
      }
    } catch (...) {
      destroy(p);  // a shape cuBLASLt refuses leaves no descriptors behind
      throw;
    }
    return plans.emplace(key, p).first->second;
  }
};

CublasGemm::CublasGemm() : impl_(std::make_unique<Impl>()) {
  DS_CUDA_CHECK(cublasLtCreate(&impl_->handle));
  DS_CUDA_CHECK(cudaMalloc(&impl_->workspace, kWorkspaceBytes));
}

CublasGemm::~CublasGemm() {
  for (auto& [key, p] : impl_->plans) destroy(p);
  cudaFree(impl_->workspace);
  cublasLtDestroy(impl_->handle);
}

void CublasGemm::run(const GemmArgs& args, bool tf32, Stream stream) {
  if (args.M == 0 || args.N == 0) return;
  if (args.x.t != args.y.t) {
    throw Error("cuBLAS GEMM: x and y must have one storage type (got " +
                std::string(storage_name(args.x.t)) + ", " + storage_name(args.y.t) + ")");
  }
  GemmArgs g = args;
  g.w = args.w + args.w_col;  // the shard's first column; its rows keep their stride
  g.w_col = 0;
  if (g.w.t != g.x.t) {  // cuBLASLt takes one type: upcast the weight's N rows of ldw
    impl_->upcast.ensure((static_cast<size_t>(g.N - 1) * g.ldw + g.K) * storage_bytes(g.x.t));
    upcast_rows(impl_->upcast.get(), g.x.t, g.w.p, g.w.t, g.N, g.K, g.ldw, stream);
    g.w = {impl_->upcast.get(), g.x.t};  // the bias keeps its type: add_bias widens it exactly
  }
  Plan& p = impl_->plan(g, tf32);
  const float one = 1.f, zero = 0.f;
  const __half h_one = __float2half(1.f), h_zero = __float2half(0.f);
  const void* alpha = p.half_scale ? static_cast<const void*>(&h_one) : &one;
  const void* beta = p.half_scale ? static_cast<const void*>(&h_zero) : &zero;
  DS_CUDA_CHECK(cublasLtMatmul(impl_->handle, p.op, alpha, g.w.p, p.a, g.x.p, p.b, beta, g.y.p, p.c,
                               g.y.p, p.c, &p.algo, impl_->workspace, kWorkspaceBytes,
                               static_cast<cudaStream_t>(stream)));
  if (g.bias.p != nullptr) add_bias(g.y.p, g.y.t, g.bias.p, g.bias.t, g.M, g.N, stream);
}

std::string CublasGemm::version() {
  return "cuBLASLt " + std::to_string(cublasLtGetVersion());
}

}  // namespace ds::cuda
