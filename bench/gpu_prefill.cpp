// GPU prefill benchmark: tokens/s of one prompt's forward pass on the CUDA backend against the
// throughput cuBLASLt reaches on the same GEMM shapes, both measured in this run, for each
// attention kernel asked for.
//
//   bench_gpu_prefill MODEL_DIR [--tokens 2048] [--dtype bf16|fp16|fp32|layercast]
//                     [--kernels gemm=cublas;gemm=cublas,attention=tiled] [--reps R]
//                     [--profile] [--json FILE]
//
// ratio = (GEMM FLOPs of the prefill / prefill wall time) / (cuBLASLt FLOP/s on those shapes).
// The wall time is what generation pays for a prompt: Runtime::forward, the greedy token of the
// last row to the host (the logits stay on the device). --profile runs one more pass per kernel
// choice with DRIFTSCOPE_CUDA_OP_TIMES=1, whose per-op device times go to stderr.
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "kernels/cuda/check.h"
#include "kernels/cuda/device_buffer.h"
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
bool flag(int argc, char** argv, const std::string& name) {
  for (int i = 1; i < argc; ++i) {
    if (argv[i] == name) return true;
  }
  return false;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;  // reps 0: a warm-up only
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Shape {
  int N, K, count;  // count GEMMs of (M, N, K) per forward pass
};

// n random values in [-1, 1) stored as t on the device (never zeros: METHOD.md's habit).
void fill_random(void* dst, size_t n, ds::Storage t, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  std::vector<float> host(std::min<size_t>(n, size_t{1} << 24));
  for (float& x : host) x = d(rng);
  const size_t eb = ds::cuda::storage_bytes(t);
  for (size_t i = 0; i < n; i += host.size()) {  // the same random block repeated
    const size_t m = std::min(host.size(), n - i);
    ds::cuda::upload(static_cast<unsigned char*>(dst) + i * eb, host.data(), m, t);
  }
}

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
  ds::cuda::DeviceBuffer x(max_x * eb), w(max_w * eb), y(max_y * eb);
  fill_random(x.get(), max_x, t, 1);
  fill_random(w.get(), max_w, t, 2);
  cudaEvent_t e0, e1;
  DS_CUDA_CHECK(cudaEventCreate(&e0));
  DS_CUDA_CHECK(cudaEventCreate(&e1));
  double flops = 0, seconds = 0;
  for (const Shape& s : shapes) {
    ds::cuda::GemmArgs g{{y.get(), t}, {x.get(), t}, {w.get(), t}, {nullptr, t}, M,
                         s.N,          s.K,          s.K,          s.K};
    g.num.split = 0;             // cuBLASLt's own choice
    gemm.run(g, tf32, nullptr);  // plan + warm-up
    std::vector<double> ms;
    for (int r = 0; r < 5; ++r) {
      DS_CUDA_CHECK(cudaEventRecord(e0));
      gemm.run(g, tf32, nullptr);
      DS_CUDA_CHECK(cudaEventRecord(e1));
      DS_CUDA_CHECK(cudaEventSynchronize(e1));
      float t_ms = 0;
      DS_CUDA_CHECK(cudaEventElapsedTime(&t_ms, e0, e1));
      ms.push_back(t_ms);
    }
    flops += 2.0 * M * s.N * s.K * s.count;
    seconds += median(ms) * 1e-3 * s.count;
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  return flops / seconds;
}

// Seconds of one prefill pass of `prompt`, as generation runs it (median of reps, after one
// warm-up).
double prefill_seconds(ds::Runtime& rt, const std::vector<ds::BatchRow>& rows, int reps) {
  std::vector<double> secs;
  for (int r = 0; r <= reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    ds::PassLogits& out = rt.forward(rows);
    volatile int32_t next = out.argmax(out.rows() - 1, false);  // what sampling reads
    (void)next;
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r > 0) secs.push_back(s);
  }
  return median(secs);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at <= s.size()) {
    const size_t e = std::min(s.find(sep, at), s.size());
    out.push_back(s.substr(at, e - at));
    at = e + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') {
    fmt::print(stderr,
               "usage: bench_gpu_prefill MODEL_DIR [--tokens N] [--dtype D] "
               "[--kernels K1;K2] [--reps R] [--profile] [--json FILE]\n");
    return 2;
  }
  const int tokens = std::stoi(arg(argc, argv, "--tokens", "2048"));
  const int reps = std::stoi(arg(argc, argv, "--reps", "3"));
  const std::string dtype = arg(argc, argv, "--dtype", "bf16");
  const std::vector<std::string> kernels =
      split(arg(argc, argv, "--kernels", "gemm=cublas;gemm=cublas,attention=tiled"), ';');
  const std::string json_path = arg(argc, argv, "--json", "");
  try {
    const ds::Model m = ds::load_model(argv[1]);
    const ds::ModelConfig& c = m.config;
    std::vector<ds::BatchRow> rows(tokens);
    for (int i = 0; i < tokens; ++i) rows[i] = {0, i, (7 + 31 * i) % c.vocab_size};
    const std::vector<Shape> shapes = {
        {c.q_dim(), c.dim, c.n_layers},    {c.kv_dim(), c.dim, 2 * c.n_layers},
        {c.dim, c.q_dim(), c.n_layers},    {c.hidden_dim, c.dim, 2 * c.n_layers},
        {c.dim, c.hidden_dim, c.n_layers}, {c.vocab_size, c.dim, 1}};
    double model_flops = 0;
    for (const Shape& s : shapes) model_flops += 2.0 * tokens * s.N * s.K * s.count;
    ds::RunConfig precision;
    ds::set_field(precision, "dtype", dtype);
    const ds::Storage t = ds::activation_storage(precision.dtype);
    const double peak = cublas_flops(shapes, tokens, t, false);
    fmt::print(
        "cuBLASLt alone on the prefill's GEMM shapes ({}, M = {}, random data): {:.1f} "
        "TFLOP/s\n",
        ds::cuda::storage_name(t), tokens, peak / 1e12);
    std::string json = fmt::format(
        "{{\"tokens\": {}, \"dtype\": \"{}\", \"gemm_flops\": {:.6e}, \"cublaslt_flops_per_s\": "
        "{:.6e}, \"runs\": [",
        tokens, dtype, model_flops, peak);
    for (size_t i = 0; i < kernels.size(); ++i) {
      ds::RunConfig rc;
      rc.device = ds::Device::cuda;
      ds::set_field(rc, "dtype", dtype);
      ds::set_field(rc, "kernel", kernels[i]);
      ds::validate(rc);
      double s = 0;
      {
        auto rt = ds::make_runtime(m, ds::numerics(rc), tokens);
        s = prefill_seconds(*rt, rows, reps);
      }
      const double ratio = model_flops / s / peak;
      fmt::print(
          "prefill {} tokens, {} --kernel {}: {:.4f} s = {:.0f} tokens/s, {:.1f} TFLOP/s "
          "of GEMM work = {:.3f} of cuBLASLt\n",
          tokens, dtype, kernels[i], s, tokens / s, model_flops / s / 1e12, ratio);
      json += fmt::format(
          "{}{{\"kernel\": \"{}\", \"seconds\": {:.6f}, \"tok_s\": {:.1f}, "
          "\"fraction_of_cublaslt\": {:.4f}}}",
          i ? ", " : "", kernels[i], s, tokens / s, ratio);
      if (flag(argc, argv, "--profile")) {  // per-op device times of one more pass, to stderr
        setenv("DRIFTSCOPE_CUDA_OP_TIMES", "1", 1);
        fmt::print(stderr, "profile of --kernel {} (a warm-up pass and one more, both counted):\n",
                   kernels[i]);
        {
          auto rt = ds::make_runtime(m, ds::numerics(rc), tokens);
          prefill_seconds(*rt, rows, 0);
          rt->forward(rows);
        }
        unsetenv("DRIFTSCOPE_CUDA_OP_TIMES");
      }
    }
    json += "]}\n";
    if (!json_path.empty()) std::ofstream(json_path) << json;
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_gpu_prefill: {}\n", e.what());
    return 2;
  }
  return 0;
}
