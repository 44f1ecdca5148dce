// Tokenization identity across runs: special tokens in prompt text, and the diff flagging two
// runs whose tokenizers (file or BOS/EOS policy) differ.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/support/paths.h"
#include "tests/support/run_cli.h"
#include "tests/support/temp_dir.h"

using ds::test::run_cli;

TEST_CASE("generate with no-special-in-text encodes special-token markup as plain text",
          "[cli][tokenize]") {
  const std::string base = "generate --model " + ds::test::model_hf() + " --ids -n 1 -q ";
  auto with = run_cli(base + "--prompt '<s>Hi'");
  auto without = run_cli(base + "--prompt '<s>Hi' --no-special-in-text");
  REQUIRE(with.exit_code == 0);
  REQUIRE(without.exit_code == 0);
  CHECK(with.out.starts_with("1 1 "));  // BOS, then <s> matched as one special token
  // BOS, then "▁", the byte <0x3C> ("<"), "s", <0x3E>, "H", "i": the ids the Rust tokenizers
  // library gives for "<s>Hi" with encode_special_tokens on models/kjv-llama/tokenizer.json.
  CHECK(without.out.starts_with("1 1023 63 1015 65 979 1005 "));
}

TEST_CASE("diff flags runs whose tokenizers differ", "[cli][diff][tokenize]") {
  ds::test::TempDir dir;
  const auto a = dir.path() / "a.h5", b = dir.path() / "b.h5";
  const std::string run = "run -q -n 5 --prompt-ids 1,403 --model " + ds::test::model_hf();
  REQUIRE(run_cli(run + " -o " + a.string()).exit_code == 0);
  REQUIRE(run_cli(run + " --tokenizer " + ds::test::model_tok() + " -o " + b.string()).exit_code ==
          0);
  auto d = run_cli("diff --json - " + a.string() + " " + b.string());
  REQUIRE(d.exit_code == 0);
  const auto j = nlohmann::json::parse(d.out);
  const auto& cd = j["config_diff"];
  CHECK(cd.contains("model.tokenizer.sha256"));
  CHECK(cd.contains("model.tokenizer.kind"));
  CHECK(cd["model.tokenizer.kind"][0] == "hf-bpe");
  // The same tokenizer on both sides: nothing about it is reported.
  auto same = run_cli("diff --json - " + a.string() + " " + a.string());
  CHECK_FALSE(nlohmann::json::parse(same.out)["config_diff"].contains("model.tokenizer.sha256"));
}

TEST_CASE("a tokenizer with fewer ids than the model: a note at load and <id> in decoded text",
          "[cli][tokenize]") {
  // The bundled tokenizer cut to its first 300 ids (merges whose parts or result are gone
  // dropped), for the model's 1024: the ids from 300 on have no text.
  ds::test::TempDir dir;
  auto tok = nlohmann::json::parse(std::ifstream(ds::test::model_hf() + "/tokenizer.json"));
  auto& m = tok["model"];
  nlohmann::json vocab = nlohmann::json::object(), merges = nlohmann::json::array();
  for (const auto& [piece, id] : m["vocab"].items()) {
    if (id.get<int>() < 300) vocab[piece] = id;
  }
  for (const auto& mg : m["merges"]) {
    const std::string a = mg[0], b = mg[1];
    if (vocab.contains(a) && vocab.contains(b) && vocab.contains(a + b)) merges.push_back(mg);
  }
  m["vocab"] = vocab;
  m["merges"] = merges;
  const auto tok300 = dir.path() / "tok300.json";
  std::ofstream(tok300) << tok.dump();
  const auto t = dir.path() / "t.h5";
  const std::string model = " --model " + ds::test::model_hf() + " --tokenizer " + tok300.string();
  auto r = run_cli("run -q -n 2 --prompt-ids 1,900,50" + model + " -o " + t.string());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("note: the tokenizer has 300 token ids, the model's vocabulary 1024") !=
        std::string::npos);
  // show used to fail: "unknown token id 900 (vocabulary has 300 tokens)", exit 2
  auto s = run_cli("show " + t.string());
  INFO(s.err);
  CHECK(s.exit_code == 0);
  CHECK(s.out.find("<900>") != std::string::npos);
  auto g = run_cli("generate -n 2 --prompt-ids 1,900,50" + model);
  INFO(g.err);
  CHECK(g.exit_code == 0);
  CHECK(g.out.find("<900>") != std::string::npos);
}
