// `driftscope tokenize` end to end: ids of the fixture texts, JSON in and out, --decode, special
// tokens in chat markup with and without --no-special-in-text, and input errors (exit 2).
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>

#include "tests/support/paths.h"
#include "tests/support/run_cli.h"

using ds::test::check_input_error;

namespace fs = std::filesystem;
using ds::test::run_cli;
using Ids = std::vector<int32_t>;

namespace {

std::string tokenizers() {
  return ds::test::source_dir() + "/tests/data/tokenizers";
}
std::string qwen3() {
  return tokenizers() + "/qwen3";
}
std::string mistral_json() {
  return tokenizers() + "/mistral/tokenizer.json";
}

// A scratch file, removed at scope exit.
struct TempFile {
  fs::path path;
  explicit TempFile(const std::string& content) {
    std::random_device rd;
    path = fs::temp_directory_path() / ("ds_tokenize_" + std::to_string(rd()) + ".json");
    std::ofstream(path, std::ios::binary) << content;
  }
  ~TempFile() { fs::remove(path); }
};

Ids parse_ids(const std::string& line) {
  Ids ids;
  std::istringstream in(line);
  for (int32_t id; in >> id;) ids.push_back(id);
  return ids;
}

}  // namespace

TEST_CASE("tokenize --text prints ids on one line", "[cli][tokenize]") {
  // From tests/data/tokenizers/qwen3/expected_ids.json.
  auto r = run_cli("tokenize --tokenizer " + qwen3() + " --text 'Hello, my dog is cute'");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out == "9707 11 847 5562 374 18838\n");
  // Mistral, a tokenizer.json path: no BOS unless --special.
  r = run_cli("tokenize --tokenizer " + mistral_json() + " --text 'Hello, my dog is cute'");
  CHECK(r.out == "22557 28725 586 3914 349 17949\n");
  r = run_cli("tokenize --tokenizer " + mistral_json() +
              " --special --text 'Hello, my dog is cute'");
  CHECK(r.out == "1 22557 28725 586 3914 349 17949\n");
  // A llama2.c tokenizer.bin, its size read from the file: BOS, "▁O", "n", "ce", "▁upon", "▁a",
  // "▁time", the ids the Rust tokenizers library gives with the tokenizer.json beside it.
  r = run_cli("tokenize --tokenizer " + ds::test::model_tok() +
              " --special --text 'Once upon a time'");
  CHECK(r.out == "1 496 1010 366 432 262 888\n");
}

TEST_CASE("tokenize --texts reproduces the fixtures as JSON", "[cli][tokenize]") {
  for (const std::string name : {"qwen3", "mistral"}) {
    INFO(name);
    std::ifstream in(tokenizers() + "/" + name + "/expected_ids.json");
    const auto expected = nlohmann::json::parse(in);
    nlohmann::json texts = nlohmann::json::array();
    for (const auto& e : expected) texts.push_back(e.at("text"));
    const TempFile file(texts.dump());

    auto r = run_cli("tokenize --tokenizer " + tokenizers() + "/" + name + " --texts " +
                     file.path.string());
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const auto out = nlohmann::json::parse(r.out);
    REQUIRE(out.size() == expected.size());
    for (size_t i = 0; i < out.size(); ++i) {
      CHECK(out[i].at("text") == expected[i].at("text"));
      CHECK(out[i].at("ids") == expected[i].at("ids"));
    }

    // --decode reads that output back: every id list decodes to its text.
    const TempFile encoded(r.out);
    r = run_cli("tokenize --tokenizer " + tokenizers() + "/" + name + " --decode --texts " +
                encoded.path.string());
    REQUIRE(r.exit_code == 0);
    const auto decoded = nlohmann::json::parse(r.out);
    REQUIRE(decoded.size() == expected.size());
    for (size_t i = 0; i < decoded.size(); ++i) {
      CHECK(decoded[i].at("text") == expected[i].at("text"));
    }
  }
}

TEST_CASE("tokenize: chat markup with and without --no-special-in-text", "[cli][tokenize]") {
  const std::string prompt = "'<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n'";
  auto r = run_cli("tokenize --tokenizer " + qwen3() + " --text " + prompt);
  REQUIRE(r.exit_code == 0);
  // <|im_start|> 151644, "user" 872, "\n" 198, "Hi" 13048, <|im_end|> 151645, "assistant" 77091,
  // <think> 151667.
  CHECK(parse_ids(r.out) ==
        Ids{151644, 872, 198, 13048, 151645, 198, 151644, 77091, 198, 151667, 198});

  r = run_cli("tokenize --tokenizer " + qwen3() + " --no-special-in-text --text " + prompt);
  REQUIRE(r.exit_code == 0);
  const Ids plain = parse_ids(r.out);
  CHECK(std::count(plain.begin(), plain.end(), 151644) == 0);
  CHECK(std::count(plain.begin(), plain.end(), 151645) == 0);
  CHECK(std::count(plain.begin(), plain.end(), 151667) == 1);  // <think> is not special

  // --decode drops special tokens unless --special.
  r = run_cli("tokenize --tokenizer " + qwen3() + " --decode --text '151644,872,198,13048,151645'");
  CHECK(r.out == "user\nHi\n");
  r = run_cli("tokenize --tokenizer " + qwen3() +
              " --decode --special --text '151644 872 198 13048 151645'");
  CHECK(r.out == "<|im_start|>user\nHi<|im_end|>\n");
}

TEST_CASE("tokenize: bad input is a clear error, exit 2", "[cli][tokenize][errors]") {
  check_input_error(run_cli("tokenize --tokenizer " + qwen3() + " --text $(printf 'a\\377b')"),
                    "not valid UTF-8 (byte 0xFF at offset 1");
  check_input_error(run_cli("tokenize --tokenizer /nonexistent/tokenizer.json --text x"),
                    "does not exist");
  check_input_error(run_cli("tokenize --tokenizer " + qwen3() + " --decode --text '1 x 3'"),
                    "'x' in the token id list is not a token id");
  check_input_error(run_cli("tokenize --tokenizer " + qwen3() + " --decode --text 999999"),
                    "unknown token id 999999");
  {
    const TempFile not_json("[\"a\", ");
    check_input_error(
        run_cli("tokenize --tokenizer " + qwen3() + " --texts " + not_json.path.string()),
        "': not valid JSON at line 1");
    const TempFile not_strings("[\"a\", 3]");
    check_input_error(
        run_cli("tokenize --tokenizer " + qwen3() + " --texts " + not_strings.path.string()),
        "item 1 is not a string");
    // read bounded, as every text file: /dev/zero filled memory until it ran out
    check_input_error(run_cli("tokenize --tokenizer " + qwen3() + " --texts /dev/zero"),
                      "--texts file '/dev/zero'");
    check_input_error(run_cli("tokenize --tokenizer " + qwen3() + " --decode --texts /tmp"),
                      "--texts file '/tmp' is a directory");
  }
  {
    // tokenizer.json files that are damaged or use what is not supported.
    std::ifstream in(mistral_json());
    const auto original = nlohmann::json::parse(in);
    auto unknown_pre = original;
    unknown_pre["pre_tokenizer"] = {{"type", "CharDelimiterSplit"}, {"delimiter", " "}};
    const TempFile a(unknown_pre.dump());
    check_input_error(run_cli("tokenize --tokenizer " + a.path.string() + " --text x"),
                      "unsupported pre_tokenizer type 'CharDelimiterSplit'");
    auto unknown_model = original;
    unknown_model["model"]["type"] = "WordPiece";
    const TempFile b(unknown_model.dump());
    check_input_error(run_cli("tokenize --tokenizer " + b.path.string() + " --text x"),
                      "unsupported model type 'WordPiece'");
    const TempFile truncated(original.dump().substr(0, 5000));
    check_input_error(run_cli("tokenize --tokenizer " + truncated.path.string() + " --text x"),
                      "not valid JSON");
    auto bad_merge = original;
    bad_merge["model"]["merges"][3] = "no-such-token ▁t";
    const TempFile c(bad_merge.dump());
    check_input_error(run_cli("tokenize --tokenizer " + c.path.string() + " --text x"),
                      "merge 3 ('no-such-token' '▁t') uses a token that is not in the vocabulary");
  }
  // Usage errors: no input, or both inputs.
  auto r = run_cli("tokenize --tokenizer " + qwen3());
  CHECK(r.exit_code == 2);
  r = run_cli("tokenize --tokenizer " + qwen3() + " --text a --texts b.json");
  CHECK(r.exit_code == 2);
}
