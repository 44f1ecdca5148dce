// Trace round trip: what the reader returns is what the runtime produced (bit for bit in f32,
// round-to-nearest-even in f16/bf16), and the logits datasets obey their invariants.
#include <algorithm>
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <numeric>

#include "common/float_formats.h"
#include "src/experiment/generate.h"
#include "src/experiment/trace_recorder.h"
#include "src/experiment/traced_run.h"
#include "src/model/model.h"
#include "src/runtime/runtime.h"
#include "tests/support/capture_hook.h"
#include "tests/support/paths.h"
#include "tests/support/temp_dir.h"
#include "trace/reader.h"
#include "trace/schema.h"

namespace {

ds::TracedRunOptions options(const std::filesystem::path& out, const std::string& probes,
                             ds::Storage hd, int n_layers) {
  ds::TracedRunOptions o;
  o.config.max_new = 24;
  o.sites = ds::resolve_probes(probes, n_layers);
  o.writer.path = out;
  o.writer.hidden_dtype = hd;
  o.writer.topk = 20;
  o.writer.full_logits = true;
  o.eos_id = 2;
  return o;
}

// The same generation with a capturing hook: every site's rows in position order.
ds::test::CaptureHook capture(const ds::Model& m, const std::vector<int32_t>& prompt, int max_new) {
  ds::test::CaptureHook hook;
  auto rt = ds::make_cpu_runtime(m, ds::DType::fp32, m.config.max_seq_len);
  rt->set_tap_hook(&hook);
  ds::GenerateOptions g;
  g.max_new = max_new;
  g.eos_id = 2;
  ds::generate(*rt, prompt, g);
  return hook;
}

}  // namespace

TEST_CASE("trace round trip: f32 bit-exact, f16/bf16 round to nearest even", "[trace]") {
  ds::test::TempDir dir;
  const ds::Model m = ds::load_model(ds::test::model_bin());
  const std::vector<int32_t> prompt = {1, 403, 407, 261,
                                       378};  // BOS and four ids of the vocabulary
  const auto ref = capture(m, prompt, 24);
  for (auto hd : {ds::Storage::native, ds::Storage::f16, ds::Storage::bf16}) {
    INFO("hidden dtype " << ds::trace::hidden_dtype_name(hd));
    const auto path = dir.path() / (std::string("t_") + ds::trace::hidden_dtype_name(hd) + ".h5");
    auto res =
        ds::run_traced(m, {{std::nullopt, prompt}}, options(path, "all", hd, m.config.n_layers));
    REQUIRE(res.complete);
    auto r = ds::trace::TraceReader::open(path);
    CHECK(r.complete());
    auto seq = r.sequence(0);
    REQUIRE(seq.tokens == res.sequences[0].tokens);
    REQUIRE(seq.rows == static_cast<int64_t>(seq.tokens.size()) - 1);
    REQUIRE(seq.sites.size() == ds::trace::all_sites(m.config.n_layers).size());
    for (const auto& site : seq.sites) {
      INFO("site " << site.name);
      const auto got = r.hidden(0, site.name, 0, seq.rows);
      const auto& want = ref.by_site.at(site.name);
      REQUIRE(got.size() == want.size());
      size_t bad = 0;
      for (size_t i = 0; i < got.size(); ++i) {
        const float expect = hd == ds::Storage::native ? want[i]
                             : hd == ds::Storage::f16  ? ds::round_to_f16(want[i])
                                                       : ds::round_to_bf16(want[i]);
        bad += std::bit_cast<uint32_t>(got[i]) != std::bit_cast<uint32_t>(expect);
      }
      CHECK(bad == 0);
    }
    // Full logits are float32 of the runtime's logits; top-K equals a sort of the full row.
    const int V = m.config.vocab_size;
    const auto full = r.full_logits(0, 0, seq.rows);
    const auto& want_logits = ref.by_site.at("logits");
    REQUIRE(full.size() == want_logits.size());
    CHECK(std::equal(full.begin(), full.end(), want_logits.begin()));
    const auto topk = r.topk(0, 0, seq.rows);
    const auto lse = r.lse(0, 0, seq.rows);
    REQUIRE(topk.k == 20);
    for (int64_t row = 0; row < seq.rows; ++row) {
      std::vector<int32_t> order(V);
      std::iota(order.begin(), order.end(), 0);
      const float* lrow = &full[row * V];
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return lrow[a] > lrow[b]; });
      for (int k = 0; k < 20; ++k) {
        REQUIRE(topk.ids[row * 20 + k] == order[k]);
        REQUIRE(topk.logits[row * 20 + k] == lrow[order[k]]);
        if (k > 0) REQUIRE(topk.logits[row * 20 + k] <= topk.logits[row * 20 + k - 1]);
      }
      REQUIRE(lse[row] >= topk.logits[row * 20]);
      double s = 0;  // independent log-sum-exp in double
      for (int i = 0; i < V; ++i) s += std::exp(double(lrow[i]) - lrow[order[0]]);
      REQUIRE(std::abs(lse[row] - (lrow[order[0]] + std::log(s))) < 1e-5);
      // Greedy: the top-1 of row r is the token chosen at r + 1 (for generated positions).
      if (row + 1 >= seq.prompt_len) REQUIRE(topk.ids[row * 20] == seq.tokens[row + 1]);
    }
  }
}

TEST_CASE("probes select the recorded sites", "[trace]") {
  CHECK(ds::resolve_probes("none", 2).empty());
  CHECK(ds::resolve_probes("default", 2) ==
        std::vector<std::string>{"embed", "L0/attn_out", "L0/mlp_out", "L0/out", "L1/attn_out",
                                 "L1/mlp_out", "L1/out", "final_norm"});
  CHECK(ds::resolve_probes("final_norm,L*/attn_norm,embed", 2) ==
        std::vector<std::string>{"embed", "L0/attn_norm", "L1/attn_norm", "final_norm"});
  CHECK(ds::resolve_probes("all", 1).size() == 8);
  CHECK_THROWS_WITH(ds::resolve_probes("L9/out", 2), Catch::Contains("unknown probe 'L9/out'"));
  CHECK_THROWS_WITH(ds::resolve_probes("L*/nope", 2), Catch::Contains("unknown probe"));
}

TEST_CASE("several prompts make one group each and metadata is recorded", "[trace]") {
  ds::test::TempDir dir;
  const ds::Model m = ds::load_model(ds::test::model_bin());
  const auto path = dir.path() / "multi.h5";
  auto opt = options(path, "default", ds::Storage::native, m.config.n_layers);
  opt.writer.full_logits = false;
  opt.info.config_json = R"({"dtype":"fp32"})";
  opt.info.model_json = R"({"architecture":"llama"})";
  std::vector<ds::Prompt> prompts = {{"a", {1, 403}}, {"b", {1, 306}}, {"c", {1, 319, 407}}};
  auto res = ds::run_traced(m, prompts, opt);
  REQUIRE(res.complete);
  auto r = ds::trace::TraceReader::open(path);
  CHECK(r.sequence_indices() == std::vector<int>{0, 1, 2});
  CHECK(r.config_json() == R"({"dtype":"fp32"})");
  CHECK(r.model_json() == R"({"architecture":"llama"})");
  for (int i = 0; i < 3; ++i) {
    auto s = r.sequence(i);
    CHECK(s.prompt_len == static_cast<int>(prompts[i].ids.size()));
    CHECK(s.tokens == res.sequences[i].tokens);
    CHECK(s.gen_len == static_cast<int>(s.tokens.size()) - s.prompt_len);
    CHECK(s.stop_reason == res.sequences[i].stop_reason);
    CHECK(s.sites.size() == ds::trace::default_sites(m.config.n_layers).size());
    CHECK_FALSE(s.has_full_logits);
  }
}
