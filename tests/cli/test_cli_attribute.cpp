// driftscope attribute: local versus inherited drift per layer (docs/metrics.md §10). Planted
// perturbations must be found where they were planted, the shadows must reproduce B's own
// layers bit for bit where A's and B's inputs agree, and the totals must be B's real drift.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/support/run_cli.h"
#include "tests/support/temp_dir.h"
#include "trace/reader.h"

using ds::test::run_cli;
using nlohmann::json;

namespace {

// The first `n` prompts of the bundled list, as a prompts file in `dir`.
std::string few_prompts(const ds::test::TempDir& dir, int n) {
  std::ifstream in(DRIFTSCOPE_SOURCE_DIR "/models/kjv-llama/prompts.txt");
  const auto path = dir.path() / "prompts.txt";
  std::ofstream out(path);
  std::string line;
  for (int i = 0; i < n && std::getline(in, line); ++i) out << line << "\n";
  return path.string();
}

// Records reference trace A (fp32) and returns its path.
std::string record_a(const ds::test::TempDir& dir, const std::string& probes) {
  const std::string a = (dir.path() / "a.h5").string();
  const auto r = run_cli("run -q -n 16 --probes '" + probes + "' --prompts " + few_prompts(dir, 3) +
                         " -o " + a);
  REQUIRE(r.exit_code == 0);
  return a;
}

// The attribution report's blocks by name.
std::map<std::string, json> attribute(const std::string& args, json* report = nullptr) {
  const auto r = run_cli("attribute -q --json - " + args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const json j = json::parse(r.out);
  REQUIRE(j["format"] == "driftscope-attribute");
  std::map<std::string, json> blocks;
  for (const auto& b : j["blocks"]) blocks[b["name"].get<std::string>()] = b;
  if (report != nullptr) *report = j;
  return blocks;
}

double num(const json& v) {
  return v.is_null() ? NAN : v.get<double>();
}

}  // namespace

TEST_CASE("attribute names layer 2's MLP as the only origin of a perturbation planted there",
          "[cli][attribute]") {
  ds::test::TempDir dir;
  const std::string a = record_a(dir, "all");
  json report;
  const std::map<std::string, json> blocks =
      attribute(a + " --test-perturb L2/mlp_out:bf16", &report);
  REQUIRE(report["split"] == true);
  REQUIRE(report["n_layers"] == 4);
  const json& l2 = blocks.at("L2 mlp");
  CHECK(l2["origin"] == true);
  CHECK(num(l2["local"]) > 1e-5);
  // nothing differs before the perturbation: layer 2's MLP input is A's, so its local error is
  // all of its drift
  CHECK(num(l2["local"]) == num(l2["total"]));
  CHECK(num(l2["inherited"]) == 0);
  for (const auto& [name, b] : blocks) {
    if (name == "L2 mlp" || name == "L2" || b["kind"] == "layer") continue;
    INFO(name);
    // fp32 against fp32: every other block, on A's inputs, reproduces A bit for bit
    CHECK(num(b["local"]) == 0);
    CHECK(b["origin"] == false);
    const int layer = b["layer"].get<int>();
    if (layer >= 0 && layer < 2) CHECK(num(b["total"]) == 0);
    if (layer == 3 || b["kind"] == "final_norm" || b["kind"] == "logits") {
      CHECK(num(b["total"]) > 0);  // downstream of the perturbation: inherited only
      CHECK(num(b["inherited"]) == num(b["total"]));
    }
  }
  CHECK(num(blocks.at("L2 attention")["total"]) == 0);
  CHECK(report["ranking"][0] == "L2 mlp");
  const std::string verdict = report["verdict"];
  CHECK(verdict.find("MLP of layer 2 adds 100% of the local error") != std::string::npos);
  CHECK(verdict.find("attention adds none") != std::string::npos);
  CHECK(verdict.find("origin above the float32 noise floor: L2 mlp") != std::string::npos);
}

TEST_CASE("attribute without L*/resid_mid in A names whole layers: layer 2", "[cli][attribute]") {
  ds::test::TempDir dir;
  const std::string a = record_a(dir, "default");
  json report;
  const auto blocks = attribute(a + " --test-perturb L2/mlp_out:bf16", &report);
  CHECK(report["split"] == false);
  CHECK(blocks.count("L2 mlp") == 0);
  CHECK(blocks.at("L2")["origin"] == true);
  for (int l : {0, 1, 3}) CHECK(num(blocks.at("L" + std::to_string(l))["local"]) == 0);
  CHECK(report["verdict"].get<std::string>().find("layer 2 adds 100% of the local error") !=
        std::string::npos);
}

TEST_CASE("attribute under another split-K: local error exactly in the blocks whose GEMMs changed",
          "[cli][attribute]") {
  ds::test::TempDir dir;
  const std::string a = record_a(dir, "all");
  // heuristic GEMMs at batch 3: decode passes (M = 3) split K in 2, A never splits
  json report;
  const auto blocks = attribute(a + " --gemm-policy heuristic --batch 3", &report);
  for (const auto& [name, b] : blocks) {
    INFO(name);
    if (b["kind"] == "attention" || b["kind"] == "mlp" || b["kind"] == "logits") {
      CHECK(num(b["local"]) > 0);  // projections (and the LM head) are GEMMs
    }
  }
  // the final norm has no GEMM: its drift is all inherited
  CHECK(num(blocks.at("final_norm")["local"]) == 0);
  CHECK(num(blocks.at("final_norm")["total"]) > 0);
  // A's and B's embeddings agree, so B's own layer 0 ran on A's input: the shadow, with B's
  // batch, rows per pass and split decisions, reproduces it bit for bit
  CHECK(num(blocks.at("L0 attention")["local"]) == num(blocks.at("L0 attention")["total"]));
  CHECK(num(blocks.at("L0")["local"]) == num(blocks.at("L0")["total"]));
  CHECK(num(blocks.at("L0")["local"]) > 0);

  // split-KV attention changes attention only: every MLP's local error is exactly 0
  json attn;
  const auto split_kv = attribute(a + " --attn-splits 4", &attn);
  for (const auto& [name, b] : split_kv) {
    INFO(name);
    if (b["kind"] == "attention") CHECK(num(b["local"]) > 0);
    if (b["kind"] == "mlp" || b["kind"] == "final_norm") CHECK(num(b["local"]) == 0);
  }
  CHECK(attn["verdict"].get<std::string>().find(
            "attention layers 0–3 add 100% of the local error; MLPs add none") !=
        std::string::npos);
}

TEST_CASE("attribute against bf16: totals are B's own drift, local + inherited = total",
          "[cli][attribute]") {
  ds::test::TempDir dir;
  const std::string a = record_a(dir, "all");
  json report;
  const auto blocks = attribute(a + " --dtype bf16", &report);
  // B's own teacher-forced run, recorded separately: the total of each site must be its drift
  const std::string b = (dir.path() / "b.h5").string();
  REQUIRE(run_cli("run -q --dtype bf16 --probes all --force-tokens " + a + " -o " + b).exit_code ==
          0);
  const auto ra = ds::trace::TraceReader::open(a), rb = ds::trace::TraceReader::open(b);
  for (const auto& [name, blk] : blocks) {
    INFO(name);
    if (blk["kind"] == "logits") continue;
    const std::string site = blk["site"];
    double dd = 0, aa = 0;
    REQUIRE(report["sequence_ids"].size() == ra.sequence_indices().size());
    for (int s : ra.sequence_indices()) {
      const int64_t rows = ra.sequence(s).rows;
      const auto x = ra.hidden(s, site, 0, rows), y = rb.hidden(s, site, 0, rows);
      double seq_dd = 0, seq_aa = 0;
      for (size_t i = 0; i < x.size(); ++i) {
        seq_dd += (double(y[i]) - x[i]) * (double(y[i]) - x[i]);
        seq_aa += double(x[i]) * x[i];
      }
      dd += seq_dd;
      aa += seq_aa;
      CHECK(num(blk["by_sequence"]["total"][s]) ==
            Approx(std::sqrt(seq_dd) / std::sqrt(seq_aa)).epsilon(1e-12));
      CHECK(num(blk["by_sequence"]["local"][s]) > 0);
    }
    CHECK(num(blk["total"]) == Approx(std::sqrt(dd) / std::sqrt(aa)).epsilon(1e-12));
    CHECK(num(blk["local"]) + num(blk["inherited"]) == Approx(num(blk["total"])).epsilon(1e-12));
    if (blk["kind"] != "layer") CHECK(num(blk["local"]) > 0);  // bf16: every block adds a little
  }
  CHECK(!report["verdict"].get<std::string>().empty());
}

TEST_CASE("attribute refuses a reference without the sites it replays from, with a hint",
          "[cli][attribute]") {
  ds::test::TempDir dir;
  const std::string a = record_a(dir, "L*/out,final_norm");
  auto r = run_cli("attribute " + a);
  ds::test::check_input_error(r, "has no 'embed'");
  CHECK(r.err.find("--probes 'embed,L*/out,final_norm'") != std::string::npos);

  const std::string half = (dir.path() / "half.h5").string();
  REQUIRE(run_cli("run -q -n 4 --hidden-dtype bf16 -o " + half).exit_code == 0);
  r = run_cli("attribute " + half);
  ds::test::check_input_error(r, "reduced precision");
  CHECK(r.err.find("--hidden-dtype f32") != std::string::npos);
}

TEST_CASE("attribute: bad input exits 2 with one message and a hint", "[cli][attribute]") {
  ds::test::TempDir dir;
  ds::test::check_input_error(run_cli("attribute " + (dir.path() / "nope.h5").string()), "nope.h5");
  const std::string a = record_a(dir, "default");
  ds::test::check_input_error(run_cli("attribute " + a + " --dtype fp8"), "invalid dtype 'fp8'");
  ds::test::check_input_error(run_cli("attribute " + a + " --tp 3"), "invalid tp 3");
  const auto cuda = run_cli("attribute " + a + " --device cuda");
  ds::test::check_input_error(cuda, "attribute runs on --device cpu only");
  CHECK(cuda.err.find("hint: drop --device cuda") != std::string::npos);
  ds::test::check_input_error(
      run_cli("attribute " + a + " --json " + (dir.path() / "no/x.json").string()),
      "cannot write the JSON report");
  ds::test::check_input_error(
      run_cli("attribute " + a + " --html " + (dir.path() / "no/x.html").string()),
      "cannot write the HTML report");
  ds::test::check_input_error(run_cli("attribute " + a + " --test-perturb L3/mlp:bf16"),
                              "invalid test_perturb 'L3/mlp:bf16'");
  ds::test::check_input_error(run_cli("attribute " + a + " --test-perturb L4/mlp_out:bf16"),
                              "no op 'L4/down_proj' in a 4-layer model");
  const auto help = run_cli("attribute --help");
  CHECK(help.exit_code == 0);
  CHECK(help.out.find("--config") != std::string::npos);
  CHECK(help.out.find("--json") != std::string::npos);
  CHECK(help.out.find("--html") != std::string::npos);
}
