// The explain report's aggregate (diff/explain_report.h) and its three renderings
// (viewer/explain_*) from a report built by hand: the causes counted from the flips, the knobs'
// means, and every rendering showing each flip with its onset column (the cause's place), the
// raw onset kept in JSON, text escaped in HTML.
#include <catch2/catch.hpp>
#include <cmath>

#include "diff/explain_report.h"
#include "viewer/explain_html.h"
#include "viewer/explain_json.h"
#include "viewer/explain_terminal.h"

using ds::diff::ExplainReport;
using ds::diff::FlipExplanation;

namespace {

FlipExplanation flip(int seq, const std::string& verdict,
                     std::vector<std::vector<std::string>> sets) {
  FlipExplanation f;
  f.seq = seq;
  f.step = seq + 1;
  f.row = 10 + seq;
  f.verdict = verdict;
  f.knob_sets = std::move(sets);
  f.knob_trials = 4;
  f.margin_before = -0.01;
  f.margin_after = 0.02;
  f.onset = "embed @0";
  f.place = f.onset;
  f.text_a = "<a>";
  f.text_b = " b";
  return f;
}

ExplainReport sample() {
  ExplainReport r;
  r.a_path = "a.h5";
  r.b_path = "b.h5";
  r.engine = "driftscope";
  r.knobs = {{"dtype", "fp32", "bf16"}, {"batch", "1", "8"}};
  FlipExplanation one = flip(3, "explained", {{"dtype"}});
  one.main_effect = {0.03, 0.0};
  one.shapley = {0.03, 0.0};
  one.share = {1.0, 0.0};
  one.interactions = {{{"dtype", "batch"}, 0.001}};
  one.ops.status = "found";
  one.ops.knobs = {"dtype"};
  one.ops.ops = {"L3/down_proj"};
  one.ops.what = {"out fp32→bf16"};
  one.ops.trials = 6;
  one.place = "L3/down_proj";
  FlipExplanation two = flip(5, "explained", {{"dtype"}, {"batch"}});
  two.main_effect = {0.01, 0.02};
  two.shapley = {0.01, 0.02};
  two.share = {1.0 / 3, 2.0 / 3};
  two.interactions = {{{"dtype", "batch"}, -0.003}};
  FlipExplanation three = flip(7, "unresolved", {});
  three.why = "B's configuration replayed: a third token (9) wins";
  r.flips = {one, two, three};
  ds::diff::explain_aggregate(r);
  return r;
}

}  // namespace

TEST_CASE("explain report: the causes and the knobs' means counted from the flips",
          "[viewer][explain]") {
  const ExplainReport r = sample();
  CHECK(r.explained == 2);
  CHECK(r.unresolved == 1);
  CHECK(r.no_cause == 0);
  REQUIRE(r.causes.size() == 2);  // a flip with two sets counts under each
  CHECK(r.causes[0].knobs == std::vector<std::string>{"dtype"});
  CHECK(r.causes[0].seqs == std::vector<int>{3, 5});
  REQUIRE(r.causes[0].ops.size() == 1);
  CHECK(r.causes[0].ops[0].op == "L3/down_proj");
  CHECK(r.causes[1].seqs == std::vector<int>{5});
  CHECK(r.effects[0].in_sets == 2);
  CHECK(r.effects[1].in_sets == 1);
  CHECK(r.effects[0].measured == 2);
  CHECK(r.effects[0].main_mean == Approx(0.02));
  CHECK(r.effects[1].share_mean == Approx(1.0 / 3));
  REQUIRE(r.interactions.size() == 1);
  CHECK(r.interactions[0].second == Approx(-0.001));
  CHECK(r.summary ==
        "3 flips: {dtype} 2 of 3 (first op L3/down_proj in 1), {batch} 1 of 3, "
        "unresolved 1");
}

TEST_CASE("explain report: terminal, JSON and HTML show every flip and its onset column",
          "[viewer][explain]") {
  const ExplainReport r = sample();
  const std::string text = ds::viewer::render_explain_terminal(r, 100);
  CHECK(text.find(r.summary) != std::string::npos);
  CHECK(text.find("── causes (3 flips)") != std::string::npos);
  CHECK(text.find("(a flip with several minimal sets counts under each)") != std::string::npos);
  CHECK(text.find("L3/down_proj") != std::string::npos);
  CHECK(text.find("a third token (9) wins") != std::string::npos);
  const auto j = ds::viewer::explain_json(r);
  CHECK(j["format"] == "driftscope-explain");
  CHECK(j["flips"] == 3);
  REQUIRE(j["sequences"].size() == 3);
  CHECK(j["sequences"][0]["place"] == "L3/down_proj");
  CHECK(j["sequences"][0]["onset"] == "embed @0");  // the raw onset, kept
  CHECK(j["sequences"][0]["ops"]["set"][0] == "L3/down_proj");
  CHECK(j["sequences"][2]["ops"].is_null());
  CHECK(j["sequences"][2]["effects"].is_null());
  const std::string html = ds::viewer::explain_html(r);
  for (int seq : {3, 5, 7}) {
    CHECK(html.find("data-seq=\"" + std::to_string(seq) + "\"") != std::string::npos);
  }
  CHECK(html.find("&lt;a&gt;") != std::string::npos);
  CHECK(html.find("<a>") == std::string::npos);
  CHECK(html.find("<code>L3/down_proj</code>") != std::string::npos);
  // the flips report's onset column: the cause's place where explained, the onset otherwise
  ds::diff::FlipCase c;
  c.seq = 3;
  c.has_onset = true;
  c.onset_site = "embed";
  CHECK(ds::diff::onset_column(c, &r) == "L3/down_proj");
  CHECK(ds::diff::onset_column(c, nullptr) == "embed");
  c.seq = 4;
  CHECK(ds::diff::onset_column(c, &r) == "embed");
}
