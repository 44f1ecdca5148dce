// The host side of a traced CUDA decode step, without a GPU: what the CUDA runtime does after each
// pass (src/runtime/cuda/cuda_runtime.cpp, end_pass and hand_over_taps) and the generation loop
// after it, driven with synthetic data of a Qwen2-7B-shaped run (28 layers, dim 3584, vocab
// 152064): each tapped tensor arrives as bf16 in host memory and is widened to float as the
// runtime widens it, TraceRecorder::on_tap takes every site with all rows of the pass, on_logits a
// top-20 summary with log-sum-exp, then one TraceRecorder::commit per sequence queues its step to
// the TraceWriter (background HDF5 thread, queue bounded in steps and bytes).
//
// Per batch (1, 8, 32) and probe set (default: 86 sites, embed, L*/attn_out, L*/mlp_out, L*/out
// and final_norm, stored as f32, the default hidden dtype; all: 170 sites stored as bf16; as
// bench_gpu_decode traces them), two modes, interleaved over repetitions (medians):
//   host   steps back to back: the calling thread's cost per step (widen, on_tap, on_logits,
//          commit; commit includes append()'s wait for room in the queue, shown apart), and the
//          writer thread's rate (file bytes / the time it was not waiting for a message) with
//          the writer saturated.
//   paced  each step first sleeps pass_ms (the GPU's pass, 6.5 ms for the 7B shape on an H200),
//          as the runtime waits on its stream: the step's wall time over pass_ms is the
//          traced / untraced ratio this host would give if the device work were the pass alone.
// Usage: bench_trace_host_cost [reps=3] [steps=64] [batches=1,8,32] [pass_ms=6.5] [sets]
//   sets: --probes values separated by ';' (default "default;all"); "all" is stored as bf16.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/float_formats.h"
#include "src/experiment/trace_recorder.h"
#include "src/runtime/taps.h"
#include "trace/writer.h"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

using ds::Storage;

constexpr int kLayers = 28, kDim = 3584, kVocab = 152064, kTopK = 20, kPromptLen = 16;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.starts_with("model name")) {
      const size_t colon = line.find(':');
      std::string m = line.substr(colon + 1);
      m.erase(0, m.find_first_not_of(' '));
      return fmt::format("{}, {} threads", m, std::thread::hardware_concurrency());
    }
  }
  return "unknown CPU";
}

// kernels/cuda/device_buffer.h widen_host (which needs the CUDA headers), step for step: the
// pinned 16-bit values copied to a vector, then widened.
void widen_host(const unsigned char* p, Storage t, size_t n, float* out) {
  std::vector<uint16_t> bits(n);
  std::memcpy(bits.data(), p, n * sizeof(uint16_t));
  ds::widen(bits.data(), out, n, t);
}

// What the device would have copied to pinned memory: per site of all_sites, kMaxBatch rows of
// bf16 hidden values; per row a top-k summary.
struct Synthetic {
  static constexpr int kMaxBatch = 32;
  std::vector<uint16_t> hidden;  // (all sites, kMaxBatch, kDim)
  std::vector<int32_t> ids;      // (kMaxBatch, kTopK)
  std::vector<float> logits;     // (kMaxBatch, kTopK)
  std::vector<float> lse;        // (kMaxBatch)

  explicit Synthetic(int n_sites) {
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    hidden.resize(static_cast<size_t>(n_sites) * kMaxBatch * kDim);
    for (auto& b : hidden) b = ds::f32_to_bf16_bits(normal(rng));
    std::uniform_int_distribution<int32_t> id(0, kVocab - 1);
    for (int r = 0; r < kMaxBatch; ++r) {
      for (int k = 0; k < kTopK; ++k) {
        ids.push_back(id(rng));
        logits.push_back(20.0f - static_cast<float>(k) * 0.5f + normal(rng) * 0.01f);
      }
      lse.push_back(21.0f + normal(rng));
    }
  }
  const unsigned char* site(int i) const {
    return reinterpret_cast<const unsigned char*>(hidden.data() +
                                                  static_cast<size_t>(i) * kMaxBatch * kDim);
  }
};

struct Config {
  int batch;
  std::string probes;  // "default" or "all"
  Storage hidden_dtype;
};

// One run's figures; times per step are in microseconds.
struct Figures {
  double widen = 0, on_tap = 0, on_logits = 0, commit = 0, wait = 0, waits = 0;
  double step = 0;         // wall time per step (paced: including the pass)
  double finish_s = 0;     // end_sequence + finish: draining the queue, closing the file
  double writer_mbps = 0;  // file bytes / writer busy seconds
  double file_mb = 0;
};

Figures run_once(const Config& c, const Synthetic& syn, int steps, double pass_ms,
                 const fs::path& out) {
  const std::vector<std::string> sites = ds::resolve_probes(c.probes, kLayers);
  const std::vector<std::string> all = ds::trace::all_sites(kLayers);
  ds::trace::WriterOptions wo;
  wo.path = out;
  wo.force = true;
  wo.hidden_dtype = c.hidden_dtype;
  wo.topk = kTopK;
  std::vector<int32_t> prompt(kPromptLen);
  for (int i = 0; i < kPromptLen; ++i) prompt[i] = 100 + i;
  for (int s = 0; s < c.batch; ++s) wo.planned_prompts.push_back(prompt);
  for (const auto& s : sites) wo.planned_sites.emplace_back(s, kDim);
  wo.planned_vocab = kVocab;

  Figures f;
  const auto t_begin = Clock::now();
  ds::trace::TraceWriter writer(wo, {});
  ds::TraceRecorder recorder(writer, sites);
  // The sites as the runtime hands them over, in forward order (WantedSites::ask), with the
  // index of each one's synthetic values.
  std::vector<std::pair<ds::Site, int>> wanted;
  auto ask = [&](ds::Site s) {
    if (recorder.wants(s)) {
      const std::string name = ds::site_name(s);
      wanted.emplace_back(s,
                          static_cast<int>(std::find(all.begin(), all.end(), name) - all.begin()));
    }
  };
  ask({ds::SiteKind::embed});
  for (int l = 0; l < kLayers; ++l) {
    for (int k = 0; k < ds::kLayerSiteCount; ++k) ask({ds::layer_site_kind(k), l});
  }
  ask({ds::SiteKind::final_norm});
  for (int s = 0; s < c.batch; ++s) {
    writer.begin_sequence(s, prompt);
    recorder.bind_slot(s, s);
  }
  std::vector<int> slot(c.batch), pos(c.batch);
  for (int s = 0; s < c.batch; ++s) slot[s] = s;
  double widen_s = 0, tap_s = 0, logits_s = 0, commit_s = 0;
  const auto t_steps = Clock::now();
  for (int step = 0; step < steps; ++step) {
    if (pass_ms > 0)
      std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(pass_ms));
    for (int s = 0; s < c.batch; ++s) pos[s] = kPromptLen + step;
    // hand_over_taps: one vector per pass, resized per site
    std::vector<float> values;
    for (const auto& [site, index] : wanted) {
      auto t0 = Clock::now();
      values.resize(static_cast<size_t>(c.batch) * kDim);
      widen_host(syn.site(index), Storage::bf16, values.size(), values.data());
      auto t1 = Clock::now();
      recorder.on_tap(site, ds::tap_tensor(values.data(), c.batch, kDim, slot.data(), pos.data()));
      auto t2 = Clock::now();
      widen_s += std::chrono::duration<double>(t1 - t0).count();
      tap_s += std::chrono::duration<double>(t2 - t1).count();
    }
    auto t0 = Clock::now();
    ds::LogitsSummary l;
    l.rows = c.batch;
    l.k = kTopK;
    l.vocab = kVocab;
    l.ids = syn.ids.data();
    l.logits = syn.logits.data();
    l.lse = syn.lse.data();
    l.slot = slot.data();
    l.pos = pos.data();
    recorder.on_logits(l);
    auto t1 = Clock::now();
    for (int s = 0; s < c.batch; ++s) recorder.commit(s, {syn.ids[static_cast<size_t>(s) * kTopK]});
    auto t2 = Clock::now();
    logits_s += std::chrono::duration<double>(t1 - t0).count();
    commit_s += std::chrono::duration<double>(t2 - t1).count();
  }
  const double steps_s = since(t_steps);
  const ds::trace::TraceWriter::QueueTimes q = writer.queue_times();
  const auto t_finish = Clock::now();
  for (int s = 0; s < c.batch; ++s) writer.end_sequence(s, "length");
  if (!writer.finish(true, "finished")) throw ds::Error("bench: writer failed: " + writer.error());
  f.finish_s = since(t_finish);
  const double total_s = since(t_begin);
  const double idle_s = writer.queue_times().writer_idle_s;
  const double us = 1e6 / steps;
  f.widen = widen_s * us;
  f.on_tap = tap_s * us;
  f.on_logits = logits_s * us;
  f.commit = commit_s * us;
  f.wait = q.producer_wait_s * us;
  f.waits = static_cast<double>(q.producer_waits) / steps;
  f.step = steps_s * us;
  f.file_mb = static_cast<double>(fs::file_size(out)) / 1e6;
  f.writer_mbps = f.file_mb / (total_s - idle_s);
  fs::remove(out);
  return f;
}

std::vector<std::string> split(const std::string& s, char sep = ',') {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, sep)) out.push_back(item);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 3;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 64;
  const std::string batches = argc > 3 ? argv[3] : "1,8,32";
  const double pass_ms = argc > 4 ? std::atof(argv[4]) : 6.5;
  const std::string probe_sets = argc > 5 ? argv[5] : "default;all";
  const std::string cpu = cpu_model();
  const fs::path out = fs::temp_directory_path() / "driftscope_bench_trace_host.h5";

  std::vector<Config> configs;
  for (const auto& b : split(batches)) {
    for (const auto& p : split(probe_sets, ';')) {
      configs.push_back({std::atoi(b.c_str()), p, p == "all" ? Storage::bf16 : Storage::native});
    }
  }
  const Synthetic syn(static_cast<int>(ds::trace::all_sites(kLayers).size()));
  struct Series {
    std::vector<Figures> host, paced;
  };
  std::vector<Series> series(configs.size());
  run_once(configs.front(), syn, 4, 0, out);  // warm-up
  for (int r = 0; r < reps; ++r) {
    for (size_t i = 0; i < configs.size(); ++i) {
      series[i].host.push_back(run_once(configs[i], syn, steps, 0, out));
      series[i].paced.push_back(run_once(configs[i], syn, steps, pass_ms, out));
    }
  }
  auto med = [](const std::vector<Figures>& v, double Figures::*m) {
    std::vector<double> x;
    for (const auto& f : v) x.push_back(f.*m);
    return median(x);
  };
  fmt::print(
      "trace host cost, 7B shape (28 layers, dim {}, vocab {}), {} steps, {} interleaved "
      "repetitions (medians), host: {}\n",
      kDim, kVocab, steps, reps, cpu);
  fmt::print(
      "calling thread per step (us): widen / on_tap / on_logits / commit (of which waiting for "
      "queue room)\n");
  for (size_t i = 0; i < configs.size(); ++i) {
    const Config& c = configs[i];
    const auto& h = series[i].host;
    const auto& p = series[i].paced;
    const double host_us = med(h, &Figures::widen) + med(h, &Figures::on_tap) +
                           med(h, &Figures::on_logits) + med(h, &Figures::commit) -
                           med(h, &Figures::wait);
    fmt::print(
        "batch {:2} {:7} ({:3} sites, {:4})  host: widen {:7.0f}  on_tap {:7.0f}  on_logits "
        "{:4.0f}  commit {:7.0f} (wait {:7.0f}, {:4.2f} waits/step)  = {:7.0f} us/step without "
        "waits; writer {:6.0f} MB/s; file {:7.1f} MB  [{}]\n",
        c.batch, c.probes, ds::resolve_probes(c.probes, kLayers).size(),
        ds::trace::hidden_dtype_name(c.hidden_dtype), med(h, &Figures::widen),
        med(h, &Figures::on_tap), med(h, &Figures::on_logits), med(h, &Figures::commit),
        med(h, &Figures::wait), med(h, &Figures::waits), host_us, med(h, &Figures::writer_mbps),
        med(h, &Figures::file_mb), cpu);
    fmt::print(
        "{:37}paced {:.1f} ms: step {:7.0f} us = x{:.2f} of the pass; commit {:7.0f} (wait "
        "{:7.0f}, {:4.2f} waits/step); finish {:.2f} s; writer {:6.0f} MB/s  [{}]\n",
        "", pass_ms, med(p, &Figures::step), med(p, &Figures::step) / (pass_ms * 1000),
        med(p, &Figures::commit), med(p, &Figures::wait), med(p, &Figures::waits),
        med(p, &Figures::finish_s), med(p, &Figures::writer_mbps), cpu);
  }
  return 0;
}
