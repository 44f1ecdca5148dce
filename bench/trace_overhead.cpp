// Tracing overhead and the trace writer's memory:
//  260k  wall time of the same generation on the bundled kjv-llama untraced, traced with the
//        default probes and with all probes, each with --compression deflate (shuffle +
//        deflate 1) and with none (the default), measured interleaved (A B C D E A B ...)
//        so machine noise hits all alike; medians, traced / untraced ratios and trace sizes.
//  110m  the same on a llama2.c checkpoint of the 110M shape (dim 768, 12 layers, 12 heads,
//        hidden 2048, vocab 32000) with random weights, written to a temporary file.
//  rss   peak RSS (ru_maxrss of a child) of `driftscope run --probes all` writing a ~30 MB and a
//        ~300 MB trace, interleaved: the writer's memory must not grow with the trace.
// Usage: bench_trace_overhead [reps=5] [sections=260k,110m,rss]
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "bench/child_process.h"
#include "src/experiment/generate.h"
#include "src/experiment/prompts.h"
#include "src/experiment/trace_recorder.h"
#include "src/experiment/traced_run.h"
#include "src/model/model.h"
#include "src/tokenizer/load.h"
#include "trace/writer.h"

namespace fs = std::filesystem;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <typename F>
double seconds(F&& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Untraced, then default probes and all probes each written with the default compression
// (shuffle + deflate 1) and with none: interleaved repetitions, medians and ratios.
void overhead(const char* label, const ds::Model& m, const std::vector<ds::Prompt>& prompts,
              int max_new, int reps) {
  const fs::path out = fs::temp_directory_path() / "driftscope_bench_trace.h5";
  auto untraced = [&] {
    auto rt = ds::make_cpu_runtime(m, ds::DType::fp32, m.config.max_seq_len);
    ds::GenerateOptions g;
    g.max_new = max_new;
    g.eos_id = std::nullopt;  // every prompt generates max_new tokens, traced or not
    for (const auto& p : prompts) ds::generate(*rt, p.ids, g);
  };
  auto traced = [&](const char* probes, int deflate_level) {
    ds::TracedRunOptions o;
    o.config.max_new = max_new;
    o.sites = ds::resolve_probes(probes, m.config.n_layers);
    o.writer.path = out;
    o.writer.force = true;
    o.writer.deflate_level = deflate_level;
    o.eos_id = std::nullopt;
    ds::run_traced(m, prompts, o);
  };
  struct Variant {
    const char* probes;
    int deflate_level;
    std::vector<double> t;
    uint64_t bytes = 0;
  };
  std::vector<Variant> variants = {
      {"default", 1, {}}, {"default", 0, {}}, {"all", 1, {}}, {"all", 0, {}}};
  std::vector<double> t_none;
  untraced();  // warm-up
  for (int r = 0; r < reps; ++r) {
    t_none.push_back(seconds(untraced));
    for (auto& v : variants) {
      v.t.push_back(seconds([&] { traced(v.probes, v.deflate_level); }));
      v.bytes = fs::file_size(out);
    }
  }
  const double a = median(t_none);
  fmt::print("{} fp32, {} prompts x {} new tokens, {} interleaved repetitions (medians)\n", label,
             prompts.size(), max_new, reps);
  fmt::print("untraced                          {:8.3f} s\n", a);
  for (const auto& v : variants) {
    const double b = median(v.t);
    fmt::print("traced, {:7} probes, {:8}  {:8.3f} s   ratio {:.2f}x   trace {:9.1f} KiB\n",
               v.probes, ds::trace::compression_name(v.deflate_level), b, b / a, v.bytes / 1024.0);
  }
  fmt::print("\n");
  fs::remove(out);
}

// A llama2.c checkpoint (legacy format, shared classifier) of the given shape, weights drawn
// from N(0, 0.02), norms 1.
void write_random_llama2c(const fs::path& path, int dim, int hidden, int layers, int heads,
                          int vocab, int seq_len) {
  std::ofstream f(path, std::ios::binary);
  const int32_t header[7] = {dim, hidden, layers, heads, heads, vocab, seq_len};
  f.write(reinterpret_cast<const char*>(header), sizeof(header));
  std::mt19937 rng(110);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  auto random = [&](size_t n) {
    std::vector<float> v(n);
    for (auto& x : v) x = normal(rng);
    f.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(n * 4));
  };
  auto ones = [&](size_t n) {
    std::vector<float> v(n, 1.0f);
    f.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(n * 4));
  };
  const size_t D = dim, F = hidden, L = layers, V = vocab, S = seq_len, HS = dim / heads;
  random(V * D);      // token embedding
  ones(L * D);        // rms_att
  random(L * D * D);  // wq
  random(L * D * D);  // wk
  random(L * D * D);  // wv
  random(L * D * D);  // wo
  ones(L * D);        // rms_ffn
  random(L * F * D);  // w1
  random(L * D * F);  // w2
  random(L * F * D);  // w3
  ones(D);            // rms_final
  random(S * HS);     // freq_cis_real, freq_cis_imag (skipped by the loader)
}

// Peak RSS of `driftscope run --probes all` on n prompts, interleaved small / large.
void rss(const std::vector<ds::Prompt>& texts, int reps) {
  const fs::path dir = fs::temp_directory_path() / "driftscope_bench_rss";
  fs::create_directories(dir);
  auto prompts_file = [&](int n) {
    const fs::path p = dir / fmt::format("prompts{}.txt", n);
    std::ofstream f(p);
    for (int i = 0; i < n; ++i)
      f << texts[i % texts.size()].text.value_or("Once upon a time") << " " << i << "\n";
    return p;
  };
  const int small = 19, large = 190;  // about 30 MB and 300 MB of trace (1.6 MB per prompt)
  const fs::path ps = prompts_file(small), pl = prompts_file(large), out = dir / "t.h5";
  auto run = [&](const fs::path& prompts) {
    return ds::bench::run_child({DRIFTSCOPE_EXE, "run", "--prompts", prompts.string(), "-n", "200",
                                 "--probes", "all", "-q", "--force", "-o", out.string()},
                                true);
  };
  std::vector<double> rs, rl;
  uint64_t bs = 0, bl = 0;
  for (int r = 0; r < reps; ++r) {
    rs.push_back(run(ps).max_rss_kb / 1024.0);
    bs = fs::file_size(out);
    rl.push_back(run(pl).max_rss_kb / 1024.0);
    bl = fs::file_size(out);
  }
  fmt::print("peak RSS of `driftscope run --probes all -n 200`, {} interleaved repetitions (max)\n",
             reps);
  fmt::print("{:4} prompts, trace {:6.1f} MB   peak RSS {:7.1f} MiB\n", small, bs / 1e6,
             *std::max_element(rs.begin(), rs.end()));
  fmt::print("{:4} prompts, trace {:6.1f} MB   peak RSS {:7.1f} MiB   difference {:+.1f} MiB\n\n",
             large, bl / 1e6, *std::max_element(rl.begin(), rl.end()),
             *std::max_element(rl.begin(), rl.end()) - *std::max_element(rs.begin(), rs.end()));
  fs::remove_all(dir);
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 5;
  const std::string sections = argc > 2 ? argv[2] : "260k,110m,rss";
  const ds::Model m = ds::load_model(ds::default_model_path());
  auto tok = ds::load_tokenizer(ds::find_tokenizer(m), m.config.vocab_size);
  auto prompts =
      ds::read_prompts_file(ds::default_model_path().parent_path() / "prompts.txt", tok.get());
  if (sections.find("260k") != std::string::npos) {
    std::vector<ds::Prompt> eight(prompts.begin(), prompts.begin() + 8);
    overhead("kjv-llama", m, eight, 200, reps);
  }
  if (sections.find("110m") != std::string::npos) {
    const fs::path bin = fs::temp_directory_path() / "driftscope_bench_110m.bin";
    write_random_llama2c(bin, 768, 2048, 12, 12, 32000, 256);
    const ds::Model big = ds::load_model(bin);
    std::vector<ds::Prompt> two(prompts.begin(), prompts.begin() + 2);  // ids < 512 < 32000
    overhead("110M shape (random weights)", big, two, 48, reps);
    fs::remove(bin);
  }
  if (sections.find("rss") != std::string::npos) rss(prompts, std::max(1, reps / 3));
  return 0;
}
