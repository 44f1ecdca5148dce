// GPU decode benchmark: tokens/s of greedy decoding on the CUDA backend as a fraction of the
// memory-bandwidth limit, measured in the same run, untraced and traced (default probes, and all
// probes with bf16 hidden states), interleaved so that drift of the machine hits all alike; for
// each batch size asked for, and at the first one also with CUDA graphs off.
//
//   bench_gpu_decode MODEL_DIR [--batch 1,8,16,32] [--dtype bf16|layercast|fp16|fp32]
//                    [--tokens N] [--kernel gemm=cublas|tiled] [--reps R] [--json FILE]
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
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "common/number_format.h"
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

std::vector<int> int_list(const std::string& s) {
  std::vector<int> out;
  size_t at = 0;
  while (at <= s.size()) {
    const size_t e = std::min(s.find(',', at), s.size());
    out.push_back(std::stoi(s.substr(at, e - at)));
    at = e + 1;
  }
  return out;
}

struct Figures {
  int batch = 1;
  double limit = 0, plain = 0, def = 0, all = 0, graphs_off = 0;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') {
    fmt::print(stderr,
               "usage: bench_gpu_decode MODEL_DIR [--batch B1,B2,...] [--dtype D] [--tokens N] "
               "[--kernel gemm=cublas|tiled] [--reps R] [--json FILE]\n");
    return 2;
  }
  const std::vector<int> batches = int_list(arg(argc, argv, "--batch", "1"));
  const int tokens = std::stoi(arg(argc, argv, "--tokens", "128"));
  const int reps = std::stoi(arg(argc, argv, "--reps", "3"));
  const std::string json_path = arg(argc, argv, "--json", "");
  ds::RunConfig rc;
  rc.device = ds::Device::cuda;
  rc.max_new = tokens;
  try {
    ds::set_field(rc, "dtype", arg(argc, argv, "--dtype", "bf16"));
    ds::set_field(rc, "kernel", arg(argc, argv, "--kernel", "gemm=cublas"));
    ds::validate(rc);
    const auto t_load = std::chrono::steady_clock::now();
    const ds::Model m = ds::load_model(argv[1]);
    const ds::ModelConfig& c = m.config;
    const int prompt_len = 16;
    const int capacity = prompt_len + tokens + 1;
    fmt::print("model {} ({} layers, dim {}) loaded in {:.1f} s\n", argv[1], c.n_layers, c.dim,
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t_load).count());
    const std::string dtype = ds::field_text(rc, "dtype"), kernel = ds::field_text(rc, "kernel");
    const double wbytes = ds::storage_bytes(ds::weight_storage(rc.dtype));
    const double abytes = ds::storage_bytes(ds::activation_storage(rc.dtype));
    double weight_elems = static_cast<double>(m.weights.final_norm.size());
    for (const auto& l : m.weights.layers) {
      weight_elems += l.attn_norm.size() + l.wq.size() + l.wk.size() + l.wv.size() + l.bq.size() +
                      l.bk.size() + l.bv.size() + l.wo.size() + l.mlp_norm.size() +
                      l.w_gate.size() + l.w_up.size() + l.w_down.size();
    }
    weight_elems += m.classifier().size();  // lm_head (or the tied embedding) is read whole
    const double bw = copy_bandwidth();
    fmt::print("device-to-device copy bandwidth {:.0f} GB/s; weights read per step {:.2f} GB\n",
               bw / 1e9, weight_elems * wbytes / 1e9);

    std::vector<Figures> figures;
    for (const int batch : batches) {
      Figures f;
      f.batch = batch;
      const double mean_pos = prompt_len + tokens / 2.0;
      const double kv_bytes = 2.0 * c.n_layers * mean_pos * c.kv_dim() * abytes * batch;
      f.limit = batch / ((weight_elems * wbytes + kv_bytes) / bw);
      std::vector<ds::SequenceRequest> reqs;
      for (int b = 0; b < batch; ++b) {
        std::vector<int32_t> p(prompt_len);
        for (int i = 0; i < prompt_len; ++i) p[i] = (7 + 31 * i + 101 * b) % c.vocab_size;
        reqs.push_back({p, static_cast<uint64_t>(b)});
      }
      ds::GenerateOptions g;
      g.max_new = tokens;
      // Decode time only: from the end of the first step (the prefill) to the end of the last.
      auto run = [&](ds::Runtime& rt, ds::TapHook* hook, ds::TraceRecorder* rec,
                     ds::trace::TraceWriter* w) {
        rt.set_tap_hook(hook);
        std::chrono::steady_clock::time_point t0;
        int steps = 0;
        if (w) {
          for (int b = 0; b < batch; ++b) {
            w->begin_sequence(b, reqs[b].prompt);
            rec->bind_slot(b, b);
          }
        }
        ds::generate_batch(rt, reqs, g, [&](int i, std::optional<int32_t> tok, const auto&) {
          if (rec) rec->commit(i, tok ? std::vector<int32_t>{*tok} : std::vector<int32_t>{});
          if (i == batch - 1 && steps++ == 0) t0 = std::chrono::steady_clock::now();
        });
        const double s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (w) {
          for (int b = 0; b < batch; ++b) w->end_sequence(b, "max_new");
        }
        rt.set_tap_hook(nullptr);
        return batch * (tokens - 1) / s;  // tokens/s over the decode steps after the first
      };
      auto traced = [&](ds::Runtime& rt, const char* probes, ds::Storage hd) {
        ds::trace::WriterOptions wo;
        wo.path = fs::temp_directory_path() / "driftscope_bench_gpu_decode.h5";
        wo.force = true;
        wo.hidden_dtype = hd;
        ds::trace::TraceWriter w(wo, {});
        ds::TraceRecorder rec(w, ds::resolve_probes(probes, c.n_layers));
        const double tps = run(rt, &rec, &rec, &w);
        w.finish(true, "finished");
        return tps;
      };
      {
        auto rt = ds::make_runtime(m, ds::numerics(rc), capacity, batch);
        run(*rt, nullptr, nullptr, nullptr);  // warm-up: plans, allocations, recordings
        std::vector<double> plain, def, all;
        for (int r = 0; r < reps; ++r) {
          plain.push_back(run(*rt, nullptr, nullptr, nullptr));
          def.push_back(traced(*rt, "default", ds::Storage::native));
          all.push_back(traced(*rt, "all", ds::Storage::bf16));
        }
        f.plain = median(plain);
        f.def = median(def);
        f.all = median(all);
      }
      if (figures.empty()) {  // the first batch size once more, every kernel launched one by one
        setenv("DRIFTSCOPE_CUDA_GRAPHS", "0", 1);
        auto rt = ds::make_runtime(m, ds::numerics(rc), capacity, batch);
        run(*rt, nullptr, nullptr, nullptr);
        std::vector<double> off;
        for (int r = 0; r < reps; ++r) off.push_back(run(*rt, nullptr, nullptr, nullptr));
        f.graphs_off = median(off);
        unsetenv("DRIFTSCOPE_CUDA_GRAPHS");
      }
      fmt::print("decode {} {} batch {}: untraced {:.1f} tokens/s = {:.3f} of the limit {:.1f}\n",
                 dtype, kernel, batch, f.plain, f.plain / f.limit, f.limit);
      if (f.graphs_off > 0) {
        fmt::print("  without CUDA graphs: {:.1f} tokens/s (graphs x{:.2f})\n", f.graphs_off,
                   f.plain / f.graphs_off);
      }
      fmt::print("  traced, default probes: {:.1f} tokens/s, wall time x{:.3f} of untraced\n",
                 f.def, f.plain / f.def);
      fmt::print("  traced, all probes, bf16 hidden: {:.1f} tokens/s, wall time x{:.3f}\n", f.all,
                 f.plain / f.all);
      figures.push_back(f);
    }
    if (!json_path.empty()) {
      std::string j = fmt::format(
          "{{\"dtype\": \"{}\", \"kernel\": \"{}\", \"tokens\": {}, \"copy_bandwidth_gbs\": "
          "{:.1f}, \"weight_bytes\": {:.6e}, \"batches\": {{",
          dtype, kernel, tokens, bw / 1e9, weight_elems * wbytes);
      for (size_t i = 0; i < figures.size(); ++i) {
        const Figures& f = figures[i];
        j += fmt::format(
            "{}\"{}\": {{\"tok_s\": {:.2f}, \"limit_tok_s\": {:.2f}, \"fraction_of_limit\": "
            "{:.4f}, \"traced_default_tok_s\": {:.2f}, \"trace_overhead_default\": {:.4f}, "
            "\"traced_all_tok_s\": {:.2f}, \"trace_overhead_all\": {:.4f}, "
            "\"graphs_off_tok_s\": {:.2f}}}",
            i ? ", " : "", f.batch, f.plain, f.limit, f.plain / f.limit, f.def, f.plain / f.def,
            f.all, f.plain / f.all, f.graphs_off);
      }
      j += "}}\n";
      std::ofstream(json_path) << j;
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_gpu_decode: {}\n", e.what());
    return 2;
  }
  return 0;
}
