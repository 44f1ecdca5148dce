// driftscope explain A.h5 B.h5 -o DIR (docs/cli.md, "Explain"; docs/metrics.md §13), through the
// executable, on cheap first-pass traces of the bundled model. The flips are found here from the
// traces' tokens, not from explain's report; a cause is planted where it is known (a test-only
// perturbation of one op among four knobs that do nothing), batch is checked against B's own
// trace bit for bit, and every refusal leaves nothing behind.
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "tests/support/run_cli.h"
#include "tests/support/temp_dir.h"
#include "tests/support/text.h"
#include "tests/support/zoom_fixture.h"
#include "trace/reader.h"

namespace fs = std::filesystem;
using ds::test::check_input_error;
using ds::test::flip_step;
using ds::test::has;
using ds::test::run_cli;
using nlohmann::json;

namespace {

// A trace of `prompts` (a prompts file) with `flags`, n new tokens, no hidden states.
fs::path record(const ds::test::TempDir& dir, const std::string& name, const fs::path& prompts,
                const std::string& flags, int n) {
  const fs::path t = dir.path() / (name + ".h5");
  const auto r = run_cli("run -q -n " + std::to_string(n) + " --probes none --prompts " +
                         prompts.string() + " " + flags + " -o " + t.string());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return t;
}

// The sequences whose tokens differ between the two traces, with their first-flip steps.
std::map<int, int> flips_of(const fs::path& a, const fs::path& b) {
  const auto ta = ds::trace::TraceReader::open(a), tb = ds::trace::TraceReader::open(b);
  std::map<int, int> out;
  for (int i : ta.sequence_indices()) {
    const int s = flip_step(ta.sequence(i), tb.sequence(i));
    if (s >= 0) out[i] = s;
  }
  return out;
}

// explain A B -o DIR: its exit 0, stdout, and DIR/explain.json.
json explain(const fs::path& a, const fs::path& b, const fs::path& dir, std::string* out = nullptr,
             const std::string& flags = "") {
  const auto r = run_cli("explain -q -j 2 " + a.string() + " " + b.string() + " -o " +
                         dir.string() + " " + flags);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  if (out != nullptr) *out = r.out;
  const json j = ds::test::slurp_json(dir / "explain.json");
  REQUIRE(j["format"] == "driftscope-explain");
  return j;
}

int ceil_log2(int n) {
  int k = 0;
  while ((1 << k) < n) ++k;
  return k;
}

// The bundled prompts' first n lines, in a prompts file.
fs::path prompt_lines(const ds::test::TempDir& dir, int n) {
  const fs::path p = dir.path() / "prompts.txt";
  std::ifstream in(DRIFTSCOPE_SOURCE_DIR "/models/kjv-llama/prompts.txt");
  std::ofstream out(p);
  std::string line;
  for (int i = 0; i < n && std::getline(in, line); ++i) out << line << "\n";
  return p;
}

// Traces A and B of the bundled prompts' first `prompts` lines, `n` new tokens, and their flips.
struct Pair {
  fs::path a, b;
  std::map<int, int> flips;
};
Pair pair(const ds::test::TempDir& dir, int prompts, int n, const std::string& a_flags,
          const std::string& b_flags) {
  const fs::path p = prompt_lines(dir, prompts);
  Pair out{record(dir, "a", p, a_flags, n), record(dir, "b", p, b_flags, n), {}};
  out.flips = flips_of(out.a, out.b);
  return out;
}

}  // namespace

TEST_CASE(
    "explain finds a cause planted at one op among four knobs that do nothing: that knob and "
    "that op on every flip, within the trial counts",
    "[cli][explain]") {
  ds::test::TempDir dir;
  const fs::path prompts = ds::test::single_token_prompts(dir);  // no prefix to reuse
  const fs::path a = record(dir, "a", prompts, "", 32);
  // decoys: a tree all-reduce at tp 1, split-K 1 where the policy splits nothing, highest-id
  // ties where fp32 logits do not tie, the prefix cache of one-token prompts; the cause: layer
  // 2's residual add moved one bf16 ulp up (test-only)
  const fs::path b = record(dir, "b", prompts,
                            "--allreduce tree --split-k 1 --tie-break highest_id --prefix-cache "
                            "on --test-perturb L2/mlp_add:+ulp",
                            32);
  const std::map<int, int> flips = flips_of(a, b);
  REQUIRE(flips.size() >= 2);
  std::string out;
  const json r = explain(a, b, dir.path() / "x", &out);
  std::set<std::string> knobs;
  for (const auto& k : r["knobs"]) knobs.insert(k["name"].get<std::string>());
  CHECK(knobs ==
        std::set<std::string>{"allreduce", "split_k", "tie_break", "prefix_cache", "test_perturb"});
  REQUIRE(r["sequences"].size() == flips.size());
  for (const json& f : r["sequences"]) {
    const int seq = f["seq"];
    INFO("seq " << seq);
    REQUIRE(flips.count(seq) == 1);
    CHECK(f["step"] == flips.at(seq));
    CHECK(f["verdict"] == "explained");
    CHECK(f["knob_sets"] == json::parse(R"([["test_perturb"]])"));
    CHECK(f["knob_trials"].get<int>() <= 64);  // the full factorial of 5 knobs: 32
    const json& ops = f["ops"];
    CHECK(ops["status"] == "found");
    CHECK(ops["set"] == json::parse(R"(["L2/mlp_add"])"));
    const int n = ops["candidates"];
    CHECK(n >= 1);
    CHECK(ops["trials"].get<int>() <= ceil_log2(n) + 1);
    CHECK(ops["plan_bits"] == true);
    CHECK(f["place"] == "L2/mlp_add");
    // the decoys move no margin at all; the perturbation all of it
    for (size_t k = 0; k < r["knobs"].size(); ++k) {
      const bool cause = r["knobs"][k]["name"] == "test_perturb";
      const double main = f["effects"]["main"][k], share = f["effects"]["share"][k];
      if (!cause) CHECK(main == 0);
      if (cause) CHECK(share == Approx(1.0).margin(1e-9));
    }
  }
  CHECK(r["causes"].size() == 1);
  CHECK(r["unresolved"] == 0);
  CHECK(has(out, "{test_perturb}"));
  CHECK(has(out, "L2/mlp_add"));
}

TEST_CASE("explain over more than 6 knobs: ddmin finds the planted one among seven that do nothing",
          "[cli][explain]") {
  ds::test::TempDir dir;
  const fs::path prompts = ds::test::single_token_prompts(dir);
  const fs::path a = record(dir, "a", prompts, "", 32);
  // the four decoys above, and a GEMM kernel, TF32 and split-KV 1 that the CPU's fp32 does not use
  const fs::path b = record(dir, "b", prompts,
                            "--allreduce tree --split-k 1 --tie-break highest_id --prefix-cache "
                            "on --kernel gemm=tiled --tf32 on --attn-splits 1 --test-perturb "
                            "L2/mlp_add:+ulp",
                            32);
  const std::map<int, int> flips = flips_of(a, b);
  REQUIRE(!flips.empty());
  const json r = explain(a, b, dir.path() / "x");
  CHECK(r["knobs"].size() == 8);
  REQUIRE(r["sequences"].size() == flips.size());
  for (const json& f : r["sequences"]) {
    INFO("seq " << f["seq"]);
    CHECK(f["method"] == "dd");
    CHECK(f["knob_sets"] == json::parse(R"([["test_perturb"]])"));
    REQUIRE(f["knob_set_trials"].size() == 1);
    CHECK(f["knob_set_trials"][0].get<int>() + 2 == f["knob_trials"].get<int>());
    CHECK(f["knob_trials"].get<int>() < 1 << 8);  // far from a factorial's 256
    CHECK(f["effects"].is_null());
    CHECK(f["ops"]["set"] == json::parse(R"(["L2/mlp_add"])"));
  }
}

TEST_CASE(
    "explain of bf16 batch 1 against batch 8 names batch, the GEMMs or attention whose split "
    "it changed, and B's plan at A's batch gives B's bits",
    "[cli][explain]") {
  ds::test::TempDir dir;
  const std::string configs = DRIFTSCOPE_SOURCE_DIR "/configs/";
  const auto [a, b, flips] = pair(dir, 32, 48, "--config " + configs + "bf16-bs1.toml",
                                  "--config " + configs + "bf16-bs8.toml");
  REQUIRE(!flips.empty());
  const fs::path x = dir.path() / "x";
  const json r = explain(a, b, x);
  REQUIRE(r["knobs"].size() == 1);
  CHECK(r["knobs"][0]["name"] == "batch");
  REQUIRE(r["sequences"].size() == flips.size());
  const auto tb = ds::trace::TraceReader::open(b);
  for (const json& f : r["sequences"]) {
    const int seq = f["seq"];
    INFO("seq " << seq);
    CHECK(f["knob_sets"] == json::parse(R"([["batch"]])"));
    const json& ops = f["ops"];
    REQUIRE(ops["status"] == "found");
    for (size_t i = 0; i < ops["set"].size(); ++i) {
      const std::string op = ops["set"][i], what = ops["what"][i];
      INFO(op << ": " << what);
      CHECK((has(op, "_proj") || op == "lm_head" || has(op, "attention")));
      CHECK((has(what, "split-K") || has(what, "split-KV")));
    }
    CHECK(ops["plan_bits"] == true);
    // independently: B's decisions at every op, replayed alone at A's batch (the plan explain
    // wrote, with b_ops all), against B's own trace through the flip row, bit for bit
    std::string plan_file;
    for (const auto& e : fs::directory_iterator(x / "ops" / ("seq-" + std::to_string(seq)))) {
      if (!has(e.path().string(), ".plan.json")) continue;
      const json p = ds::test::slurp_json(e.path());
      if (p["b_ops"].size() == static_cast<size_t>(ops["candidates"].get<int>())) {
        plan_file = e.path().string();
      }
    }
    REQUIRE(!plan_file.empty());
    json plan = ds::test::slurp_json(plan_file);
    plan["b_ops"] = json::parse(R"(["all"])");
    const fs::path all = dir.path() / ("all-" + std::to_string(seq) + ".json");
    std::ofstream(all) << plan.dump();
    const fs::path replay = dir.path() / ("all-" + std::to_string(seq) + ".h5");
    const auto run =
        run_cli("run -q --config " + configs + "bf16-bs1.toml --prompts " +
                (x / "ops" / ("seq-" + std::to_string(seq)) / "prompt.jsonl").string() +
                " --plan " + all.string() + " --probes none -o " + replay.string());
    INFO(run.err);
    REQUIRE(run.exit_code == 0);
    const auto tr = ds::trace::TraceReader::open(replay);
    const int64_t rows = f["row"].get<int64_t>() + 1;
    const auto mine = tr.topk(0, 0, rows), theirs = tb.topk(seq, 0, rows);
    CHECK(mine.ids == theirs.ids);
    CHECK(mine.logits == theirs.logits);
    CHECK(tr.lse(0, 0, rows) == tb.lse(seq, 0, rows));
  }
}

TEST_CASE(
    "explain of the demo's pair: a verdict per flip, the causes, at most 8 knob trials per flip, "
    "an onset column that names places, and zoom --explain in the same folder reuses the trials",
    "[cli][explain]") {
  ds::test::TempDir dir;
  const auto [a, b, flips] = pair(dir, 8, 24, "", "--dtype bf16 --batch 8 --gemm-policy heuristic");
  REQUIRE(flips.size() >= 2);
  const fs::path x = dir.path() / "x";
  std::string out;
  const json r = explain(a, b, x, &out);
  CHECK(r["knobs"].size() == 3);
  REQUIRE(r["sequences"].size() == flips.size());
  std::set<std::string> places;
  int counted = 0;
  for (const json& f : r["sequences"]) {
    INFO("seq " << f["seq"]);
    const std::string v = f["verdict"];
    CHECK((v == "explained" || v == "unresolved" || v == "no_cause"));
    if (v == "explained") CHECK(!f["knob_sets"].empty());
    CHECK(f["knob_trials"].get<int>() <= 8);
    places.insert(f["place"].get<std::string>());
    CHECK(f["onset"].is_string());  // the raw onset, kept
  }
  for (const json& c : r["causes"]) counted += c["flips"].get<int>();
  CHECK(counted + r["no_cause"].get<int>() + r["unresolved"].get<int>() >=
        static_cast<int>(flips.size()));
  CHECK(has(out, "── causes ("));
  CHECK(places != std::set<std::string>{"embed @0"});
  // zoom --explain of the same zoom (after 0): the trials are kept, the flips report's onset
  // column names the causes
  const auto z =
      run_cli("zoom -q --explain --after 0 " + a.string() + " " + b.string() + " -o " + x.string());
  INFO(z.err);
  REQUIRE(z.exit_code == 0);
  const json flips_json = ds::test::slurp_json(x / "flips.json");
  REQUIRE(flips_json.contains("explain"));
  for (const json& c : flips_json["sequences"]) {
    for (const json& f : r["sequences"]) {
      if (f["seq"] == c["seq"]) CHECK(c["cause"] == f["place"]);
    }
  }
  CHECK(has(z.out, "── causes ("));
}

TEST_CASE("explain blames knobs that do nothing for nothing: no cause among the knobs",
          "[cli][explain]") {
  ds::test::TempDir dir;
  // B: bf16 as A, with three knobs that change nothing under batch-invariant GEMMs, and another
  // valid reduction order at every op (a numerics plan, which no knob carries)
  const fs::path reorder = dir.path() / "reorder.json";
  std::ofstream(reorder) << R"({"format": "driftscope-plan", "version": 1, "reorder_seed": 7})";
  const auto [a, b, flips] = pair(
      dir, 8, 24, "--dtype bf16",
      "--dtype bf16 --allreduce tree --split-k 1 --prefix-cache on --plan " + reorder.string());
  REQUIRE(!flips.empty());
  const json r = explain(a, b, dir.path() / "x");
  CHECK(r["no_cause"] == flips.size());
  CHECK(r["causes"].empty());
  for (const json& f : r["sequences"]) {
    CHECK(f["verdict"] == "no_cause");
    CHECK(f["why"] == "A's token still wins under B's knobs");
    CHECK(f["knob_sets"].empty());
  }
  REQUIRE(r["notes"].size() == 1);
  CHECK(has(r["notes"][0], "B ran under a numerics plan"));
}

TEST_CASE(
    "explain refuses bad input with one line and a hint, before DIR is made, and a failed "
    "trial leaves no trace and the same command resumes",
    "[cli][explain]") {
  ds::test::TempDir dir;
  const auto [a, b, flips] = pair(dir, 4, 16, "", "--dtype bf16");
  const fs::path prompts = dir.path() / "prompts.txt";
  REQUIRE(!flips.empty());
  const fs::path x = dir.path() / "x";
  auto refused = [&](const std::string& args, const std::string& needle) {
    INFO(args);
    check_input_error(run_cli("explain " + args + " -o " + x.string()), needle);
    CHECK_FALSE(fs::exists(x));
  };
  // no flip
  const auto none = run_cli("explain " + a.string() + " " + a.string() + " -o " + x.string());
  check_input_error(none, "no sequence flipped");
  CHECK(has(none.err, "--seq"));
  CHECK_FALSE(fs::exists(x));
  // a --seq that does not flip
  int calm = -1;
  for (int i = 0; i < 4; ++i) {
    if (flips.count(i) == 0) calm = i;
  }
  if (calm >= 0) {
    refused(a.string() + " " + b.string() + " --seq " + std::to_string(calm), "does not flip");
  }
  // another model
  const fs::path q =
      record(dir, "q", prompts, "--model " DRIFTSCOPE_SOURCE_DIR "/models/kjv-qwen2", 16);
  refused(a.string() + " " + q.string(), "different models");
  // other prompts
  const fs::path p2 = dir.path() / "other.txt";
  std::ofstream(p2) << "And God said\nAnd God said\nAnd God said\nAnd God said\n";
  const fs::path o = record(dir, "o", p2, "--dtype bf16", 16);
  refused(a.string() + " " + o.string(), "prompts differ");
  // a knob that cannot be mixed: a sampled run
  const fs::path s = record(dir, "s", prompts, "--temperature 0.8 --seed 3", 16);
  refused(a.string() + " " + s.string(), "explain replays greedy choices");

  // a trial that fails: the zoom's replays first (batch 1 on both sides: explain's zoom and this
  // one are the same), then every run fails as on a full disk
  REQUIRE(run_cli("zoom -q --after 0 " + a.string() + " " + b.string() + " -o " + x.string())
              .exit_code == 0);
  const std::string again = "explain -q " + a.string() + " " + b.string() + " -o " + x.string();
  setenv("DRIFTSCOPE_TRACE_FAIL_AFTER_STEPS", "1", 1);
  const auto failed = run_cli(again);
  unsetenv("DRIFTSCOPE_TRACE_FAIL_AFTER_STEPS");
  check_input_error(failed, "explain trial");
  CHECK(has(failed.err, "the same command resumes"));
  CHECK_FALSE(fs::exists(x / "explain.json"));
  for (const auto& e : fs::directory_iterator(x / "trials")) {
    INFO(e.path());
    CHECK(e.path().extension() != ".h5");  // no half-written trial
  }
  const auto resumed = run_cli(again);
  INFO(resumed.err);
  CHECK(resumed.exit_code == 0);
  CHECK(fs::exists(x / "explain.json"));
}
