// A trace recorded from logits summaries (what the CUDA backend hands over: each row's top-k and
// log-sum-exp, computed on the device) is the trace recorded from whole logits rows, bit for bit;
// and generation's greedy shortcut (PassLogits::argmax) chooses what sample_next chooses.
#include <catch2/catch.hpp>

#include "src/experiment/generate.h"
#include "src/experiment/sampler.h"
#include "src/experiment/trace_recorder.h"
#include "src/model/model.h"
#include "src/runtime/runtime.h"
#include "tests/support/paths.h"
#include "tests/support/temp_dir.h"
#include "trace/reader.h"
#include "trace/topk.h"
#include "trace/writer.h"

namespace {

// Hands the recorder a summary of each logits tap, computed here as trace/topk.h does (the CPU
// backend only hands over whole rows); every other tap passes through.
class Summarising final : public ds::TapHook {
 public:
  explicit Summarising(ds::TraceRecorder& r) : r_(r) {}
  bool wants(const ds::Site& site) override { return r_.wants(site); }
  void on_tap(const ds::Site& site, const ds::TapTensor& t) override {
    if (site.kind != ds::SiteKind::logits) return r_.on_tap(site, t);
    const int k = r_.logits_summary_k();
    std::vector<int32_t> ids;
    std::vector<float> logits, lse;
    for (int row = 0; row < t.rows; ++row) {
      const float* x = t.f32 + static_cast<size_t>(row) * t.width;
      const std::vector<double> wide(x, x + t.width);
      const ds::trace::TopK top = ds::trace::top_k(wide, k);
      ids.insert(ids.end(), top.ids.begin(), top.ids.end());
      for (double v : top.logits) logits.push_back(static_cast<float>(v));
      lse.push_back(static_cast<float>(ds::trace::log_sum_exp(wide)));
    }
    ds::LogitsSummary s;
    s.rows = t.rows;
    s.k = k;
    s.vocab = t.width;
    s.ids = ids.data();
    s.logits = logits.data();
    s.lse = lse.data();
    s.slot = t.slot;
    s.pos = t.pos;
    r_.on_logits(s);
  }

 private:
  ds::TraceRecorder& r_;
};

// Three prompts generated together (batch 3), recorded with or without summarising.
void record(const ds::Model& m, const std::filesystem::path& path, bool summarise) {
  auto rt = ds::make_cpu_runtime(m, ds::DType::bf16, 64, 3);
  ds::trace::WriterOptions wo;
  wo.path = path;
  wo.topk = 7;
  ds::trace::TraceWriter w(wo, {});
  ds::TraceRecorder rec(w, ds::resolve_probes("L0/out", m.config.n_layers));
  Summarising summary(rec);
  rt->set_tap_hook(summarise ? static_cast<ds::TapHook*>(&summary) : &rec);
  const std::vector<ds::SequenceRequest> reqs = {
      {{1, 403, 407}, 0}, {{1, 261, 378, 433, 5}, 1}, {{1, 22}, 2}};
  for (int i = 0; i < 3; ++i) {
    w.begin_sequence(i, reqs[i].prompt);
    rec.bind_slot(i, i);
  }
  ds::GenerateOptions g;
  g.max_new = 12;
  ds::generate_batch(*rt, reqs, g, [&](int i, std::optional<int32_t> tok, const auto&) {
    rec.commit(i, tok ? std::vector<int32_t>{*tok} : std::vector<int32_t>{});
  });
  for (int i = 0; i < 3; ++i) w.end_sequence(i, "max_new");
  REQUIRE(w.finish(true, "finished"));
}

}  // namespace

TEST_CASE("a trace recorded from logits summaries equals the one from whole rows",
          "[trace][recorder]") {
  ds::test::TempDir dir;
  const ds::Model m = ds::load_model(ds::test::model_bin());
  record(m, dir.path() / "rows.h5", false);
  record(m, dir.path() / "summary.h5", true);
  const auto a = ds::trace::TraceReader::open(dir.path() / "rows.h5");
  const auto b = ds::trace::TraceReader::open(dir.path() / "summary.h5");
  for (int s = 0; s < 3; ++s) {
    INFO("sequence " << s);
    const auto sa = a.sequence(s), sb = b.sequence(s);
    REQUIRE(sa.tokens == sb.tokens);
    REQUIRE(sa.rows == sb.rows);
    REQUIRE(sa.topk == 7);
    REQUIRE(sb.topk == 7);
    const auto ta = a.topk(s, 0, sa.rows), tb = b.topk(s, 0, sb.rows);
    CHECK(ta.ids == tb.ids);
    CHECK(ta.logits == tb.logits);
    CHECK(a.lse(s, 0, sa.rows) == b.lse(s, 0, sb.rows));
    CHECK(a.hidden(s, "L0/out", 0, sa.rows) == b.hidden(s, "L0/out", 0, sb.rows));
  }
}

TEST_CASE("greedy generation reads each row's argmax as sample_next would choose it",
          "[generate][sampler]") {
  const ds::Model m = ds::load_model(ds::test::model_bin());
  auto rt = ds::make_cpu_runtime(m, ds::DType::bf16, 64, 1);
  std::vector<int32_t> tokens = {1, 403, 407, 261};
  for (bool highest : {false, true}) {
    ds::SamplingParams p;
    p.highest_id_ties = highest;
    std::vector<ds::BatchRow> rows;
    for (size_t i = 0; i < tokens.size(); ++i) rows.push_back({0, static_cast<int>(i), tokens[i]});
    ds::PassLogits& out = rt->forward(rows);
    for (int r = 0; r < out.rows(); ++r) {
      CHECK(out.argmax(r, highest) == ds::sample_next(out.row(r), p, 0, 0));
    }
  }
}
