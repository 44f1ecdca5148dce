// Tokenization identity across runs: special tokens in prompt text, and the diff flagging two
// runs whose tokenizers (file or BOS/EOS policy) differ.
#include <catch2/catch.hpp>
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
