// The gate's one-line verdict on hand-made reports: FAIL (or PASS) appears once, a reason that
// fails every condition (NaN, nothing compared) is named once, and each condition says whether it
// holds.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "diff/gate.h"

namespace {

int count(const std::string& s, const std::string& what) {
  int n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

ds::diff::Report one_sequence(bool flip, double drift, int nan_positions) {
  ds::diff::Report r;
  ds::diff::SequenceReport s;
  s.index = 0;
  s.compared = 10;
  if (flip) {
    ds::diff::FirstFlip f;
    f.step = 3;
    f.token_a = 5;
    f.token_b = 6;
    s.first_flip = f;
  }
  ds::diff::SiteDrift d;
  d.site = "L0/out";
  d.rel_l2_max = drift;
  d.rel_l2_max_position = 4;
  d.nan_positions = nan_positions;
  s.drift.push_back(d);
  r.sequences.push_back(s);
  r.summary.sequences = 1;
  r.summary.diverged = flip;
  return r;
}

}  // namespace

TEST_CASE("gate verdict: FAIL appears once, failing conditions are named", "[diff][gate]") {
  using ds::diff::parse_gate;
  const auto g = ds::diff::evaluate_gates(one_sequence(true, 1e-4, 0),
                                          {parse_gate("flip"), parse_gate("drift=1e-3")});
  INFO(g.verdict);
  CHECK(g.failed);
  CHECK(count(g.verdict, "FAIL") == 1);
  CHECK(g.verdict.starts_with("gate FAIL: flip: seq 0 flips at step 3"));
  CHECK(count(g.verdict, "drift=1e-3 ok: ") == 1);
}

TEST_CASE("gate verdict: PASS appears once, every condition says ok", "[diff][gate]") {
  using ds::diff::parse_gate;
  const auto g = ds::diff::evaluate_gates(one_sequence(false, 1e-4, 0),
                                          {parse_gate("flip"), parse_gate("drift=1e-3")});
  INFO(g.verdict);
  CHECK_FALSE(g.failed);
  CHECK(count(g.verdict, "PASS") == 1);
  CHECK(count(g.verdict, "FAIL") == 0);
  CHECK(count(g.verdict, " ok: ") == 2);
}

TEST_CASE("gate verdict: a NaN fails every condition and is named once", "[diff][gate]") {
  using ds::diff::parse_gate;
  const auto g = ds::diff::evaluate_gates(one_sequence(false, 1e-4, 2),
                                          {parse_gate("flip"), parse_gate("drift=1e-3")});
  INFO(g.verdict);
  CHECK(g.failed);
  CHECK(count(g.verdict, "FAIL") == 1);
  CHECK(count(g.verdict, "NaN/Inf") == 1);
  CHECK(count(g.verdict, "(fails flip, drift=1e-3)") == 1);
}

TEST_CASE("gate verdict: a condition over no compared position fails as nothing compared",
          "[diff][gate]") {
  using ds::diff::parse_gate;
  auto r = one_sequence(false, 0, 0);
  r.sequences[0].compared = 0;
  r.sequences[0].drift[0].rel_l2_max_position = -1;
  const std::vector<ds::diff::GateCondition> all = {parse_gate("flip"), parse_gate("drift=0")};
  const auto g = ds::diff::evaluate_gates(r, all);
  INFO(g.verdict);
  CHECK(g.failed);
  CHECK(count(g.verdict, "PASS") == 0);
  CHECK(g.verdict ==
        "gate FAIL: nothing compared: 0 positions in 1 sequence (fails flip, drift=0)");
  r.sequences.clear();
  r.summary.sequences = 0;
  const auto none = ds::diff::evaluate_gates(r, all);
  INFO(none.verdict);
  CHECK(none.failed);
  CHECK(none.verdict.starts_with("gate FAIL: nothing compared: no sequence"));
}
