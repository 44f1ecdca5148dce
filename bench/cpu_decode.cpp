// The CPU reference at the machine's limit, in one run, side by side:
//   - decode tokens/s of the 110M Llama shape (llama2.c's stories110M: dim 768, 12 layers, hidden
//     2048, vocab 32000; random weights) at 1 thread and at all cores: fp32 on float32 weights (a
//     llama2.c checkpoint), fp32 and bf16 on the same shape stored as bf16 safetensors (`synth`),
//     and a peer by path (llama2.c's run.c built -Ofast -march=native, and with -fopenmp), each
//     measured in alternation with ours (best of the rounds, and the median of the rounds' own
//     ratios to fp32);
//   - bytes of weights read per token, and the read bandwidth as the best of several ways of
//     streaming those bytes (a scalar sum, an AVX2 sum, and the decodes themselves, ours and the
//     peer's): each decode's fraction of it is never above 1;
//   - prefill GFLOP/s for 512 tokens against this machine's peak without FMA (independent AVX2
//     multiplies and adds, measured here);
//   - time to first token and peak RSS of `driftscope generate` (warm page cache) against the
//     budget 1.1 x the weight file + KV cache + 256 MiB.
// Usage: bench_cpu_decode [--tokens N] [--rounds R] [--dir DIR] [--peer path/to/run]
//          [--peer-omp path/to/run-built-with-openmp] [--peer-tokenizer tokenizer.bin]
#include <fmt/format.h>
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "bench/child_process.h"
#include "kernels/cpu/cpu_exec.h"
#include "src/model/memory.h"
#include "src/model/model.h"
#include "src/model/synth.h"
#include "src/runtime/runtime.h"

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// dim, hidden, layers, heads, kv_heads, vocab, seq_len: llama2.c's stories110M
constexpr int32_t kHeader[7] = {768, 2048, 12, 12, 12, 32000, 1024};

// The checkpoint with weights ~ U(-0.05, 0.05) (norms 1), from a fixed seed; written once.
void write_checkpoint(const fs::path& path) {
  const size_t D = kHeader[0], F = kHeader[1], L = kHeader[2], V = kHeader[5], S = kHeader[6];
  const size_t HS = D / kHeader[3];
  const size_t n = V * D + L * D + 4 * L * D * D + L * D + 3 * L * D * F + D + S * HS;
  if (fs::exists(path) && fs::file_size(path) == 28 + 4 * n) return;
  std::vector<float> w(n);
  uint64_t s = 0x9E3779B97F4A7C15ull;
  for (float& v : w) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    v = (static_cast<float>(s >> 40) / static_cast<float>(1 << 24) - 0.5f) * 0.1f;
  }
  auto ones = [&](size_t at, size_t count) { std::fill_n(w.begin() + at, count, 1.0f); };
  ones(V * D, L * D);                                          // attention norms
  ones(V * D + L * D + 4 * L * D * D, L * D);                  // MLP norms
  ones(V * D + 2 * L * D + 4 * L * D * D + 3 * L * D * F, D);  // final norm
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(kHeader), sizeof(kHeader));
  out.write(reinterpret_cast<const char*>(w.data()), static_cast<std::streamsize>(4 * n));
}

// Every weight byte a decode step reads: all layers, the final norm and the classifier (the
// embedding is tied and read whole by the LM head; its one row per token is not counted again).
std::vector<const ds::WeightTensor*> decode_tensors(const ds::Model& m) {
  std::vector<const ds::WeightTensor*> t;
  for (const auto& l : m.weights.layers) {
    for (const auto* p :
         {&l.attn_norm, &l.wq, &l.wk, &l.wv, &l.wo, &l.mlp_norm, &l.w_gate, &l.w_up, &l.w_down}) {
      t.push_back(p);
    }
  }
  t.push_back(&m.weights.final_norm);
  t.push_back(&m.classifier());
  return t;
}

uint64_t bytes_of(const std::vector<const ds::WeightTensor*>& tensors) {
  uint64_t b = 0;
  for (const auto* t : tensors) b += t->bytes();
  return b;
}

// Sums of 32-byte words with four independent AVX2 accumulators (the vector way to stream).
__attribute__((target("avx2"))) uint64_t sum_avx2(const unsigned char* p, size_t n32) {
  __m256i a[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(),
                  _mm256_setzero_si256()};
  size_t i = 0;
  for (; i + 4 <= n32; i += 4) {
    for (int j = 0; j < 4; ++j) {
      a[j] = _mm256_add_epi64(
          a[j], _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32 * (i + j))));
    }
  }
  for (; i < n32; ++i)
    a[0] = _mm256_add_epi64(a[0], _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32 * i)));
  alignas(32) uint64_t out[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(out),
                     _mm256_add_epi64(_mm256_add_epi64(a[0], a[1]), _mm256_add_epi64(a[2], a[3])));
  return out[0] + out[1] + out[2] + out[3];
}

// GB/s reading every byte of the tensors once, split across the CPU threads: the best of five
// passes of a scalar 8-byte sum and of the AVX2 sum.
double stream_bandwidth(const std::vector<const ds::WeightTensor*>& tensors) {
  const double bytes = static_cast<double>(bytes_of(tensors));
  double best = 0;
  std::atomic<uint64_t> sink{0};  // keeps the reads
  for (int rep = 0; rep < 5; ++rep) {
    for (bool vec : {false, true}) {
      const auto t0 = Clock::now();
      for (const ds::WeightTensor* t : tensors) {
        const auto* p = static_cast<const unsigned char*>(t->raw());
        const size_t words = t->bytes() / 32;
        ds::ops::parallel_for(words, 1 << 12, [&](size_t b, size_t e) {
          uint64_t x = 0;
          if (vec) {
            x = sum_avx2(p + 32 * b, e - b);
          } else {
            const auto* w = reinterpret_cast<const uint64_t*>(p);
            for (size_t i = 4 * b; i < 4 * e; ++i) x += w[i];
          }
          sink.fetch_add(x, std::memory_order_relaxed);
        });
      }
      best = std::max(best, bytes / since(t0) / 1e9);
    }
  }
  return best;
}

int argmax(const std::vector<double>& v) {
  return static_cast<int>(std::max_element(v.begin(), v.end()) - v.begin());
}

// Greedy decode of `tokens` tokens after a 1-token prompt; tokens/s of the decode steps.
double decode_tokens_per_s(const ds::Model& m, ds::DType dtype, int tokens) {
  auto rt = ds::make_cpu_runtime(m, dtype, tokens + 1);
  std::vector<double> logits;
  int32_t tok = 1;
  rt->forward(std::span<const int32_t>(&tok, 1), 0, logits);
  const auto t0 = Clock::now();
  for (int i = 0; i < tokens; ++i) {
    tok = argmax(logits);
    rt->forward(std::span<const int32_t>(&tok, 1), i + 1, logits);
  }
  return tokens / since(t0);
}

// The peer's own decode rate: `peer model -z tokenizer -n N -t 0 -i a` prints "achieved tok/s".
double peer_tokens_per_s(const std::string& peer, const fs::path& bin, const std::string& tok,
                         int threads, int tokens) {
  const std::string cmd =
      fmt::format("OMP_NUM_THREADS={} {} {} -z {} -n {} -t 0 -i a 2>&1 >/dev/null", threads, peer,
                  bin.string(), tok, tokens + 1);
  FILE* f = popen(cmd.c_str(), "r");
  if (f == nullptr) return 0;
  char line[512];
  double tps = 0;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::sscanf(line, "achieved tok/s: %lf", &tps) == 1) break;
  }
  pclose(f);
  return tps;
}

// GFLOP/s of one prefill: 2 flops per weight per row in the GEMMs, plus q.k and p.v.
double prefill_gflops(const ds::Model& m, int rows) {
  const auto& c = m.config;
  auto rt = ds::make_cpu_runtime(m, ds::DType::fp32, rows);
  std::vector<int32_t> prompt(rows);
  for (int i = 0; i < rows; ++i) prompt[i] = (i * 7919 + 3) % c.vocab_size;
  std::vector<double> logits;
  const auto t0 = Clock::now();
  rt->forward(prompt, 0, logits);
  const double secs = since(t0);
  const double gemm_weights =
      static_cast<double>(c.n_layers) *
          (2.0 * c.dim * c.q_dim() + 2.0 * c.dim * c.kv_dim() + 3.0 * c.dim * c.hidden_dim) +
      static_cast<double>(c.vocab_size) * c.dim;
  const double keys = static_cast<double>(rows) * (rows + 1) / 2;  // causal
  const double flops = 2 * gemm_weights * rows + 4.0 * c.n_layers * keys * c.q_dim();
  return flops / secs / 1e9;
}

// Seven independent multiply chains and seven add chains on AVX2 registers, `iters` steps: 14
// accumulators and the two constants fill the 16 registers (eight of each spilled to memory and
// measured the stores instead).
__attribute__((target("avx2"))) float mul_add_chains(int iters) {
  constexpr int kChains = 7;
  __m256 m[kChains], a[kChains];
  for (int j = 0; j < kChains; ++j) m[j] = a[j] = _mm256_set1_ps(1.0f + j * 1e-3f);
  const __m256 f = _mm256_set1_ps(0.9999999f), g = _mm256_set1_ps(1e-7f);
  for (int i = 0; i < iters; ++i) {
#pragma GCC unroll 7
    for (int j = 0; j < kChains; ++j) {
      m[j] = _mm256_mul_ps(m[j], f);
      a[j] = _mm256_add_ps(a[j], g);
    }
  }
  __m256 s = _mm256_setzero_ps();
  for (int j = 0; j < kChains; ++j) s = _mm256_add_ps(s, _mm256_add_ps(m[j], a[j]));
  alignas(32) float o[8];
  _mm256_store_ps(o, s);
  return o[0];
}

// This machine's peak without FMA: independent AVX2 multiplies and adds on `threads` threads;
// GFLOP/s, the best of three.
double peak_gflops_no_fma(int threads) {
  constexpr int kIters = 1 << 22;
  double best = 0;
  std::atomic<float> sink{0};
  for (int rep = 0; rep < 3; ++rep) {
    ds::ops::set_cpu_threads(threads);
    const auto t0 = Clock::now();
    ds::ops::parallel_for(static_cast<size_t>(threads), 1, [&](size_t b, size_t e) {
      for (size_t job = b; job < e; ++job) sink.store(mul_add_chains(kIters));
    });
    const double flops = 2.0 * 7 * 8 * kIters * threads;  // 7 muls + 7 adds of 8 lanes
    best = std::max(best, flops / since(t0) / 1e9);
  }
  return best;
}

struct CliRun {
  double ttft_s = 0, generate_s = 0;
  long rss_kib = 0;
};

// `exe generate` on the checkpoint: wall time of a 1-token run (time to first token, process
// start included; best of 3) and peak RSS of a 128-token run.
CliRun measure_cli(const std::string& exe, const fs::path& model) {
  CliRun r;
  r.ttft_s = 1e9;
  std::fflush(stdout);  // the children must not inherit (and print again) our buffered output
  for (int i = 0; i < 3; ++i) {
    const auto c = ds::bench::run_child(
        {exe, "generate", "--model", model.string(), "--prompt-ids", "1", "-n", "1", "--ids", "-q"},
        true);
    r.ttft_s = std::min(r.ttft_s, c.wall);
  }
  const auto c = ds::bench::run_child(
      {exe, "generate", "--model", model.string(), "--prompt-ids", "1", "-n", "128", "--ids", "-q"},
      true);
  r.generate_s = c.wall;
  r.rss_kib = c.max_rss_kb;
  return r;
}

struct Args {
  int tokens = 64, rounds = 2;
  fs::path dir = fs::temp_directory_path() / "driftscope_bench_110m";
  std::string peer, peer_omp, peer_tokenizer;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--tokens") a.tokens = std::stoi(v);
    if (k == "--rounds") a.rounds = std::stoi(v);
    if (k == "--dir") a.dir = v;
    if (k == "--peer") a.peer = v;
    if (k == "--peer-omp") a.peer_omp = v;
    if (k == "--peer-tokenizer") a.peer_tokenizer = v;
  }
  return a;
}

// One decode configuration: ours (a model and a precision) or the peer's binary.
struct Decode {
  std::string what;
  int threads;
  const ds::Model* model = nullptr;  // null: the peer
  ds::DType dtype = ds::DType::fp32;
  std::string peer;
  double bytes = 0;               // weights read per token
  double tps = 0;                 // best of the rounds
  std::vector<double> round_tps;  // every round's
};

// The median of the rounds' ratios d / base, each taken within one round: steadier than the
// ratio of the bests on a machine whose neighbours move its memory bandwidth from round to round.
double median_ratio(const Decode& d, const Decode& base) {
  std::vector<double> r;
  for (size_t i = 0; i < d.round_tps.size() && i < base.round_tps.size(); ++i)
    r.push_back(d.round_tps[i] / base.round_tps[i]);
  if (r.empty()) return 0;
  std::sort(r.begin(), r.end());
  return r.size() % 2 == 1 ? r[r.size() / 2] : (r[r.size() / 2 - 1] + r[r.size() / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  fs::create_directories(a.dir);
  const fs::path bin = a.dir / "llama110m.bin", hf16 = a.dir / "stories110m-bf16";
  write_checkpoint(bin);
  if (!fs::exists(hf16 / "config.json")) {
    ds::SynthOptions o;
    o.dtype = ds::NumberFormat::bf16;
    o.seed = 1;
    o.force = true;
    ds::write_synthetic_checkpoint(ds::synth_shape("stories110m"), o, hf16);
  }
  const int all = ds::ops::cpu_threads();
  {  // time to first token in this process, warm page cache (the file was just written or read)
    (void)ds::load_model(bin);
    const auto t0 = Clock::now();
    const ds::Model first = ds::load_model(bin);
    const double t_load = since(t0);
    auto rt = ds::make_cpu_runtime(first, ds::DType::fp32, 2);
    const double t_runtime = since(t0);
    std::vector<double> logits;
    const int32_t tok = 1;
    rt->forward(std::span<const int32_t>(&tok, 1), 0, logits);
    const double t_token = since(t0);
    fmt::print(
        "time to first token (in process, {} threads): {:.3f} s = load {:.3f} + runtime set-up "
        "(packing) {:.3f} + first forward {:.3f}\n",
        all, t_token, t_load, t_runtime - t_load, t_token - t_runtime);
  }
  const ds::Model m32 = ds::load_model(bin), m16 = ds::load_model(hf16);
  const double b32 = static_cast<double>(bytes_of(decode_tensors(m32)));
  const double b16 = static_cast<double>(bytes_of(decode_tensors(m16)));
  fmt::print("weights read per decode token: {:.1f} MB float32 ({}), {:.1f} MB bf16 ({})\n",
             b32 / 1e6, bin.string(), b16 / 1e6, hf16.string());

  std::vector<Decode> rows;
  for (int t : {1, all}) {
    rows.push_back({"driftscope fp32, f32 weights", t, &m32, ds::DType::fp32, "", b32, 0, {}});
    const std::string& peer = t == 1 ? a.peer : a.peer_omp;
    if (!peer.empty() && !a.peer_tokenizer.empty())
      rows.push_back({t == 1 ? "run.c -Ofast -march=native" : "run.c ... -fopenmp",
                      t,
                      nullptr,
                      ds::DType::fp32,
                      peer,
                      b32,
                      0,
                      {}});
    rows.push_back({"driftscope fp32, bf16 weights", t, &m16, ds::DType::fp32, "", b16, 0, {}});
    rows.push_back({"driftscope bf16, bf16 weights", t, &m16, ds::DType::bf16, "", b16, 0, {}});
  }
  // rounds in alternation, so a shared machine's load moves every row alike
  for (int r = 0; r < a.rounds; ++r) {
    for (Decode& d : rows) {
      ds::ops::set_cpu_threads(d.threads);
      const double tps = d.model != nullptr ? decode_tokens_per_s(*d.model, d.dtype, a.tokens)
                                            : peer_tokens_per_s(d.peer, bin, a.peer_tokenizer,
                                                                d.threads, a.tokens);
      d.tps = std::max(d.tps, tps);
      d.round_tps.push_back(tps);
    }
  }
  // the roofline: the best of every way of reading the bytes, the decodes themselves included
  double bw[2] = {0, 0};  // GB/s at 1 thread, at all cores
  for (int i = 0; i < 2; ++i) {
    ds::ops::set_cpu_threads(i == 0 ? 1 : all);
    bw[i] = std::max(stream_bandwidth(decode_tensors(m32)), stream_bandwidth(decode_tensors(m16)));
    for (const Decode& d : rows)
      if (d.threads == (i == 0 ? 1 : all)) bw[i] = std::max(bw[i], d.tps * d.bytes / 1e9);
  }
  fmt::print(
      "read bandwidth (best of a scalar sum, an AVX2 sum and the decodes): {:.2f} GB/s at 1 "
      "thread, {:.2f} GB/s at {} threads\n\n",
      bw[0], bw[1], all);
  fmt::print("{:<32} {:>7} {:>10} {:>11} {:>9} {:>10} {:>14}\n",
             fmt::format("decode ({} tokens of the 110M shape)", a.tokens), "threads", "tokens/s",
             "GB/s read", "fraction", "vs fp32", "median ratio");
  for (const Decode& d : rows) {
    const Decode& fp32 = rows[d.threads == 1 ? 0 : (rows.size() / 2)];
    const double gbs = d.tps * d.bytes / 1e9;
    fmt::print("{:<32} {:>7} {:>10.2f} {:>11.2f} {:>9.2f} {:>9.2f}x {:>13.2f}x\n", d.what,
               d.threads, d.tps, gbs, gbs / bw[d.threads == 1 ? 0 : 1], d.tps / fp32.tps,
               median_ratio(d, fp32));
  }
  fmt::print(
      "(tokens/s: the best of {} rounds; vs fp32: the ratio of the bests; median ratio: the "
      "median of the rounds' own ratios)\n",
      a.rounds);
  ds::ops::set_cpu_threads(all);
  fmt::print("\nprefill 512 tokens, fp32, against the peak without FMA:\n");
  for (int threads : {1, all}) {
    const double peak = peak_gflops_no_fma(threads);
    ds::ops::set_cpu_threads(threads);
    const double g = prefill_gflops(m32, 512);
    fmt::print("  {} thread(s): {:.1f} GFLOP/s of a peak of {:.1f} ({:.2f})\n", threads, g, peak,
               g / peak);
  }
  ds::ops::set_cpu_threads(all);
  fmt::print(
      "\n`generate` ({} threads, warm page cache; budget: peak RSS <= 1.1 x file + KV + 256 "
      "MiB)\n{:<24} {:>22} {:>20} {:>14} {:>12}\n",
      all, "checkpoint", "1 token: wall s (TTFT)", "128 tokens: wall s", "peak RSS MiB",
      "budget MiB");
  for (const fs::path& model : {bin, hf16}) {
    uint64_t file = 0;
    for (const auto& f : ds::load_model(model).weight_files) file += fs::file_size(f);
    const double kv = 129.0 * ds::kv_bytes_per_token(m32.config, 4);
    const double budget = (1.1 * file + kv) / 1048576.0 + 256;
    const CliRun r = measure_cli(DRIFTSCOPE_EXE, model);
    fmt::print("{:<24} {:>22.3f} {:>20.2f} {:>14.1f} {:>12.0f}\n", model.filename().string(),
               r.ttft_s, r.generate_s, r.rss_kib / 1024.0, budget);
  }
  return 0;
}
