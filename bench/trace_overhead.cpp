// Tracing overhead: wall time of the same generation untraced, traced with the default probes,
// and traced with all probes, measured interleaved (A B C A B C ...) so machine noise hits all
// three alike; prints the medians and the traced / untraced ratios.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <vector>

#include "src/run/generate.h"
#include "src/model/model.h"
#include "src/run/prompts.h"
#include "src/tokenizer/load.h"
#include "src/run/trace_recorder.h"
#include "src/run/traced_run.h"

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 5;
  const int max_new = 200;
  const ds::Model m = ds::load_model(ds::default_model_path());
  auto tok = ds::load_tokenizer(ds::find_tokenizer(m), m.config.vocab_size);
  auto prompts = ds::read_prompts_file(
      ds::default_model_path().parent_path() / "prompts.txt", tok.get());
  prompts.resize(8);
  const fs::path out = fs::temp_directory_path() / "driftscope_bench_trace.h5";

  auto untraced = [&] {
    auto rt = ds::make_cpu_runtime(m, ds::DType::fp32, m.config.max_seq_len);
    ds::GenerateOptions g;
    g.max_new = max_new;
    g.eos_id = 2;
    for (const auto& p : prompts) ds::generate(*rt, p.ids, g);
  };
  auto traced = [&](const char* probes) {
    ds::TracedRunOptions o;
    o.config.max_new = max_new;
    o.sites = ds::resolve_probes(probes, m.config.n_layers);
    o.writer.path = out;
    o.writer.force = true;
    o.eos_id = 2;
    ds::run_traced(m, prompts, o);
  };
  auto time = [](auto&& f) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  std::vector<double> t_none, t_default, t_all;
  untraced();  // warm-up
  for (int r = 0; r < reps; ++r) {
    t_none.push_back(time(untraced));
    t_default.push_back(time([&] { traced("default"); }));
    const uint64_t default_bytes = fs::file_size(out);
    t_all.push_back(time([&] { traced("all"); }));
    if (r == 0) {
      fmt::print("trace sizes: default probes {:.1f} KiB, all probes {:.1f} KiB\n",
                 default_bytes / 1024.0, fs::file_size(out) / 1024.0);
    }
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  const double a = median(t_none), b = median(t_default), c = median(t_all);
  fmt::print("stories260K fp32, {} prompts x {} new tokens, {} interleaved repetitions (medians)\n",
             prompts.size(), max_new, reps);
  fmt::print("untraced             {:8.3f} s\n", a);
  fmt::print("traced, default      {:8.3f} s   ratio {:.2f}x\n", b, b / a);
  fmt::print("traced, all probes   {:8.3f} s   ratio {:.2f}x\n", c, c / a);
  fs::remove(out);
  return 0;
}
