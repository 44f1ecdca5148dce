// Run-config knobs that change the numerics: invariance where it must
// hold, sensitivity where it must show, and the precision ordering on real prompts.
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>

#include "common/error.h"
#include "common/float_formats.h"
#include "src/experiment/generate.h"
#include "src/experiment/prompts.h"
#include "src/experiment/run_config.h"
#include "src/experiment/trace_recorder.h"
#include "src/experiment/traced_run.h"
#include "src/model/model.h"
#include "src/tokenizer/load.h"
#include "tests/support/compare.h"
#include "tests/support/paths.h"
#include "tests/support/temp_dir.h"
#include "trace/reader.h"
#include "trace/schema.h"

namespace {

std::vector<ds::Prompt> bundled_prompts(const ds::Model& m, size_t n) {
  auto tok = ds::load_tokenizer(ds::test::model_tok(), m.config.vocab_size);
  auto all = ds::read_prompts_file(ds::test::prompts(), tok.get());
  all.resize(std::min(n, all.size()));
  return all;
}

std::filesystem::path trace_of(const ds::Model& m, const std::vector<ds::Prompt>& prompts,
                               const ds::RunConfig& c, const std::filesystem::path& path,
                               const std::string& probes = "all") {
  ds::TracedRunOptions o;
  o.config = c;
  o.sites = ds::resolve_probes(probes, m.config.n_layers);
  o.writer.path = path;
  o.writer.full_logits = true;
  o.eos_id = 2;
  REQUIRE(ds::run_traced(m, prompts, o).complete);
  return path;
}

// Number of (sequence, site) pairs whose stored values differ in any bit; 0 = bit-identical.
int count_differences(const std::filesystem::path& a, const std::filesystem::path& b) {
  auto ra = ds::trace::TraceReader::open(a), rb = ds::trace::TraceReader::open(b);
  int diffs = 0;
  REQUIRE(ra.sequence_indices() == rb.sequence_indices());
  for (int i : ra.sequence_indices()) {
    auto sa = ra.sequence(i), sb = rb.sequence(i);
    if (sa.tokens != sb.tokens) ++diffs;
    const int64_t rows = std::min(sa.rows, sb.rows);
    for (const auto& site : sa.sites) {
      auto va = ra.hidden(i, site.name, 0, rows), vb = rb.hidden(i, site.name, 0, rows);
      for (size_t k = 0; k < va.size(); ++k) {
        if (std::bit_cast<uint32_t>(va[k]) != std::bit_cast<uint32_t>(vb[k])) {
          ++diffs;
          break;
        }
      }
    }
    auto la = ra.full_logits(i, 0, rows), lb = rb.full_logits(i, 0, rows);
    if (la != lb) ++diffs;
  }
  return diffs;
}

std::vector<std::vector<int32_t>> greedy_tokens(const ds::Model& m,
                                                const std::vector<ds::Prompt>& prompts,
                                                const ds::RunConfig& c) {
  auto rt = ds::make_cpu_runtime(m, ds::numerics(c), m.config.max_seq_len, c.batch);
  ds::GenerateOptions g;
  g.max_new = c.max_new;
  g.eos_id = 2;
  std::vector<std::vector<int32_t>> out;
  for (size_t first = 0; first < prompts.size(); first += c.batch) {
    std::vector<ds::SequenceRequest> req;
    for (size_t i = first; i < std::min(prompts.size(), first + c.batch); ++i)
      req.push_back({prompts[i].ids, i});
    for (auto& r : ds::generate_batch(*rt, req, g)) out.push_back(r.tokens);
  }
  return out;
}

ds::RunConfig cfg(const std::string& dtype, int max_new = 40) {
  ds::RunConfig c;
  ds::set_field(c, "dtype", dtype);
  c.max_new = max_new;
  return c;
}

}  // namespace

TEST_CASE("invariant policy: batch 1 and batch 8 give bit-identical traces",
          "[knobs][invariance]") {
  ds::test::TempDir dir;
  const ds::Model m = ds::load_model(ds::test::model_bin());
  const auto prompts = bundled_prompts(m, 8);
  for (const char* dtype : {"bf16", "fp16", "fp32"}) {
    for (int chunk : {0, 3}) {
      INFO(dtype << " prefill_chunk " << chunk);
      auto c = cfg(dtype);
      c.prefill_chunk = chunk;
      c.batch = 1;
      auto a = trace_of(m, prompts, c, dir.path() / "b1.h5");
      c.batch = 8;
      auto b = trace_of(m, prompts, c, dir.path() / "b8.h5");
      CHECK(count_differences(a, b) == 0);
      std::filesystem::remove(a);
      std::filesystem::remove(b);
    }
  }
}

TEST_CASE("fp64 does not move with reduction-order knobs beyond 1e-12", "[knobs][invariance]") {
  const ds::Model m = ds::load_model(ds::test::model_bin());
  const auto prompts = bundled_prompts(m, 4);
  auto base = cfg("fp64", 30);
  auto knobs = base;
  knobs.gemm_policy = ds::GemmPolicy::heuristic;
  knobs.batch = 4;
  knobs.split_k = 4;
  knobs.tp = 4;
  knobs.allreduce = ds::ops::AllReduce::tree;
  knobs.attn_splits = 3;
  knobs.prefill_chunk = 2;
  auto ta = greedy_tokens(m, prompts, base);
  auto tb = greedy_tokens(m, prompts, knobs);
  REQUIRE(ta == tb);
  double worst = 0;
  const int V = m.config.vocab_size;
  for (const auto& toks : ta) {
    auto ra = ds::make_cpu_runtime(m, ds::numerics(base), static_cast<int>(toks.size()));
    auto rb = ds::make_cpu_runtime(m, ds::numerics(knobs), static_cast<int>(toks.size()));
    std::vector<double> la, lb;
    ra->forward(toks, 0, la);
    rb->forward(toks, 0, lb);
    for (size_t r = 0; r < toks.size(); ++r) {
      worst = std::max(worst, ds::test::max_rel_error({lb.data() + r * V, size_t(V)},
                                                      {la.data() + r * V, size_t(V)}));
    }
  }
  INFO("fp64 worst relative logits change " << worst);
  CHECK(worst <= 1e-12);
  CHECK(worst > 0);  // the knobs did take another reduction order
}

TEST_CASE("heuristic policy in bf16: batch 1 vs 8 changes hidden states", "[knobs][sensitivity]") {
  ds::test::TempDir dir;
  const ds::Model m = ds::load_model(ds::test::model_bin());
  const auto prompts = bundled_prompts(m, 8);
  auto c = cfg("bf16", 20);
  c.gemm_policy = ds::GemmPolicy::heuristic;
  c.batch = 1;
  auto a = trace_of(m, prompts, c, dir.path() / "h1.h5");
  c.batch = 8;
  auto b = trace_of(m, prompts, c, dir.path() / "h8.h5");
  CHECK(count_differences(a, b) > 0);
}

TEST_CASE("tp, all-reduce order and attention splits change hidden states",
          "[knobs][sensitivity]") {
  ds::test::TempDir dir;
  const ds::Model m = ds::load_model(ds::test::model_bin());
  const auto prompts = bundled_prompts(m, 2);
  auto base = cfg("bf16", 40);
  auto a = trace_of(m, prompts, base, dir.path() / "base.h5");
  auto tp4 = base;
  tp4.tp = 4;
  CHECK(count_differences(a, trace_of(m, prompts, tp4, dir.path() / "tp4.h5")) > 0);
  auto tree = tp4;
  tree.allreduce = ds::ops::AllReduce::tree;
  CHECK(count_differences(dir.path() / "tp4.h5",
                          trace_of(m, prompts, tree, dir.path() / "tree.h5")) > 0);
  auto splits = base;
  splits.attn_splits = 4;
  CHECK(count_differences(a, trace_of(m, prompts, splits, dir.path() / "sp.h5")) > 0);
  auto splitk = base;
  splitk.split_k = 2;
  CHECK(count_differences(a, trace_of(m, prompts, splitk, dir.path() / "sk.h5")) > 0);
}

TEST_CASE(
    "precision ordering on the bundled prompts: bf16 diverges more and earlier than fp16, "
    "fp16 more than fp32",
    "[knobs][sensitivity]") {
  const ds::Model m = ds::load_model(ds::test::model_bin());
  const auto prompts = bundled_prompts(m, 32);
  const int max_new = 150;
  const auto ref = greedy_tokens(m, prompts, cfg("fp64", max_new));
  struct Stat {
    int diverged = 0;
    double mean_first_flip = 0;  // generated-token index; a sequence without a flip counts max_new
  };
  auto measure = [&](const std::string& dtype) {
    const auto got = greedy_tokens(m, prompts, cfg(dtype, max_new));
    Stat s;
    for (size_t i = 0; i < prompts.size(); ++i) {
      const size_t p = prompts[i].ids.size();
      size_t k = p;
      while (k < ref[i].size() && k < got[i].size() && ref[i][k] == got[i][k]) ++k;
      const bool flip = k < std::max(ref[i].size(), got[i].size());
      s.diverged += flip;
      s.mean_first_flip += flip ? static_cast<double>(k - p) : max_new;
    }
    s.mean_first_flip /= prompts.size();
    return s;
  };
  const Stat bf16 = measure("bf16"), fp16 = measure("fp16"), fp32 = measure("fp32");
  WARN("vs fp64 over " << prompts.size() << " prompts x " << max_new << " tokens: diverged bf16 "
                       << bf16.diverged << ", fp16 " << fp16.diverged << ", fp32 " << fp32.diverged
                       << "; mean first flip bf16 " << bf16.mean_first_flip << ", fp16 "
                       << fp16.mean_first_flip << ", fp32 " << fp32.mean_first_flip);
  CHECK(bf16.diverged > fp16.diverged);
  CHECK(fp16.diverged > fp32.diverged);
  CHECK(bf16.mean_first_flip < fp16.mean_first_flip);
  CHECK(fp16.mean_first_flip < fp32.mean_first_flip);
}

namespace {

// The same model as a bf16 checkpoint (how real checkpoints are distributed): every weight
// rounded to bf16 once.
ds::Model as_bf16_checkpoint(ds::Model m) {
  auto r = [](ds::WeightTensor& t) {
    std::vector<float> v = t.to_vector();
    for (float& x : v) x = ds::round_to_bf16(x);
    t = std::move(v);
  };
  r(m.weights.embed);
  r(m.weights.final_norm);
  r(m.weights.lm_head);
  for (auto& l : m.weights.layers) {
    for (auto* v : {&l.attn_norm, &l.wq, &l.wk, &l.wv, &l.bq, &l.bk, &l.bv, &l.wo, &l.mlp_norm,
                    &l.w_gate, &l.w_up, &l.w_down}) {
      r(*v);
    }
  }
  return m;
}

// Median over positions of the relative L2 drift of the last layer's output against fp32 on the
// same model, teacher-forced on fp32's greedy tokens so every position is comparable.
double median_last_layer_drift(const ds::Model& m, const std::vector<ds::Prompt>& prompts,
                               const std::string& dtype) {
  struct Last : ds::TapHook {
    int layer = 0;
    std::vector<double> out;
    bool wants(const ds::Site& s) override {
      return s.kind == ds::SiteKind::out && s.layer == layer;
    }
    void on_tap(const ds::Site&, const ds::TapTensor& t) override {
      for (int i = 0; i < t.rows * t.width; ++i) out.push_back(t.f32 ? t.f32[i] : t.f64[i]);
    }
  };
  const int D = m.config.dim;
  std::vector<double> rel;
  for (const auto& toks : greedy_tokens(m, prompts, cfg("fp32", 40))) {
    Last a, b;
    a.layer = b.layer = m.config.n_layers - 1;
    auto ra = ds::make_cpu_runtime(m, ds::numerics(cfg("fp32")), static_cast<int>(toks.size()));
    auto rb = ds::make_cpu_runtime(m, ds::numerics(cfg(dtype)), static_cast<int>(toks.size()));
    ra->set_tap_hook(&a);
    rb->set_tap_hook(&b);
    std::vector<double> l;
    ra->forward(toks, 0, l);
    rb->forward(toks, 0, l);
    for (size_t r = 0; r < toks.size(); ++r) {
      double num = 0, den = 0;
      for (int i = 0; i < D; ++i) {
        const double d = b.out[r * D + i] - a.out[r * D + i];
        num += d * d;
        den += a.out[r * D + i] * a.out[r * D + i];
      }
      rel.push_back(std::sqrt(num / den));
    }
  }
  std::sort(rel.begin(), rel.end());
  return rel[rel.size() / 2];
}

}  // namespace

TEST_CASE("layercast drifts far less from fp32 than bf16 does", "[knobs][sensitivity]") {
  const ds::Model m = ds::load_model(ds::test::model_bin());
  const auto prompts = bundled_prompts(m, 8);
  // On a bf16 checkpoint (the LayerCast setting: weights are bf16 either way) layercast computes
  // exactly what fp32 computes; bf16 also stores activations and the KV cache in bf16.
  const ds::Model ck = as_bf16_checkpoint(m);
  const double lc = median_last_layer_drift(ck, prompts, "layercast");
  const double bf = median_last_layer_drift(ck, prompts, "bf16");
  // On the fp32-trained bundled weights, layercast's weight rounding is itself a perturbation.
  const double lc_fp32w = median_last_layer_drift(m, prompts, "layercast");
  const double bf_fp32w = median_last_layer_drift(m, prompts, "bf16");
  WARN("median relative L2 drift of the last layer vs fp32, bf16 checkpoint: layercast "
       << lc << ", bf16 " << bf << "; fp32 checkpoint: layercast " << lc_fp32w << ", bf16 "
       << bf_fp32w);
  CHECK(lc * 100 < bf);
  CHECK(bf > 1e-3);
  CHECK(lc_fp32w < bf_fp32w);
}

TEST_CASE("bad config values are rejected up front, naming the field", "[knobs][errors]") {
  // A value a field does not take is refused where it is parsed, naming the field.
  auto unparsed = [](const std::string& field, const std::string& value) {
    ds::RunConfig c;
    CHECK_THROWS_WITH(ds::set_field(c, field, value), Catch::Contains(field));
  };
  unparsed("dtype", "fp8");
  unparsed("accum", "int8");
  unparsed("gemm_policy", "fast");
  unparsed("split_k", "0");
  unparsed("split_k", "two");
  unparsed("allreduce", "star");
  unparsed("attn_splits", "-1");
  unparsed("prefix_cache", "yes");
  unparsed("tie_break", "random");
  unparsed("add_bos", "maybe");
  unparsed("device", "tpu");
  unparsed("batch", "many");
  // A value out of its range, or two that do not go together, is refused by validate().
  auto bad = [](auto edit, const std::string& field) {
    ds::RunConfig c;
    edit(c);
    CHECK_THROWS_WITH(ds::validate(c), Catch::Contains(field));
  };
  bad(
      [](ds::RunConfig& c) {
        c.dtype = ds::DType::fp32;
        c.accum = ds::Accum::fp16;
      },
      "accum");
  bad([](ds::RunConfig& c) { c.batch = 0; }, "batch");
  bad([](ds::RunConfig& c) { c.split_k = -1; }, "split_k");
  bad([](ds::RunConfig& c) { c.tp = 9; }, "tp");
  bad([](ds::RunConfig& c) { c.attn_splits = -1; }, "attn_splits");
  bad([](ds::RunConfig& c) { c.prefill_chunk = -4; }, "prefill_chunk");
  bad([](ds::RunConfig& c) { c.repetition_penalty = 0; }, "repetition_penalty");
  const ds::Model m = ds::load_model(ds::test::model_bin());  // 8 heads, 4 kv heads
  ds::RunConfig c;
  c.tp = 8;
  CHECK_THROWS_WITH(ds::validate_for_model(c, m.config), Catch::Contains("tp 8"));
  c.tp = 3;
  CHECK_THROWS_WITH(ds::validate_for_model(c, m.config), Catch::Contains("tp 3"));
  c.tp = 4;
  CHECK_NOTHROW(ds::validate_for_model(c, m.config));
}

TEST_CASE("engine defaults: tie break, add_bos, repetition penalty", "[knobs]") {
  std::vector<double> l = {1.0, 3.0, 3.0, 0.5};
  ds::SamplingParams p;
  CHECK(ds::sample_next(l, p, 0, 0) == 1);
  p.highest_id_ties = true;
  CHECK(ds::sample_next(l, p, 0, 0) == 2);
  p.highest_id_ties = false;
  p.repetition_penalty = 2.0;  // 3.0 -> 1.5 for id 1 (seen), so id 2 wins
  const std::vector<int32_t> hist = {1, 1, 3};
  CHECK(ds::sample_next(l, p, 0, 0, hist) == 2);
  std::vector<ds::Prompt> prompts = {{std::nullopt, {1, 5}}, {std::nullopt, {7}}};
  ds::apply_add_bos(prompts, ds::AddBos::on, 1);
  CHECK(prompts[1].ids == std::vector<int32_t>{1, 7});
  ds::apply_add_bos(prompts, ds::AddBos::off, 1);
  CHECK(prompts[0].ids == std::vector<int32_t>{5});
  CHECK(prompts[1].ids == std::vector<int32_t>{7});
}
