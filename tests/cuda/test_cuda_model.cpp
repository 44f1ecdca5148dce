// Whole-model checks of the CUDA backend on the bundled models: CUDA fp32 against the CPU fp64
// oracle (same greedy tokens on every bundled prompt), CUDA bf16 against the CPU's bf16
// emulation (drift reported), tracing that changes nothing, and kernel records in traces.
#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "src/model/model.h"
#include "src/runtime/runtime.h"
#include "tests/support/capture_hook.h"
#include "tests/support/paths.h"
#include "tests/support/run_cli.h"
#include "tests/support/temp_dir.h"
#include "trace/reader.h"

namespace ds::test {
namespace {

std::string prompts_file() {
  return prompts();
}

// Runs `driftscope run` on the bundled prompts into dir/name.h5 with extra flags.
std::string traced(const TempDir& dir, const std::string& name, const std::string& flags, int n) {
  const std::string out = (dir.path() / (name + ".h5")).string();
  const CliResult r = run_cli(fmt::format("run -m {} --prompts {} -n {} -q -o {} {}", model_bin(),
                                          prompts_file(), n, out, flags));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return out;
}

nlohmann::json diff_json(const std::string& a, const std::string& b) {
  const CliResult r = run_cli(fmt::format("diff -q --json - {} {}", a, b));
  INFO(r.err);
  REQUIRE((r.exit_code == 0 || r.exit_code == 1));
  return nlohmann::json::parse(r.out);
}

struct SiteDrift {
  double median_max = 0;  // largest per-sequence median relative L2
  double max = 0;         // largest relative L2 anywhere
};

// Per-site drift over all sequences of a diff's JSON, in the diff's site order.
std::vector<std::pair<std::string, SiteDrift>> site_drift(const nlohmann::json& j) {
  std::vector<std::pair<std::string, SiteDrift>> out;
  for (const auto& seq : j["sequences"]) {
    for (const auto& d : seq["drift"]) {
      const std::string site = d.value("site", "?");
      auto it =
          std::find_if(out.begin(), out.end(), [&](const auto& p) { return p.first == site; });
      if (it == out.end()) it = out.insert(out.end(), {site, {}});
      it->second.median_max = std::max(it->second.median_max, d.value("rel_l2_median", 0.0));
      it->second.max = std::max(it->second.max, d.value("rel_l2_max", 0.0));
    }
  }
  return out;
}

// Prints the per-site drift of a diff (the "reported" part of the whole-model checks).
void report_drift(const std::string& title, const nlohmann::json& j) {
  std::string lines = title + "\n";
  for (const auto& [site, d] : site_drift(j)) {
    lines += fmt::format("  {:<14} rel_l2: largest per-sequence median {:.3g}, max {:.3g}\n", site,
                         d.median_max, d.max);
  }
  WARN(lines);
}

int flipped_sequences(const std::string& a, const std::string& b) {
  const auto ra = trace::TraceReader::open(a), rb = trace::TraceReader::open(b);
  int flipped = 0;
  for (int s : ra.sequence_indices()) flipped += ra.sequence(s).tokens != rb.sequence(s).tokens;
  return flipped;
}

}  // namespace

TEST_CASE("CUDA fp32 generates the CPU fp64 oracle's greedy tokens on the bundled prompts",
          "[cuda][model]") {
  TempDir dir("ds-cuda");
  const std::string oracle = traced(dir, "fp64", "--device cpu --dtype fp64", 100);
  for (const char* gemm : {"cublas", "tiled"}) {
    const std::string gpu =
        traced(dir, gemm, fmt::format("--device cuda --dtype fp32 --kernel gemm={}", gemm), 100);
    INFO("gemm=" << gemm);
    CHECK(flipped_sequences(oracle, gpu) == 0);
    const nlohmann::json j = diff_json(oracle, gpu);
    report_drift(fmt::format("CUDA fp32 (gemm={}) vs CPU fp64, 32 prompts x 100 tokens:", gemm), j);
    for (const auto& [site, d] : site_drift(j)) {
      // fp32 vs fp64 through 5 layers: relative drift ~1e-7..1e-6 per site; 1e-4 would mean a
      // wrong op, not rounding
      INFO(site);
      CHECK(d.max < 1e-4);
    }
  }
}

TEST_CASE("CUDA bf16 against the CPU bf16 emulation: drift reported", "[cuda][model]") {
  TempDir dir("ds-cuda");
  const std::string cpu = traced(dir, "cpu-bf16", "--device cpu --dtype bf16", 100);
  const std::string gpu =
      traced(dir, "gpu-bf16", "--device cuda --dtype bf16 --kernel gemm=tiled", 100);
  const int flips = flipped_sequences(cpu, gpu);
  const nlohmann::json j = diff_json(cpu, gpu);
  report_drift(
      fmt::format("CUDA bf16 (tiled) vs CPU bf16 emulation: {} of 32 sequences flip", flips), j);
  // The embedding is a gather of the same bf16 weights: identical on both.
  const auto drift = site_drift(j);
  REQUIRE(!drift.empty());
  CHECK(drift.front().first == "embed");
  CHECK(drift.front().second.max == 0.0);
}

TEST_CASE("CUDA taps do not change a single logit", "[cuda][model][taps]") {
  const Model m = load_model(model_bin());
  const std::vector<int32_t> prompt = {1,   403, 407, 261,
                                       378, 433, 5,   22};  // ids < 1024: kjv-llama's vocabulary
  for (DType d : {DType::fp32, DType::bf16}) {
    Numerics nx;
    nx.dtype = d;
    nx.device = Device::cuda;
    auto plain = make_cuda_runtime(m, nx, 64);
    auto tapped = make_cuda_runtime(m, nx, 64);
    CaptureHook hook;
    tapped->set_tap_hook(&hook);
    std::vector<double> a, b;
    plain->forward(prompt, 0, a);
    tapped->forward(prompt, 0, b);
    INFO(dtype_name(d));
    REQUIRE(a.size() == b.size());
    CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
    CHECK(hook.by_site.count(fmt::format("L{}/out", m.config.n_layers - 1)) == 1);  // the last
    CHECK(hook.by_site.count("logits") == 1);
  }
}

TEST_CASE("CUDA traces record every kernel with its tap site", "[cuda][kernels]") {
  TempDir dir("ds-cuda");
  const std::string t = traced(dir, "k", "--device cuda --kernel gemm=tiled --kernels on", 8);
  const auto r = trace::TraceReader::open(t);
  REQUIRE(r.has_kernels());
  const auto records = r.kernels();
  std::set<std::string> sites, ops;
  bool tiled = false;
  for (const auto& k : records) {
    sites.insert(k.site);
    ops.insert(k.op);
    tiled |= k.name.find("gemm_tiled_kernel") != std::string::npos;
    CHECK(k.duration_ns > 0);
  }
  CHECK(tiled);
  CHECK(sites.count("embed") == 1);
  CHECK(sites.count("L0/attn_out") == 1);
  CHECK(sites.count("logits") == 1);
  CHECK(sites.count("") == 0);  // every kernel launched inside an op
  for (const char* op : {"q_proj", "attention", "o_proj", "gate_proj", "swiglu", "lm_head"}) {
    CHECK(ops.count(op) == 1);
  }
}

}  // namespace ds::test

namespace ds::test {

TEST_CASE("The diff of gemm=cublas and gemm=tiled traces lists the differing kernels per site",
          "[cuda][kernels]") {
  TempDir dir("ds-cuda");
  const std::string a = traced(dir, "cublas", "--device cuda --kernel gemm=cublas --kernels on", 8);
  const std::string b = traced(dir, "tiled", "--device cuda --kernel gemm=tiled --kernels on", 8);
  const nlohmann::json k = diff_json(a, b)["kernels"];
  std::set<std::string> listed;
  for (const auto& s : k["sites"]) listed.insert(s["site"].get<std::string>());
  // GEMMs run at attn_out (q/k/v/o projections), mlp_out (gate/up/down) and logits (lm_head);
  // the norms, RoPE, attention, SwiGLU and residual adds are the same kernels on both sides.
  const int n_layers = load_model(model_bin()).config.n_layers;
  for (int l = 0; l < n_layers; ++l) {
    CHECK(listed.count(fmt::format("L{}/attn_out", l)) == 1);
    CHECK(listed.count(fmt::format("L{}/mlp_out", l)) == 1);
    CHECK(listed.count(fmt::format("L{}/out", l)) == 0);
  }
  CHECK(listed.count("logits") == 1);
  CHECK(listed.count("embed") == 0);
  for (const auto& s : k["sites"]) {
    if (s["site"] != "L0/attn_out") continue;
    bool tiled_only_b = false, q_proj_only_a = false;
    for (const auto& u : s["only_b"]) {
      tiled_only_b |= u["name"].get<std::string>().find("gemm_tiled_kernel") != std::string::npos;
    }
    for (const auto& u : s["only_a"]) q_proj_only_a |= u["op"] == "q_proj";
    CHECK(tiled_only_b);
    CHECK(q_proj_only_a);
  }
}

}  // namespace ds::test

namespace ds::test {
namespace {

// Every sequence's tokens, top-k and log-sum-exp rows, and hidden site `site` (when given) of two
// traces are the same bits.
void check_identical(const std::string& a, const std::string& b, const std::string& site = "") {
  const auto ra = trace::TraceReader::open(a), rb = trace::TraceReader::open(b);
  REQUIRE(ra.sequence_indices() == rb.sequence_indices());
  for (int s : ra.sequence_indices()) {
    INFO("sequence " << s);
    const auto sa = ra.sequence(s), sb = rb.sequence(s);
    REQUIRE(sa.tokens == sb.tokens);
    REQUIRE(sa.rows == sb.rows);
    const auto ta = ra.topk(s, 0, sa.rows), tb = rb.topk(s, 0, sb.rows);
    CHECK(ta.ids == tb.ids);
    CHECK(std::memcmp(ta.logits.data(), tb.logits.data(), ta.logits.size() * sizeof(float)) == 0);
    const auto la = ra.lse(s, 0, sa.rows), lb = rb.lse(s, 0, sb.rows);
    CHECK(std::memcmp(la.data(), lb.data(), la.size() * sizeof(float)) == 0);
    if (!site.empty()) {
      const auto ha = ra.hidden(s, site, 0, sa.rows), hb = rb.hidden(s, site, 0, sb.rows);
      CHECK(std::memcmp(ha.data(), hb.data(), ha.size() * sizeof(float)) == 0);
    }
  }
}

// Sets an environment variable for the runs of this scope (run_cli's child inherits it).
struct ScopedEnv {
  ScopedEnv(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~ScopedEnv() { unsetenv(name_); }
  const char* name_;
};

double site_drift_max(const nlohmann::json& j, const std::string& site) {
  for (const auto& [s, d] : site_drift(j)) {
    if (s == site) return d.max;
  }
  FAIL("no site " << site << " in the diff");
  return 0;
}

}  // namespace

TEST_CASE("CUDA graphs and taps change no token and no logit bit, at batch 1 and 8",
          "[cuda][model][taps][graphs]") {
  // The observer proof on the device: a run with every probe against one with none (CUDA graphs
  // on, the default), and against one without graphs; the logits summaries computed on the
  // device against the host's top-k of whole rows.
  TempDir dir("ds-cuda");
  for (int batch : {1, 8}) {
    INFO("batch " << batch);
    // --kernels off: kernel records (CUPTI) would turn the graphs off
    const std::string common =
        fmt::format("--device cuda --dtype bf16 --kernels off --batch {}", batch);
    const std::string none =
        traced(dir, fmt::format("none{}", batch), common + " --probes none", 40);
    const std::string all = traced(dir, fmt::format("all{}", batch), common + " --probes all", 40);
    check_identical(none, all);
    {
      ScopedEnv off("DRIFTSCOPE_CUDA_GRAPHS", "0");
      const std::string eager =
          traced(dir, fmt::format("eager{}", batch), common + " --probes all", 40);
      check_identical(all, eager, "L1/out");
    }
    const std::string rows =
        traced(dir, fmt::format("rows{}", batch), common + " --probes none --full-logits", 40);
    const auto ra = trace::TraceReader::open(none), rb = trace::TraceReader::open(rows);
    for (int s : ra.sequence_indices()) {  // device top-k = the host's, lse within a float ulp
      const auto sa = ra.sequence(s), sb = rb.sequence(s);
      REQUIRE(sa.tokens == sb.tokens);
      const auto ta = ra.topk(s, 0, sa.rows), tb = rb.topk(s, 0, sb.rows);
      CHECK(ta.ids == tb.ids);
      CHECK(ta.logits == tb.logits);
      const auto la = ra.lse(s, 0, sa.rows), lb = rb.lse(s, 0, sb.rows);
      for (size_t i = 0; i < la.size(); ++i) {
        CHECK(std::abs(la[i] - lb[i]) <= 1.2e-7 * std::abs(lb[i]));
      }
    }
  }
}

TEST_CASE("CUDA batch 8 is batch 1 bit for bit with the tiled GEMM and the invariant policy",
          "[cuda][model][invariance]") {
  // Every op is then batch-invariant: the tiled GEMM's order does not depend on M, attention and
  // the norms are per row. What batch 8 adds is the batched attention call (one launch for all
  // sequences, keys and values appended by one kernel) and the recorded decode steps.
  TempDir dir("ds-cuda");
  for (const char* dtype : {"bf16", "fp32"}) {
    INFO(dtype);
    const std::string flags = fmt::format(
        "--device cuda --dtype {} --kernel gemm=tiled --gemm-policy invariant --probes default "
        "--kernels off",
        dtype);
    const std::string one = traced(dir, fmt::format("b1{}", dtype), flags + " --batch 1", 60);
    const std::string eight = traced(dir, fmt::format("b8{}", dtype), flags + " --batch 8", 60);
    check_identical(one, eight, "L3/out");
  }
}

TEST_CASE(
    "CUDA tiled attention follows the CPU's emulation of its order more closely than the "
    "row-wise order does",
    "[cuda][model][attention]") {
  TempDir dir("ds-cuda");
  const std::string cpu_tiled =
      traced(dir, "cpu-tiled", "--device cpu --dtype bf16 --kernel attention=tiled", 30);
  const std::string cpu_rowwise = traced(dir, "cpu-rowwise", "--device cpu --dtype bf16", 30);
  const std::string gpu_tiled = traced(
      dir, "gpu-tiled", "--device cuda --dtype bf16 --kernel gemm=tiled,attention=tiled", 30);
  const nlohmann::json gpu = diff_json(cpu_tiled, gpu_tiled);
  const nlohmann::json orders = diff_json(cpu_tiled, cpu_rowwise);
  report_drift("CUDA bf16 attention=tiled vs the CPU's tiled emulation:", gpu);
  report_drift("CPU bf16 attention=rowwise vs attention=tiled:", orders);
  // The first attention output: the GPU's differs from the emulation by the tensor cores' order
  // inside a 16-wide step and expf; the other order by where p is rounded and divided.
  const double gpu_drift = site_drift_max(gpu, "L0/attn_out");
  const double order_drift = site_drift_max(orders, "L0/attn_out");
  WARN("L0/attn_out max relative L2: GPU tiled vs CPU tiled "
       << gpu_drift << ", CPU rowwise vs tiled " << order_drift);
  CHECK(order_drift > 0);
  CHECK(gpu_drift < order_drift);
}

TEST_CASE("CUDA refuses a runtime larger than the device's memory before allocating it",
          "[cuda][memory]") {
  const Model m = load_model(model_bin());
  Numerics nx;
  nx.dtype = DType::fp32;
  nx.device = Device::cuda;
  // kjv-llama's KV cache is 2 KiB per position and sequence: 300,000 sequences of 512
  // positions ask for about 300 GiB
  try {
    make_cuda_runtime(m, nx, 512, 300000);
    FAIL("no refusal");
  } catch (const Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("GiB of GPU memory"));
    CHECK_THAT(e.hint(), Catch::Contains("--batch"));
  }
}

}  // namespace ds::test
