// `driftscope stats` end to end on real traces of the bundled kjv-llama: a sweep directory
// (groups by dtype, JSON consistent with the traces read independently here, missing runs and
// --require-all), N copies of one trace, answers, and the refusals: another model, another
// prompt set, an extraction regex without a capture group, an answer key of the wrong length.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

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

// Div_Index of each sequence over the traces, straight from their tokens.
std::vector<int> div_index_of(const std::vector<fs::path>& paths) {
  std::vector<ds::trace::TraceReader> rs;
  for (const auto& p : paths) rs.push_back(ds::trace::TraceReader::open(p));
  std::vector<int> out;
  for (int i : rs[0].sequence_indices()) {
    std::vector<std::vector<int32_t>> gen;
    for (const auto& r : rs) {
      const auto s = r.sequence(i);
      gen.emplace_back(s.tokens.begin() + s.prompt_len, s.tokens.end());
    }
    size_t longest = 0, t = 0;
    for (const auto& g : gen) longest = std::max(longest, g.size());
    for (; t < longest; ++t) {
      bool same = true;
      for (const auto& g : gen)
        same = same && t < g.size() && t < gen[0].size() && g[t] == gen[0][t];
      if (!same) break;
    }
    out.push_back(static_cast<int>(t));
  }
  return out;
}

}  // namespace

TEST_CASE("stats: a sweep directory, grouped by dtype, agrees with its traces", "[cli][stats]") {
  ds::test::TempDir tmp;
  const fs::path prompts = tmp.path() / "p.txt", dir = tmp.path() / "sw";
  ds::test::write_prompts(prompts, 6);
  REQUIRE(run_cli("sweep -q --grid 'dtype=fp32,bf16 tp=1,2' -n 24 --prompts " + prompts.string() +
                  " -j 2 -o " + dir.string())
              .exit_code == 0);
  auto r = run_cli("stats " + dir.string() + " --json " + (tmp.path() / "s.json").string());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(has(r.out, "Div_Percent"));
  CHECK(has(r.out, "dtype=bf16"));
  const json j = slurp_json(tmp.path() / "s.json");
  CHECK(j["format"] == "driftscope-stats");
  CHECK(j["group_by"] == "dtype");
  CHECK(j["varying"] == json::array({"dtype", "tp"}));
  CHECK(j["missing"].empty());
  REQUIRE(j["groups"].size() == 3);
  const std::map<std::string, std::vector<std::string>> members = {
      {"all", {"dtype-fp32_tp-1", "dtype-fp32_tp-2", "dtype-bf16_tp-1", "dtype-bf16_tp-2"}},
      {"dtype=fp32", {"dtype-fp32_tp-1", "dtype-fp32_tp-2"}},
      {"dtype=bf16", {"dtype-bf16_tp-1", "dtype-bf16_tp-2"}}};
  for (const auto& g : j["groups"]) {
    const std::string key = g["key"];
    INFO(key);
    REQUIRE(g["runs"] == json(members.at(key)));
    std::vector<fs::path> paths;
    for (const auto& n : members.at(key)) paths.push_back(dir / (n + ".h5"));
    const auto div = div_index_of(paths);
    CHECK(g["div_index"] == json(div));
    // Div_Percent: prompts whose outputs are not all equal (equal outputs: Div_Index = length).
    const auto r0 = ds::trace::TraceReader::open(paths[0]);
    int differ = 0;
    for (size_t i = 0; i < div.size(); ++i) {
      const auto s = r0.sequence(static_cast<int>(i));
      bool all_same = true;
      for (const auto& p : paths) {
        all_same = all_same &&
                   ds::trace::TraceReader::open(p).sequence(static_cast<int>(i)).tokens == s.tokens;
      }
      differ += !all_same;
    }
    CHECK(g["div_percent"].get<double>() == Approx(100.0 * differ / div.size()));
    CHECK(g["tarr"].get<double>() == Approx(100.0 - 100.0 * differ / div.size()));
  }
  // bf16 parts from itself across tp on some prompt of 6 × 24 tokens, fp32 much less.
  CHECK(j["groups"][2]["div_percent"].get<double>() >= j["groups"][1]["div_percent"].get<double>());
  REQUIRE(j["attribution"].size() == 2);
  CHECK(j["attribution"][0]["knob"] == "dtype");
  CHECK(j["attribution"][0]["pairs"] == 2);

  // A configuration without its trace shows as missing; --require-all makes that exit 1.
  fs::remove(dir / "dtype-bf16_tp-2.h5");
  r = run_cli("stats " + dir.string());
  CHECK(r.exit_code == 0);
  CHECK(has(r.out, "missing (1): dtype-bf16_tp-2"));
  r = run_cli("stats " + dir.string() + " --json -");  // stdout holds the JSON alone
  CHECK(r.exit_code == 0);
  CHECK(json::parse(r.out)["missing"] == json::array({"dtype-bf16_tp-2"}));
  r = run_cli("stats --require-all " + dir.string());
  CHECK(r.exit_code == 1);
  CHECK(has(r.err, "missing: dtype-bf16_tp-2"));
}

TEST_CASE("stats: N copies of one trace agree completely, and answers give TARa and accuracy",
          "[cli][stats]") {
  ds::test::TempDir tmp;
  const fs::path prompts = tmp.path() / "p.txt", a = tmp.path() / "a.h5";
  ds::test::write_prompts(prompts, 4);
  REQUIRE(run_cli("run -q -n 16 --dtype bf16 --prompts " + prompts.string() + " -o " + a.string())
              .exit_code == 0);
  fs::copy_file(a, tmp.path() / "b.h5");
  fs::copy_file(a, tmp.path() / "c.h5");
  {
    std::ofstream key(tmp.path() / "key.txt");
    key << "zzz\nzzz\nzzz\nzzz\n";
  }
  auto r = run_cli("stats --json - --extract '(\\w+)' --answers " +
                   (tmp.path() / "key.txt").string() + " " + a.string() + " " +
                   (tmp.path() / "b.h5").string() + " " + (tmp.path() / "c.h5").string());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const json j = json::parse(r.out.substr(r.out.find("{\n")));
  const auto& g = j["groups"][0];
  CHECK(g["n"] == 3);
  CHECK(g["div_percent"] == 0.0);
  CHECK(g["avg_std_top1_prob"] == 0.0);
  CHECK(g["avg_std_output_length"] == 0.0);
  CHECK(g["tarr"] == 100.0);
  CHECK(g["tara"] == 100.0);
  CHECK(g["unique_outputs_mean"] == 1.0);
  // No story ends in "zzz": accuracy 0 for the one configuration (its three runs are samples).
  REQUIRE(g["accuracy"].size() == 1);
  CHECK(g["accuracy"][0]["samples"] == 3);
  CHECK(g["accuracy"][0]["accuracy"] == 0.0);
  CHECK(g["accuracy"][0]["pass_at_k"][0]["k"] == 3);
  CHECK(g["accuracy"][0]["pass_at_k"][0]["pass"] == 0.0);
}

TEST_CASE("stats: sweep --samples gives seeded runs that stats counts as samples of one config",
          "[cli][stats][sweep]") {
  ds::test::TempDir tmp;
  const fs::path prompts = tmp.path() / "p.txt", dir = tmp.path() / "sw";
  ds::test::write_prompts(prompts, 4);
  REQUIRE(run_cli("sweep -q --grid 'dtype=fp32' --samples 3 --seed 5 --temperature 1.0 -n 8 "
                  "--prompts " +
                  prompts.string() + " -o " + dir.string())
              .exit_code == 0);
  for (int seed : {5, 6, 7}) {
    const auto r = ds::trace::TraceReader::open(dir / ("seed-" + std::to_string(seed) + ".h5"));
    CHECK(json::parse(r.config_json())["seed"] == seed);
    CHECK(json::parse(r.config_json())["temperature"] == 1.0);
  }
  {
    std::ofstream key(tmp.path() / "key.txt");
    key << "zzz\nzzz\nzzz\nzzz\n";
  }
  auto r = run_cli("stats --json - --k 1,2 --extract '(\\w+)' --answers " +
                   (tmp.path() / "key.txt").string() + " " + dir.string());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const json j = json::parse(r.out.substr(r.out.find("{\n")));
  CHECK(j["varying"] == json::array({"seed"}));
  const auto& acc = j["groups"][0]["accuracy"];
  REQUIRE(acc.size() == 1);
  CHECK(acc[0]["samples"] == 3);
  REQUIRE(acc[0]["pass_at_k"].size() == 2);
  CHECK(acc[0]["pass_at_k"][0]["k"] == 1);
  CHECK(acc[0]["pass_at_k"][1]["k"] == 2);
}

TEST_CASE("stats: the odd trace, a regex without a group and a bad answer key are refused",
          "[cli][stats]") {
  ds::test::TempDir tmp;
  const fs::path p4 = tmp.path() / "p4.txt", p3 = tmp.path() / "p3.txt";
  ds::test::write_prompts(p4, 4);
  ds::test::write_prompts(p3, 3);
  const fs::path a = tmp.path() / "a.h5", b = tmp.path() / "b.h5", other = tmp.path() / "other.h5",
                 fewer = tmp.path() / "fewer.h5";
  REQUIRE(run_cli("run -q -n 4 --prompts " + p4.string() + " -o " + a.string()).exit_code == 0);
  REQUIRE(run_cli("run -q -n 4 --dtype bf16 --prompts " + p4.string() + " -o " + b.string())
              .exit_code == 0);
  REQUIRE(run_cli("run -q -n 4 --model " + ds::test::qwen2_hf() + " --prompts " + p4.string() +
                  " -o " + other.string())
              .exit_code == 0);
  REQUIRE(run_cli("run -q -n 4 --prompts " + p3.string() + " -o " + fewer.string()).exit_code == 0);
  const std::string ab = " " + a.string() + " " + b.string();
  ds::test::check_input_error(run_cli("stats" + ab + " " + other.string()), "other.h5");
  ds::test::check_input_error(run_cli("stats " + other.string() + ab), "different model");
  ds::test::check_input_error(run_cli("stats" + ab + " " + fewer.string()),
                              "fewer.h5' holds a different prompt set");
  ds::test::check_input_error(run_cli("stats --extract '\\w+'" + ab), "capture groups, not one");
  {
    std::ofstream key(tmp.path() / "key.txt");
    key << "a\nb\n";
  }
  ds::test::check_input_error(
      run_cli("stats --extract '(\\w+)' --answers " + (tmp.path() / "key.txt").string() + ab),
      "the answer key holds 2 answers for 4 prompts");
  ds::test::check_input_error(run_cli("stats --answers " + (tmp.path() / "key.txt").string() + ab),
                              "--answers needs --extract");
  // An answer key that holds no answer, an empty or blank line, or is no text file at all is
  // refused: it used to give no accuracy (empty), "acc 0.00" (blank lines), or read /dev/zero
  // until memory ran out.
  auto key_error = [&](const std::string& key, const std::string& needle) {
    ds::test::check_input_error(run_cli("stats --extract '(\\w+)' --answers " + key + ab), needle);
  };
  std::ofstream(tmp.path() / "empty.txt").flush();
  std::ofstream(tmp.path() / "blank.txt") << "\n\n";
  std::ofstream(tmp.path() / "gap.txt") << "a\n \nc\nd\n";
  key_error((tmp.path() / "empty.txt").string(), "empty.txt' holds no answer");
  key_error((tmp.path() / "blank.txt").string(), "line 1 is empty");
  key_error((tmp.path() / "gap.txt").string(), "gap.txt': line 2 is empty");
  key_error("/dev/zero", "answer key '/dev/zero' is larger than the limit of 64.0 MiB");
  key_error(tmp.path().string(), "is a directory");
  ds::test::check_input_error(run_cli("stats --group-by colour" + ab), "unknown group-by field");
  ds::test::check_input_error(run_cli("stats --group-by ''" + ab),
                              "--group-by is given an empty value");
  // --k was parsed as a token id list and said so ("is not a token id")
  ds::test::check_input_error(run_cli("stats --k 1,99999999999" + ab),
                              "--k '1,99999999999' is not a list of whole numbers >= 1");
  ds::test::check_input_error(run_cli("stats " + (tmp.path() / "nodir").string() + "/"), "nodir");
}
