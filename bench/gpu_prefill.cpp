// GPU prefill benchmark: tokens/s of one prompt's forward pass on the CUDA backend against the
// throughput cuBLASLt reaches on the same GEMM shapes, both measured in this run.
//
//   bench_gpu_prefill MODEL_DIR [--tokens 2048] [--dtype bf16|fp16|fp32|layercast]
//                     [--kernel gemm=cublas|tiled] [--reps R]
//
// ratio = (GEMM FLOPs of the prefill / prefill wall time) / (cuBLASLt FLOP/s on those shapes).
// The prefill's wall time includes everything Runtime::forward does, notably copying every
// logits row to the host (driftscope traces record logits at every position).
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "kernels/cuda/ops_cuda.h"
#include "src/experiment/run_config.h"
#include "src/model/model.h"

namespace {

std::string arg(int argc, char** argv, const std::string& name, const std::string& dflt) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (argv[i] == name) return argv[i + 1];
  }
  return dflt;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Shape {
  int N, K, count;  // count GEMMs of (M, N, K) per forward pass
};

// cuBLASLt throughput (FLOP/s) over the model's GEMM shapes at M rows, in storage type t.
double cublas_flops(const std::vector<Shape>& shapes, int M, ds::Storage t, bool tf32) {
  ds::cuda::CublasGemm gemm;
  size_t max_x = 0, max_w = 0, max_y = 0;
  for (const Shape& s : shapes) {
    max_x = std::max(max_x, static_cast<size_t>(M) * s.K);
    max_w = std::max(max_w, static_cast<size_t>(s.N) * s.K);
    max_y = std::max(max_y, static_cast<size_t>(M) * s.N);
  }
  const size_t eb = ds::cuda::storage_bytes(t);
  void *x = nullptr, *w = nullptr, *y = nullptr;
  cudaMalloc(&x, max_x * eb);
  cudaMalloc(&w, max_w * eb);
  cudaMalloc(&y, max_y * eb);
  cudaMemset(x, 0, max_x * eb);
  cudaMemset(w, 0, max_w * eb);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  double flops = 0, seconds = 0;
  for (const Shape& s : shapes) {
    ds::cuda::GemmArgs g;
    g.y = y;
    g.x = x;
    g.w = w;
    g.y_t = g.x_t = g.w_t = t;
    g.ldx = g.ldw = s.K;
    g.M = M;
    g.N = s.N;
    g.K = s.K;
    g.split_k = 0;
    gemm.run(g, tf32, nullptr);  // plan + warm-up
    std::vector<double> ms;
    for (int r = 0; r < 5; ++r) {
      cudaEventRecord(e0);
      gemm.run(g, tf32, nullptr);
      cudaEventRecord(e1);
      cudaEventSynchronize(e1);
      float t_ms = 0;
      cudaEventElapsedTime(&t_ms, e0, e1);
      ms.push_back(t_ms);
    }
    flops += 2.0 * M * s.N * s.K * s.count;
    seconds += median(ms) * 1e-3 * s.count;
  }
  cudaFree(x);
  cudaFree(w);
  cudaFree(y);
  return flops / seconds;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') {
    fmt::print(stderr,
               "usage: bench_gpu_prefill MODEL_DIR [--tokens N] [--dtype D] "
               "[--kernel gemm=cublas|tiled] [--reps R]\n");
    return 2;
  }
  const int tokens = std::stoi(arg(argc, argv, "--tokens", "2048"));
  const int reps = std::stoi(arg(argc, argv, "--reps", "3"));
  ds::RunConfig rc;
  rc.device = "cuda";
  rc.dtype = arg(argc, argv, "--dtype", "bf16");
  rc.kernel = arg(argc, argv, "--kernel", "gemm=cublas");
  try {
    ds::validate(rc);
    const ds::Model m = ds::load_model(argv[1]);
    const ds::ModelConfig& c = m.config;
    auto rt = ds::make_runtime(m, ds::numerics(rc), tokens);
    std::vector<int32_t> prompt(tokens);
    for (int i = 0; i < tokens; ++i) prompt[i] = (7 + 31 * i) % c.vocab_size;
    std::vector<double> logits, secs;
    rt->forward(prompt, 0, logits);  // warm-up
    for (int r = 0; r < reps; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      rt->forward(prompt, 0, logits);
      secs.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    const std::vector<Shape> shapes = {
        {c.q_dim(), c.dim, c.n_layers},    {c.kv_dim(), c.dim, 2 * c.n_layers},
        {c.dim, c.q_dim(), c.n_layers},    {c.hidden_dim, c.dim, 2 * c.n_layers},
        {c.dim, c.hidden_dim, c.n_layers}, {c.vocab_size, c.dim, 1}};
    double model_flops = 0;
    for (const Shape& s : shapes) model_flops += 2.0 * tokens * s.N * s.K * s.count;
    const ds::Storage t = rc.dtype == "fp16"   ? ds::Storage::f16
                          : rc.dtype == "bf16" ? ds::Storage::bf16
                                               : ds::Storage::native;
    const double peak = cublas_flops(shapes, tokens, t, rc.tf32 == "on");
    const double s = median(secs);
    fmt::print(
        "prefill {} tokens, {} {}: {:.3f} s = {:.0f} tokens/s, {:.1f} TFLOP/s of GEMM work\n",
        tokens, rc.dtype, rc.kernel, s, tokens / s, model_flops / s / 1e12);
    fmt::print("cuBLASLt on the same shapes ({}): {:.1f} TFLOP/s; ratio {:.2f}\n",
               ds::cuda::storage_name(t), peak / 1e12, model_flops / s / peak);
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_gpu_prefill: {}\n", e.what());
    return 2;
  }
  return 0;
}
