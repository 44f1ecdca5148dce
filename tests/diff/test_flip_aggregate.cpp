// The flips' aggregate against hand-built per-sequence reports (tests/diff/flip_fixture.h): every
// count, percentage, spread and histogram cell worked out by hand from the fixture's values.
#include <catch2/catch.hpp>
#include <cmath>

#include "diff/flip_aggregate.h"
#include "tests/diff/flip_fixture.h"

using ds::diff::aggregate_flips;
using ds::diff::MarginClass;
using ds::diff::Place;

TEST_CASE("flip aggregate: steps and margins of hand-built pairs", "[diff][flips]") {
  const auto f = ds::test::flip_fixture();
  const auto a = aggregate_flips(f.pairs(), 0.05);
  CHECK(a.pairs == 5);
  CHECK(a.flips == 4);  // sequence 3 has none
  REQUIRE(a.cases.size() == 5);
  CHECK_FALSE(a.cases[3].flipped);
  REQUIRE(a.notes.size() == 1);
  CHECK(a.notes[0] == "sequence 3 left out: no flip (drift without flip)");
  // the teacher-forced sequence: row 3 (row 0 is a prompt row), step 3 − (2 − 1) = 2
  CHECK(a.cases[1].forced);
  CHECK(a.cases[1].row == 3);
  CHECK(a.cases[1].step == 2);
  CHECK(a.cases[1].margin_logit_a == 0.3);
  CHECK(a.cases[1].margin_logit_b == -0.1);
  CHECK(a.cases[1].logit_drift == 0.2);
  CHECK_FALSE(a.cases[0].forced);
  CHECK(a.cases[2].row == 11);
  // steps 2, 2, 10, 5 → sorted 2 2 5 10: q1 at rank 0.75 = 2, median (2 + 5) / 2, q3 at rank
  // 2.25 = 5 + 0.25·5
  CHECK(a.steps.steps == std::vector<int>{2, 2, 5, 10});
  CHECK(a.steps.spread.min == 2);
  CHECK(a.steps.spread.q1 == 2);
  CHECK(a.steps.spread.median == 3.5);
  CHECK(a.steps.spread.q3 == 6.25);
  CHECK(a.steps.spread.max == 10);
  // margins 0.01, 0.3, 0.02, 6 against 0.05: near ties 0.01 and 0.02; 0.3 in [0.05, 0.5);
  // 6 ≥ 5
  CHECK(a.cases[0].margin == MarginClass::near_tie);
  CHECK(a.cases[1].margin == MarginClass::accumulated);
  CHECK(a.cases[2].margin == MarginClass::near_tie);
  CHECK(a.cases[4].margin == MarginClass::accumulated);
  CHECK(a.margins.near_tie == 2);
  CHECK(a.margins.accumulated == 2);
  CHECK(a.margins.unknown == 0);
  CHECK(a.margins.decades[0] == 2);
  CHECK(a.margins.decades[1] == 1);
  CHECK(a.margins.decades[2] == 0);
  CHECK(a.margins.decades[3] == 1);
  CHECK(a.margins.margin_logit_a.median == Approx((0.02 + 0.3) / 2));
  CHECK(a.margins.margin_logit_a.min == 0.01);
  CHECK(a.margins.margin_logit_a.max == 6.0);
  // logit drift at the flip rows 0.02, 0.2, 0.05, 4 → median (0.05 + 0.2) / 2
  CHECK(a.margins.logit_drift.median == Approx(0.125));
  // with a threshold of 0.5, 0.3 is a near tie too
  CHECK(aggregate_flips(f.pairs(), 0.5).margins.near_tie == 3);
}

TEST_CASE("flip aggregate: onset and birth histograms of hand-built pairs", "[diff][flips]") {
  const auto f = ds::test::flip_fixture();
  const auto a = aggregate_flips(f.pairs(), 0.05);
  // onsets: L0/attn_out, L1/mlp_out, L0/resid_mid (attention half), none
  CHECK(a.cases[0].onset == Place{"attention", 0});
  CHECK(a.cases[1].onset == Place{"mlp", 1});
  CHECK(a.cases[2].onset == Place{"attention", 0});
  CHECK_FALSE(a.cases[4].has_onset);
  REQUIRE(a.onset.cells.size() == 2);
  CHECK(a.onset.cells[0].place == Place{"attention", 0});
  CHECK(a.onset.cells[0].count == 2);
  CHECK(a.onset.cells[1].place == Place{"mlp", 1});
  CHECK(a.onset.cells[1].count == 1);
  CHECK(a.onset.none == 1);
  CHECK(a.onset.by_layer == std::vector<int>{2, 1});
  // births: first verdict block above 1e-3 in forward order; sequence 2's whole-layer block L0
  // (3e-3) is not a verdict block when attention and MLP are split
  CHECK(a.cases[0].birth_block == "L0 attention");
  CHECK(a.cases[0].birth_local == 5e-3);
  CHECK(a.cases[1].birth_block == "L0 mlp");
  CHECK(a.cases[2].birth_block == "L1 attention");
  CHECK_FALSE(a.cases[4].has_birth);
  REQUIRE(a.birth.cells.size() == 3);
  CHECK(a.birth.cells[0].place == Place{"attention", 0});
  CHECK(a.birth.cells[1].place == Place{"mlp", 0});
  CHECK(a.birth.cells[2].place == Place{"attention", 1});
  REQUIRE(a.birth.kinds.size() == 2);
  CHECK(a.birth.kinds[0].kind == "attention");
  CHECK(a.birth.kinds[0].count == 2);
  CHECK(a.birth.kinds[1].kind == "mlp");
  CHECK(a.birth.kinds[1].count == 1);
  CHECK(a.birth.none == 1);
  CHECK(a.birth.by_layer == std::vector<int>{2, 1});
  // largest local error: L1 mlp 8e-3 of 5e-3 + 1e-4 + 2e-3 + 8e-3; L1 attention 1e-2 of
  // 1e-4 + 2e-3 + 1e-2; L1 attention alone
  CHECK(a.cases[0].top_block == "L1 mlp");
  CHECK(a.cases[0].top_share == Approx(8e-3 / 15.1e-3));
  CHECK(a.cases[1].top_block == "L1 attention");
  CHECK(a.cases[1].top_share == Approx(1e-2 / 12.1e-3));
  CHECK(a.cases[2].top_share == Approx(1.0));
  CHECK_FALSE(a.cases[4].has_top);
  REQUIRE(a.top.cells.size() == 2);
  CHECK(a.top.cells[0].place == Place{"attention", 1});
  CHECK(a.top.cells[0].count == 2);
  CHECK(a.top.cells[1].place == Place{"mlp", 1});
  CHECK(a.top.none == 1);
  // 2 of 4 near ties; births by kind: attention 2 of 4, in layers 0 and 1
  CHECK(a.summary ==
        "50% of the 4 flips were near-ties under 0.05 logit; error is born in attention of "
        "layers 0–1 (50%)");
  CHECK(a.storage == "bf16");
  CHECK(a.noise_floor == 1e-3);
}

TEST_CASE("flip aggregate: drift per layer at the flip rows", "[diff][flips]") {
  const auto f = ds::test::flip_fixture();
  const auto a = aggregate_flips(f.pairs(), 0.05);
  REQUIRE(a.layers.size() == 2);
  // L0 at the flip rows of 0, 1, 2, 4: 1e-4, 2e-3, 0, 1e-2 (stored as float)
  const auto& l0 = a.layers[0];
  CHECK(l0.rel_l2.n == 4);
  CHECK(l0.rel_l2.median == Approx((1e-4 + 2e-3) / 2).epsilon(1e-6));
  CHECK(l0.rel_l2.max == Approx(1e-2).epsilon(1e-6));
  // above the site floor 3e-3: 1e-2 alone (2e-3 is above the attribution's 1e-3, not counted)
  CHECK(l0.above_floor == 1);
  CHECK(l0.site_floor == 3e-3);
  CHECK(l0.site_storage == "float16");
  CHECK(a.site_storage == "float16");
  CHECK(std::isnan(l0.growth_median));
  // L1: 5e-4, 4e-3, 5e-3, 1e-2; above the site floor: the last three
  const auto& l1 = a.layers[1];
  CHECK(l1.rel_l2.median == Approx(4.5e-3).epsilon(1e-6));
  CHECK(l1.above_floor == 3);
  // growth L1/L0 per flip: 5, 2, (0 base: none), 1 → median 2
  CHECK(l1.growth_median == Approx(2.0).epsilon(1e-6));
  // whole-layer local error over the flipped sequences 0, 1, 2, 4
  CHECK(l0.local.median == Approx(2.5e-3));
  CHECK(l1.local.median == Approx(5e-3));
  CHECK(l1.local.n == 4);

  // Each flip counts against its own site floor: sequence 4's L1 stored coarser (2e-2) keeps its
  // 1e-2 below; the layer's floor is then not one number.
  auto g = ds::test::flip_fixture();
  g.report.sequences[4].drift[1].noise_floor = 2e-2;
  const auto b = aggregate_flips(g.pairs(), 0.05);
  CHECK(b.layers[1].above_floor == 2);
  CHECK(std::isnan(b.layers[1].site_floor));
  CHECK(b.layers[1].site_storage.empty());
  CHECK(b.layers[0].site_floor == 3e-3);
  CHECK(b.site_storage.empty());
}

TEST_CASE("flip aggregate: pairs missing from their reports and no flips at all", "[diff][flips]") {
  auto f = ds::test::flip_fixture();
  std::vector<ds::diff::ZoomedPair> pairs = {{&f.report, &f.attribution, 7},
                                             {&f.report, &f.attribution, 3}};
  const auto a = aggregate_flips(pairs);
  CHECK(a.flips == 0);
  CHECK(a.pairs == 2);
  REQUIRE(a.notes.size() == 2);
  CHECK(a.notes[0] == "sequence 7 left out: not in its diff");
  CHECK(a.summary == "no flips among the 2 zoomed sequences");
  CHECK(std::isnan(a.steps.spread.median));
  // a one-sequence report is read whatever its index (zoom may renumber)
  ds::diff::Report one;
  one.sequences.push_back(f.report.sequences[4]);
  one.sequences[0].index = 0;
  ds::diff::AttributionReport att = f.attribution;
  att.sequence_ids = {9, 1, 2, 3, 4};
  const auto b = aggregate_flips({{&one, &att, 4}});
  CHECK(b.flips == 1);
  CHECK(b.cases[0].step == 5);
  CHECK(b.cases[0].margin == MarginClass::accumulated);
  CHECK(b.summary.rfind("0% of the 1 flip was a near-tie under 0.05 logit", 0) == 0);
}

TEST_CASE("flip aggregate: sites and blocks as places", "[diff][flips]") {
  using ds::diff::site_place;
  CHECK(site_place("embed") == Place{"embed", -1});
  CHECK(site_place("L3/attn_norm") == Place{"attention", 3});
  CHECK(site_place("L3/attn_out") == Place{"attention", 3});
  CHECK(site_place("L3/resid_mid") == Place{"attention", 3});
  CHECK(site_place("L12/mlp_norm") == Place{"mlp", 12});
  CHECK(site_place("L12/mlp_out") == Place{"mlp", 12});
  CHECK(site_place("L12/out") == Place{"mlp", 12});
  CHECK(site_place("final_norm") == Place{"final_norm", -1});
  CHECK(site_place("logits") == Place{"logits", -1});
  CHECK(ds::diff::place_text("attention", {0, 1, 2, 3, 4}) == "attention of layers 0–4");
  CHECK(ds::diff::place_text("mlp", {3}) == "mlp of layer 3");
  CHECK(ds::diff::place_text("layer", {2, 5}) == "layers 2, 5");
  CHECK(ds::diff::place_text("final_norm", {}) == "final_norm");
  const auto s = ds::diff::spread_of({4, NAN, 1, 3, 2});
  CHECK(s.n == 4);
  CHECK(s.median == 2.5);
  CHECK(s.q1 == 1.75);
  CHECK(s.q3 == 3.25);
}
