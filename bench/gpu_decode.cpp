// GPU decode benchmark: tokens/s of greedy decoding on the CUDA backend as a fraction of the
// memory-bandwidth limit, measured in the same run, untraced and traced (default probes, and all
// probes with bf16 hidden states), interleaved so that drift of the machine hits all alike.
//
//   bench_gpu_decode MODEL_DIR [--batch B] [--dtype bf16|layercast|fp16|fp32] [--tokens N]
//                    [--kernel gemm=cublas|tiled] [--reps R]
//
// limit (tokens/s) = B / (bytes read per decode step / DRAM bandwidth), where the bytes are every
// weight matrix in its storage type (the embedding table only when it is also the lm_head; a
// decode step gathers B rows of it otherwise) plus the KV cache read at the mean position, and
// the bandwidth is 2 x bytes / time of a 1 GiB device-to-device cudaMemcpy (read + write).
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "kernels/cuda/check.h"
#include "src/experiment/generate.h"
#include "src/experiment/run_config.h"
#include "src/experiment/trace_recorder.h"
#include "src/model/model.h"
#include "trace/writer.h"

namespace fs = std::filesystem;

namespace {

// DRAM bandwidth from a device-to-device copy: 2 x bytes (read + write) / median time.
double copy_bandwidth() {
  const size_t bytes = size_t{1} << 30;
  void *a = nullptr, *b = nullptr;
  DS_CUDA_CHECK(cudaMalloc(&a, bytes));
  DS_CUDA_CHECK(cudaMalloc(&b, bytes));
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  std::vector<float> ms;
  for (int i = 0; i < 11; ++i) {
    cudaEventRecord(e0);
    DS_CUDA_CHECK(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice));
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float t = 0;
    cudaEventElapsedTime(&t, e0, e1);
    if (i > 0) ms.push_back(t);
  }
  cudaFree(a);
  cudaFree(b);
  std::sort(ms.begin(), ms.end());
  return 2.0 * bytes / (ms[ms.size() / 2] * 1e-3);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::string arg(int argc, char** argv, const std::string& name, const std::string& dflt) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (argv[i] == name) return argv[i + 1];
  }
  return dflt;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') {
    fmt::print(stderr,
               "usage: bench_gpu_decode MODEL_DIR [--batch B] [--dtype D] [--tokens N] "
               "[--kernel gemm=cublas|tiled] [--reps R]\n");
    return 2;
  }
  const int batch = std::stoi(arg(argc, argv, "--batch", "1"));
  const int tokens = std::stoi(arg(argc, argv, "--tokens", "128"));
  const int reps = std::stoi(arg(argc, argv, "--reps", "3"));
  ds::RunConfig rc;
  rc.device = "cuda";
  rc.dtype = arg(argc, argv, "--dtype", "bf16");
  rc.kernel = arg(argc, argv, "--kernel", "gemm=cublas");
  rc.max_new = tokens;
  try {
    ds::validate(rc);
    const auto t_load = std::chrono::steady_clock::now();
    const ds::Model m = ds::load_model(argv[1]);
    const ds::ModelConfig& c = m.config;
    const int prompt_len = 16;
    const int capacity = prompt_len + tokens + 1;
    auto rt = ds::make_runtime(m, ds::numerics(rc), capacity, batch);
    fmt::print("model {} ({} layers, dim {}), loaded and uploaded in {:.1f} s\n", argv[1],
               c.n_layers, c.dim,
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t_load).count());

    const double wbytes = rc.dtype == "fp32" ? 4 : 2;  // layercast stores bf16 weights
    const double abytes = rc.dtype == "fp32" || rc.dtype == "layercast" ? 4 : 2;
    double weight_elems = static_cast<double>(m.weights.final_norm.size());
    for (const auto& l : m.weights.layers) {
      weight_elems += l.attn_norm.size() + l.wq.size() + l.wk.size() + l.wv.size() + l.bq.size() +
                      l.bk.size() + l.bv.size() + l.wo.size() + l.mlp_norm.size() +
                      l.w_gate.size() + l.w_up.size() + l.w_down.size();
    }
    weight_elems += m.classifier().size();  // lm_head (or the tied embedding) is read whole
    const double mean_pos = prompt_len + tokens / 2.0;
    const double kv_bytes = 2.0 * c.n_layers * mean_pos * c.kv_dim() * abytes * batch;
    const double step_bytes = weight_elems * wbytes + kv_bytes;
    const double bw = copy_bandwidth();
    const double limit = batch / (step_bytes / bw);
    fmt::print(
        "device-to-device copy bandwidth {:.0f} GB/s; bytes per decode step {:.2f} GB "
        "(weights {:.2f}, KV {:.3f}); limit {:.1f} tokens/s at batch {}\n",
        bw / 1e9, step_bytes / 1e9, weight_elems * wbytes / 1e9, kv_bytes / 1e9, limit, batch);

    std::vector<ds::SequenceRequest> reqs;
    for (int b = 0; b < batch; ++b) {
      std::vector<int32_t> p(prompt_len);
      for (int i = 0; i < prompt_len; ++i) p[i] = (7 + 31 * i + 101 * b) % c.vocab_size;
      reqs.push_back({p, static_cast<uint64_t>(b)});
    }
    ds::GenerateOptions g;
    g.max_new = tokens;
    // Decode time only: the prefill step's time (first callback) is excluded.
    auto run = [&](ds::TapHook* hook, ds::TraceRecorder* rec, ds::trace::TraceWriter* w) {
      rt->set_tap_hook(hook);
      std::chrono::steady_clock::time_point t0;
      int steps = 0;
      if (w) {
        for (int b = 0; b < batch; ++b) {
          w->begin_sequence(b, reqs[b].prompt);
          rec->bind_slot(b, b);
        }
      }
      ds::generate_batch(*rt, reqs, g, [&](int i, std::optional<int32_t> tok, const auto&) {
        if (rec) rec->commit(i, tok ? std::vector<int32_t>{*tok} : std::vector<int32_t>{});
        if (i == batch - 1 && steps++ == 0) t0 = std::chrono::steady_clock::now();
      });
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (w) {
        for (int b = 0; b < batch; ++b) w->end_sequence(b, "max_new");
      }
      rt->set_tap_hook(nullptr);
      return batch * (tokens - 1) / s;  // tokens/s over the decode steps after the first
    };
    auto traced = [&](const char* probes, ds::Storage hd) {
      ds::trace::WriterOptions wo;
      wo.path = fs::temp_directory_path() / "driftscope_bench_gpu_decode.h5";
      wo.force = true;
      wo.hidden_dtype = hd;
      ds::trace::TraceWriter w(wo, {});
      ds::TraceRecorder rec(w, ds::resolve_probes(probes, c.n_layers));
      const double tps = run(&rec, &rec, &w);
      w.finish(true, "finished");
      return tps;
    };
    run(nullptr, nullptr, nullptr);  // warm-up: plans, allocations
    std::vector<double> plain, def, all;
    for (int r = 0; r < reps; ++r) {
      plain.push_back(run(nullptr, nullptr, nullptr));
      def.push_back(traced("default", ds::Storage::native));
      all.push_back(traced("all", ds::Storage::bf16));
    }
    const double p = median(plain), d = median(def), a = median(all);
    fmt::print("decode {} {} batch {}: untraced {:.1f} tokens/s = {:.2f} of the limit\n", rc.dtype,
               rc.kernel, batch, p, p / limit);
    fmt::print("traced, default probes: {:.1f} tokens/s, wall time x{:.3f} of untraced\n", d,
               p / d);
    fmt::print("traced, all probes, bf16 hidden: {:.1f} tokens/s, wall time x{:.3f} of untraced\n",
               a, p / a);
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_gpu_decode: {}\n", e.what());
    return 2;
  }
  return 0;
}
