// `driftscope diff` end to end: a trace against itself, real fp32/fp64 traces of the bundled
// kjv-llama (report and JSON consistent with each other and with the tokens), mismatched
// prompts, different models, truncated traces, NaN, and the exit codes of the gate.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "tests/diff/trace_builder.h"
#include "tests/support/paths.h"
#include "tests/support/run_cli.h"
#include "tests/support/temp_dir.h"
#include "tests/support/text.h"
#include "trace/reader.h"

namespace fs = std::filesystem;
using ds::test::run_cli;
using nlohmann::json;

using ds::test::has;
using ds::test::slurp_json;

namespace {

// Checks the JSON report against the traces themselves and against the terminal report.
void check_against_traces(const json& j, const fs::path& pa, const fs::path& pb,
                          const std::string& text) {
  const auto A = ds::trace::TraceReader::open(pa), B = ds::trace::TraceReader::open(pb);
  REQUIRE(j["format"] == "driftscope-diff");
  REQUIRE(j["version"] == 1);
  int diverged = 0;
  for (const auto& s : j["sequences"]) {
    const int i = s["index"];
    INFO("seq " << i);
    const auto sa = A.sequence(i), sb = B.sequence(i);
    // The flip is the first index where the tokens differ, counted in generated steps.
    size_t d = 0;
    while (d < std::min(sa.tokens.size(), sb.tokens.size()) && sa.tokens[d] == sb.tokens[d]) ++d;
    const bool differ = d < std::min(sa.tokens.size(), sb.tokens.size());
    REQUIRE(s["first_flip"].is_null() == !differ);
    if (differ) {
      ++diverged;
      CHECK(s["first_flip"]["position"] == d);
      CHECK(s["first_flip"]["step"] == static_cast<int>(d) - sa.prompt_len);
      CHECK(s["first_flip"]["token_a"] == sa.tokens[d]);
      CHECK(s["first_flip"]["token_b"] == sb.tokens[d]);
      CHECK(s["first_flip"]["top5_a"].size() == 5);
      CHECK(s["compared"] == d);
      CHECK(has(text, "flip at step " + std::to_string(static_cast<int>(d) - sa.prompt_len)));
    } else {
      CHECK(s["compared"] == std::min(sa.rows, sb.rows));
    }
    CHECK(has(text, "seq " + std::to_string(i)));
    CHECK(has(text, s["verdict"].get<std::string>()));
    // Jaccard in [0, 1].
    const double jm = s["logits"]["top5_jaccard_mean"], jn = s["logits"]["top5_jaccard_min"];
    CHECK(jn >= 0);
    CHECK(jn <= jm);
    CHECK(jm <= 1);
    for (const auto& x : s["positions"]["jaccard"]) CHECK((x >= 0 && x <= 1));
    CHECK(s["positions"]["kl"].size() == s["compared"]);
    // One drift row per site recorded on both sides.
    std::set<std::string> common, got;
    std::set<std::string> in_b;
    for (const auto& site : sb.sites) in_b.insert(site.name);
    for (const auto& site : sa.sites) {
      if (in_b.count(site.name)) common.insert(site.name);
    }
    for (const auto& dr : s["drift"]) got.insert(dr["site"].get<std::string>());
    CHECK(got == common);
    CHECK(s["drift"].size() == common.size());
  }
  CHECK(j["summary"]["sequences"] == j["sequences"].size());
  CHECK(j["summary"]["diverged"] == diverged);
  const double pct = 100.0 * diverged / static_cast<double>(j["sequences"].size());
  CHECK(j["summary"]["div_percent"].get<double>() == Approx(pct));
  CHECK(has(text, std::to_string(diverged) + " diverged"));
}

}  // namespace

TEST_CASE("diff: a trace against itself is identical and passes every gate", "[cli][diff]") {
  ds::test::TempDir dir;
  const auto t = dir.path() / "t.h5";
  REQUIRE(run_cli("run --prompt 'Once upon a time' -n 24 -q -o " + t.string()).exit_code == 0);
  auto r = run_cli("diff --color never " + t.string() + " " + t.string());
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(has(r.out, "seq 0 · identical"));
  CHECK(has(r.out, "config    no differences"));
  CHECK(has(r.out, "bit-identical"));
  CHECK_FALSE(has(r.out, "\x1b["));
  for (const std::string gate : {"flip", "drift=0", "kl=0"}) {
    auto g = run_cli("diff -q --fail-on " + gate + " " + t.string() + " " + t.string());
    INFO(gate << ": " << g.err);
    CHECK(g.exit_code == 0);
    CHECK(has(g.err, "gate PASS"));
    CHECK(g.out.empty());
  }
  auto j = run_cli("diff --json - " + t.string() + " " + t.string());
  REQUIRE(j.exit_code == 0);
  const auto doc = json::parse(j.out);
  const auto& s = doc["sequences"][0];
  CHECK(s["verdict"] == "identical");
  CHECK(s["first_flip"].is_null());
  CHECK(s["onset"].is_null());
  CHECK(s["logits"]["top5_jaccard_min"] == 1.0);
  CHECK(s["logits"]["kl_max"] == 0.0);
  CHECK(s["logits"]["logprob_rmse"] == 0.0);
  for (const auto& d : s["drift"]) {
    CHECK(d["rel_l2_max"] == 0.0);
    CHECK(d["cos_min"] == 1.0);
    CHECK(d["max_abs"] == 0.0);
  }
  CHECK(doc["summary"]["diverged"] == 0);
}

TEST_CASE("diff: real fp32, fp64, bf16 and sampled traces: the report and JSON agree",
          "[cli][diff]") {
  ds::test::TempDir dir;
  const auto prompts = dir.path() / "prompts.txt";
  ds::test::write_prompts(prompts);
  const auto f32 = dir.path() / "f32.h5", f64 = dir.path() / "f64.h5", smp = dir.path() / "smp.h5",
             bf16 = dir.path() / "bf16.h5";
  const std::string common = "run --prompts " + prompts.string() + " -n 48 -q --probes all ";
  REQUIRE(run_cli(common + "-o " + f32.string()).exit_code == 0);
  REQUIRE(run_cli(common + "--dtype fp64 -o " + f64.string()).exit_code == 0);
  REQUIRE(run_cli(common + "--dtype bf16 -o " + bf16.string()).exit_code == 0);
  // Sampling at temperature 1 makes the tokens part ways: real flips with real top-5s.
  REQUIRE(run_cli(common + "--dtype fp64 --temperature 1 --seed 3 -o " + smp.string()).exit_code ==
          0);

  for (const auto& other : {f64, bf16, smp}) {
    INFO("B = " << other.filename());
    const auto js = dir.path() / "r.json";
    auto r = run_cli("diff --color never --pages 4 --width 120 --force --json " + js.string() +
                     " " + f32.string() + " " + other.string());
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
    const auto j = slurp_json(js);
    check_against_traces(j, f32, other, r.out);
    CHECK(j["config_diff"]["dtype"] == json::array({"fp32", other == bf16 ? "bf16" : "fp64"}));
    CHECK(has(r.out, "dtype"));
    // The gate agrees with the report.
    const int diverged = j["summary"]["diverged"];
    CHECK(run_cli("diff -q --fail-on flip " + f32.string() + " " + other.string()).exit_code ==
          (diverged > 0 ? 1 : 0));
  }
  // fp32 against fp64 drifts above the float32 noise floor but stays far below 1e-2.
  auto lo = run_cli("diff -q --fail-on drift=0 " + f32.string() + " " + f64.string());
  CHECK(lo.exit_code == 1);
  CHECK(has(lo.err, "gate FAIL"));
  CHECK(
      run_cli("diff -q --fail-on drift=1e-2 --fail-on kl=1e-3 " + f32.string() + " " + f64.string())
          .exit_code == 0);
  auto smp_gate = run_cli("diff -q --fail-on flip " + f32.string() + " " + smp.string());
  CHECK(smp_gate.exit_code == 1);
  CHECK(has(smp_gate.err, "flips at step"));
}

TEST_CASE("diff: different prompts are reported first and fail every gate", "[cli][diff]") {
  ds::test::TempDir dir;
  const auto a = dir.path() / "a.h5", b = dir.path() / "b.h5";
  // A: BOS + "Once upon a time"; B: the same ids without the BOS (a hidden-BOS difference).
  REQUIRE(run_cli("run --prompt-ids 1,403,407,261,378 -n 8 -q -o " + a.string()).exit_code == 0);
  REQUIRE(run_cli("run --prompt-ids 403,407,261,378 -n 8 -q -o " + b.string()).exit_code == 0);
  auto r = run_cli("diff --color never " + a.string() + " " + b.string());
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(has(r.out, "prompts differ at position 0"));
  CHECK(has(r.out, "hidden BOS"));
  CHECK(r.out.find("prompt    DIFFERENT") < r.out.find("tokens    "));
  auto g = run_cli("diff -q --fail-on drift=1 " + a.string() + " " + b.string());
  CHECK(g.exit_code == 1);
  CHECK(has(g.err, "prompts differ at position 0"));
  auto j = run_cli("diff --json - " + a.string() + " " + b.string());
  const auto doc = json::parse(j.out);
  CHECK(doc["sequences"][0]["prompt_equal"] == false);
  CHECK(doc["sequences"][0]["prompt_diff"]["first_index"] == 0);
  CHECK(doc["sequences"][0]["first_flip"].is_null());
  CHECK(doc["summary"]["prompts_differ"] == 1);
}

TEST_CASE("diff: traces of different models are refused unless allowed", "[cli][diff]") {
  ds::test::TempDir dir;
  const auto a = dir.path() / "a.h5", b = dir.path() / "b.h5";
  REQUIRE(run_cli("run --prompt-ids 1,403 -n 4 -q -o " + a.string()).exit_code == 0);
  REQUIRE(
      run_cli("run -m " + ds::test::mistral_hf() + " --prompt-ids 1,403 -n 4 -q -o " + b.string())
          .exit_code == 0);
  auto r = run_cli("diff " + a.string() + " " + b.string());
  CHECK(r.exit_code == 2);
  CHECK(has(r.err, "driftscope: the traces are of different models"));
  CHECK(has(r.err, "hint: "));
  CHECK(has(r.err, "--allow-model-mismatch"));
  auto ok = run_cli("diff --color never --allow-model-mismatch " + a.string() + " " + b.string());
  CHECK(ok.exit_code == 0);
  CHECK(has(ok.out, "different models, compared anyway"));
  CHECK(has(ok.out, "model     DIFFERENT"));
}

TEST_CASE("diff: a truncated trace is compared over what it holds and flagged", "[cli][diff]") {
  ds::test::TempDir dir;
  ds::test::TraceSpec full;
  ds::test::SeqSpec s;
  s.prompt = {1, 5};
  s.generated = {2, 3, 4, 7, 6, 5};
  for (int r = 0; r < s.rows(); ++r) {
    std::vector<double> row(8);
    for (int i = 0; i < 8; ++i) row[i] = 0.25 * ((3 * i + 5 * r) % 8);
    s.logits.push_back(row);
    s.hidden["embed"].push_back({1.0f * r, 2, 3, 4});
  }
  s.site_order = {"embed"};
  full.seqs = {s};
  ds::test::TraceSpec cut = full;
  cut.complete = false;
  cut.keep_rows = 4;
  const auto a = dir.path() / "a.h5", b = dir.path() / "b.h5";
  ds::test::write_trace(a, full);
  ds::test::write_trace(b, cut);
  auto r = run_cli("diff --color never " + a.string() + " " + b.string());
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(has(r.out, "INCOMPLETE (complete=0, interrupted)"));
  CHECK(
      has(r.out,
          "B is incomplete (complete=0, stop: interrupted): compared over the positions it holds"));
  CHECK(has(r.out, "A holds 7 positions and B 4: compared over the first 4"));
  CHECK(has(r.out, "seq 0 · identical"));
  auto g = run_cli("diff -q --fail-on flip " + a.string() + " " + b.string());
  CHECK(g.exit_code == 0);
  CHECK(has(g.err, "[B incomplete]"));
  const auto doc = json::parse(run_cli("diff --json - " + a.string() + " " + b.string()).out);
  CHECK(doc["b"]["complete"] == false);
  CHECK(doc["sequences"][0]["compared"] == 4);
}

TEST_CASE("diff: NaN in a trace always fails the gate", "[cli][diff]") {
  ds::test::TempDir dir;
  ds::test::TraceSpec t;
  ds::test::SeqSpec s;
  s.prompt = {1};
  s.generated = {2, 3};
  s.hidden["embed"] = {{1, 2}, {3, 4}};
  s.site_order = {"embed"};
  t.seqs = {s};
  auto bad = t;
  bad.seqs[0].hidden["embed"][1][1] = NAN;
  const auto a = dir.path() / "a.h5", b = dir.path() / "b.h5";
  ds::test::write_trace(a, t);
  ds::test::write_trace(b, bad);
  for (const std::string gate : {"flip", "drift=1e9"}) {
    auto g = run_cli("diff -q --fail-on " + gate + " " + a.string() + " " + b.string());
    CHECK(g.exit_code == 1);
    CHECK(has(g.err, "NaN/Inf at embed"));
  }
  // kl cannot be evaluated without logits: an input error.
  auto k = run_cli("diff -q --fail-on kl=1 " + a.string() + " " + a.string());
  CHECK(k.exit_code == 2);
  CHECK(has(k.err, "no logits"));
}

TEST_CASE("diff: a gate over no compared position fails as nothing compared", "[cli][diff]") {
  // sequences of a prompt and no row at all, as `run -n 0` wrote them
  ds::test::TempDir dir;
  ds::test::TraceSpec t;
  ds::test::SeqSpec s;
  s.prompt = {1, 5};
  t.seqs = {s};
  auto bf16 = t;
  bf16.config_json = R"({"device":"cpu","dtype":"bf16"})";
  const auto a = dir.path() / "a.h5", b = dir.path() / "b.h5";
  ds::test::write_trace(a, t);
  ds::test::write_trace(b, bf16);
  const std::string ab = " " + a.string() + " " + b.string();
  for (const std::string gate : {"flip", "drift=0", "kl=0"}) {
    auto g = run_cli("diff -q --fail-on " + gate + ab);
    INFO(gate << ": " << g.err);
    CHECK(g.exit_code == 1);
    CHECK(has(g.err, "gate FAIL: nothing compared: 0 positions in 1 sequence (fails " + gate));
    CHECK_FALSE(has(g.err, "PASS"));
  }
  const auto r = run_cli("diff --color never" + ab);
  CHECK(has(r.out, "seq 0 · nothing to compare"));
  CHECK(has(r.out, "0 positions compared"));
  const auto doc = json::parse(run_cli("diff --json -" + ab).out);
  CHECK(doc["sequences"][0]["compared"] == 0);
  CHECK(doc["sequences"][0]["verdict"] == "nothing to compare");
}

TEST_CASE("diff: usage and input errors exit 2 with a hint", "[cli][diff]") {
  ds::test::TempDir dir;
  const auto t = dir.path() / "t.h5";
  REQUIRE(run_cli("run --prompt-ids 1,403 -n 2 -q -o " + t.string()).exit_code == 0);
  auto bad = run_cli("diff --fail-on drift=abc " + t.string() + " " + t.string());
  CHECK(bad.exit_code == 2);
  CHECK(has(bad.err, "hint: --fail-on takes flip"));
  CHECK(run_cli("diff --fail-on sometimes " + t.string() + " " + t.string()).exit_code == 2);
  auto missing = run_cli("diff " + t.string() + " " + (dir.path() / "nope.h5").string());
  CHECK(missing.exit_code == 2);
  CHECK(has(missing.err, "does not exist"));
  auto seq = run_cli("diff --seq 5 " + t.string() + " " + t.string());
  CHECK(seq.exit_code == 2);
  CHECK(has(seq.err, "sequence 5 is not in both traces"));
  CHECK(run_cli("diff " + t.string()).exit_code == 2);
  CHECK(run_cli("diff --color sometimes " + t.string() + " " + t.string()).exit_code == 2);
}

TEST_CASE("diff: NO_COLOR and --color decide the colours", "[cli][diff]") {
  ds::test::TempDir dir;
  const auto t = dir.path() / "t.h5";
  REQUIRE(run_cli("run --prompt-ids 1,403 -n 2 -q -o " + t.string()).exit_code == 0);
  CHECK(has(run_cli("diff --color always " + t.string() + " " + t.string()).out, "\x1b["));
  // auto: stdout is not a terminal in tests, so no colours (and NO_COLOR would also turn them off).
  CHECK_FALSE(has(run_cli("diff " + t.string() + " " + t.string()).out, "\x1b["));
  auto w = run_cli("diff --color never --width 70 " + t.string() + " " + t.string());
  for (size_t at = 0, nl; (nl = w.out.find('\n', at)) != std::string::npos; at = nl + 1) {
    std::string line = w.out.substr(at, nl - at);
    size_t cols = 0;
    for (unsigned char c : line) cols += (c & 0xC0) != 0x80;
    INFO(line);
    CHECK(cols <= 70);
  }
}
