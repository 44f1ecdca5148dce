// Independent check: a trace's L<l>/out and logits for the bundled kjv-llama against the test's own
// fp64 forward pass over the Hugging Face weights (tests/support/ref_forward.cpp, not the runtime).
#include <catch2/catch.hpp>

#include "src/experiment/trace_recorder.h"
#include "src/experiment/traced_run.h"
#include "src/model/model.h"
#include "tests/support/compare.h"
#include "tests/support/paths.h"
#include "tests/support/ref_weights.h"
#include "tests/support/temp_dir.h"
#include "trace/reader.h"
#include "trace/schema.h"

TEST_CASE("trace L<l>/out and logits match an independent fp64 forward pass",
          "[trace][reference]") {
  ds::test::TempDir dir;
  const ds::Model m = ds::load_model(ds::test::model_hf());
  const auto ref = ds::test::read_ref_model(ds::test::model_hf());
  ds::TracedRunOptions o;
  o.config.max_new = 40;
  o.sites = ds::resolve_probes("L*/out", m.config.n_layers);
  o.writer.path = dir.path() / "ref.h5";
  o.writer.full_logits = true;
  auto res = ds::run_traced(m, {{std::nullopt, {1, 403, 407, 261, 378}}}, o);
  REQUIRE(res.complete);
  auto r = ds::trace::TraceReader::open(o.writer.path);
  auto seq = r.sequence(0);
  // The oracle runs over the positions the trace recorded.
  const std::vector<int32_t> inputs(seq.tokens.begin(), seq.tokens.begin() + seq.rows);
  std::vector<std::vector<double>> layer_out;
  const auto ref_logits = ds::test::ref_forward(ref.config, ref.weights, inputs, &layer_out);
  // fp32 compute with float32 storage vs fp64: per-row relative error is ~1e-6 (eps 6e-8 over
  // dot products of <= 1024 terms and 4 layers); 1e-5 leaves a tenfold margin.
  const int D = m.config.dim, V = m.config.vocab_size;
  double worst = 0;
  for (int l = 0; l < m.config.n_layers; ++l) {
    const auto got = r.hidden(0, ds::trace::layer_site(l, "out"), 0, seq.rows);
    for (int64_t t = 0; t < seq.rows; ++t) {
      std::vector<double> a(got.begin() + t * D, got.begin() + (t + 1) * D);
      worst = std::max(worst, ds::test::max_rel_error(a, {layer_out[l].data() + t * D, size_t(D)}));
    }
  }
  INFO("worst hidden relative error " << worst);
  CHECK(worst <= 1e-5);
  const auto full = r.full_logits(0, 0, seq.rows);
  double worst_logits = 0;
  for (int64_t t = 0; t < seq.rows; ++t) {
    std::vector<double> a(full.begin() + t * V, full.begin() + (t + 1) * V);
    worst_logits =
        std::max(worst_logits, ds::test::max_rel_error(a, {ref_logits.data() + t * V, size_t(V)}));
  }
  INFO("worst logits relative error " << worst_logits);
  CHECK(worst_logits <= 1e-5);
}
