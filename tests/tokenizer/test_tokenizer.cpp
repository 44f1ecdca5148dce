// Tests of the llama2.c and Hugging Face tokenizers: ids derived by hand from the third-party
// stories260K / aidreams260K files (../shared/models; those cases skip where it is absent), and
// the two formats of the bundled kjv-llama tokenizer against each other.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <vector>

#include "common/error.h"
#include "src/tokenizer/tokenizer.h"
#include "tests/support/paths.h"

namespace fs = std::filesystem;
using Ids = std::vector<int32_t>;

namespace {

const fs::path kStoriesBin = ds::test::stories_tok();
const fs::path kStoriesJson = fs::path(ds::test::stories_hf()) / "tokenizer.json";
const fs::path kAidreamsBin = ds::test::aidreams_tok();

std::unique_ptr<ds::Tokenizer> stories_llama2c() {
  return ds::load_llama2c_tokenizer(kStoriesBin, 512);
}
std::unique_ptr<ds::Tokenizer> stories_hf() {
  return ds::load_hf_tokenizer(kStoriesJson);
}

// A fresh directory under the system temp dir, removed with everything in it at scope exit.
class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = fs::temp_directory_path() / ("ds_test_tokenizer_" + std::to_string(rd()));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }
  fs::path write(const std::string& name, const std::string& content) const {
    std::ofstream(path_ / name, std::ios::binary) << content;
    return path_ / name;
  }

 private:
  fs::path path_;
};

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The bundled kjv-llama tokenizer.json (Llama 2's layout), for tests that damage a copy of it.
nlohmann::json bundled_json() {
  return nlohmann::json::parse(read_file(fs::path(ds::test::model_hf()) / "tokenizer.json"));
}

// Texts for round trips and for comparing the two formats: ASCII, punctuation, newlines, tabs,
// repeated and leading/trailing spaces, characters the 512-token vocabulary has ("é") and ones it
// lacks, which fall back to bytes (ü, 中文, emoji, a ZWJ sequence, the euro sign).
const std::vector<std::string> kTexts = {
    "Once upon a time",
    "Once upon a time, there was a little girl named Lily. She loved to play outside.",
    "Lily's mom said, \"Lily, let's go to the park.\"",
    "line one\nline two\n\nline four\n",
    "tabs\tand\r\nwindows newlines",
    "  two leading spaces,   three inside and trailing  ",
    " ",
    "café, naïve, über",
    "中文 text",
    "emoji 🙂 and 👩‍💻 and €5",
    "x",
};

// A llama2.c tokenizer.bin and a tokenizer.json of one vocabulary encode every text to the same
// ids (BOS included) and decode those ids to the same text.
void check_same_ids(const ds::Tokenizer& bin, const ds::Tokenizer& json,
                    const std::vector<std::string>& texts) {
  for (const std::string& text : texts) {
    INFO(text);
    const Ids ids = bin.encode(text, true);
    CHECK(ids.size() > 1);
    CHECK(json.encode(text, true) == ids);
    CHECK(json.decode(ids) == bin.decode(ids));
  }
}

}  // namespace

TEST_CASE("llama2.c tokenizer loads stories260K's tok512.bin", "[tokenizer]") {
  DS_REQUIRE_SHARED_MODELS();
  auto tok = stories_llama2c();
  CHECK(tok->kind() == "llama2c");
  CHECK(tok->vocab_size() == 512);
  CHECK(tok->bos_id() == 1);
  CHECK(tok->eos_id() == 2);
  // llama2.c files store SentencePiece's "▁" as a plain space.
  CHECK(tok->token_text(403) == " Once");
  CHECK(tok->token_text(3 + 0x0A) == "<0x0A>");
}

TEST_CASE("tokenizer.json tokenizer loads the stories260K-hf files", "[tokenizer]") {
  DS_REQUIRE_SHARED_MODELS();
  auto tok = stories_hf();
  CHECK(tok->kind() == "hf-bpe");
  CHECK(tok->vocab_size() == 512);
  CHECK(tok->bos_id() == 1);  // from tokenizer_config.json: bos_token "<s>"
  CHECK(tok->eos_id() == 2);  // eos_token "</s>"
  CHECK(tok->token_text(403) == "\u2581Once");
  CHECK(tok->token_text(3 + 0xE4) == "<0xE4>");
}

TEST_CASE("known ids: 'Once upon a time'", "[tokenizer]") {
  DS_REQUIRE_SHARED_MODELS();
  // Derived by hand from model.vocab in stories260K-hf/tokenizer.json: the normalizer makes
  // "▁Once▁upon▁a▁time", and each "▁word" is itself a vocabulary entry: "▁Once" = 403,
  // "▁upon" = 407, "▁a" = 261, "▁time" = 378; BOS "<s>" = 1. (Hugging Face's own tokenizers
  // library gives the same ids for this file.) The same ids are the start of the model's known
  // greedy output "Once upon a time, ...".
  const Ids expected = {1, 403, 407, 261, 378};
  CHECK(stories_llama2c()->encode("Once upon a time", true) == expected);
  CHECK(stories_hf()->encode("Once upon a time", true) == expected);
}

TEST_CASE("known ids: equal merges go leftmost first", "[tokenizer]") {
  DS_REQUIRE_SHARED_MODELS();
  // "▁Olll": the merges that apply are "▁ O" -> "▁O" (319) and "l l" -> "ll" (306), the latter at
  // two overlapping places; nothing merges with "ll" or "▁O" afterwards. Taking the leftmost "l l"
  // gives "▁O", "ll", "l" (421); the rightmost would give "▁O", "l", "ll".
  const Ids expected = {319, 306, 421};
  CHECK(stories_llama2c()->encode("Olll", false) == expected);
  CHECK(stories_hf()->encode("Olll", false) == expected);
}

TEST_CASE("BOS is added only with add_special", "[tokenizer]") {
  DS_REQUIRE_SHARED_MODELS();
  for (auto& tok : {stories_llama2c(), stories_hf()}) {
    INFO(tok->kind());
    const Ids with = tok->encode("Lily", true);
    const Ids without = tok->encode("Lily", false);
    // "▁Lily" is vocabulary entry 317.
    CHECK(with == Ids{1, 317});
    CHECK(without == Ids{317});
    // The empty text: BOS alone, or nothing (no dummy-prefix space either).
    CHECK(tok->encode("", true) == Ids{1});
    CHECK(tok->encode("", false).empty());
  }
}

TEST_CASE("characters missing from the vocabulary fall back to their UTF-8 bytes", "[tokenizer]") {
  DS_REQUIRE_SHARED_MODELS();
  // "中" is U+4E2D = E4 B8 AD in UTF-8; byte b is the piece "<0xBB>" with id b + 3
  // (0xE4 + 3 = 231, 0xB8 + 3 = 187, 0xAD + 3 = 176). 410 is the dummy-prefix "▁" / " ".
  // "é" on the other hand is in the vocabulary (id 485) and stays one token.
  for (auto& tok : {stories_llama2c(), stories_hf()}) {
    INFO(tok->kind());
    CHECK(tok->encode("中", false) == Ids{410, 231, 187, 176});
    CHECK(tok->token_text(231) == "<0xE4>");
    CHECK(tok->encode("é", false) == Ids{410, 485});
    // A newline is not in the vocabulary either: <0x0A> = 13.
    CHECK(tok->encode("\n", false) == Ids{410, 13});
  }
}

TEST_CASE("text that is not valid UTF-8", "[tokenizer]") {
  DS_REQUIRE_SHARED_MODELS();
  // run.c has no notion of validity: a lone 0xFF byte falls back to its byte piece, 0xFF + 3.
  CHECK(stories_llama2c()->encode("\xFF", false) == Ids{410, 258});
  // Hugging Face tokenizers take only valid strings.
  CHECK_THROWS_AS(stories_hf()->encode("\xFF", false), ds::Error);
}

TEST_CASE("text -> ids -> text round trips", "[tokenizer]") {
  DS_REQUIRE_SHARED_MODELS();
  auto aidreams = ds::load_llama2c_tokenizer(kAidreamsBin, 512);
  for (auto& tok : {stories_llama2c(), stories_hf(), std::move(aidreams)}) {
    for (const std::string& text : kTexts) {
      INFO(tok->kind() << ": " << text);
      CHECK(tok->decode(tok->encode(text, true)) == text);
      CHECK(tok->decode(tok->encode(text, false)) == text);
    }
  }
}

TEST_CASE("tok512.bin and tokenizer.json give the same ids", "[tokenizer]") {
  DS_REQUIRE_SHARED_MODELS();
  // An independent check: the two files are separate conversions of the same SentencePiece model,
  // and the llama2.c merge-by-score loop must agree with Hugging Face's merge-by-rank BPE
  // (models/README.md records the same agreement for transformers.js).
  check_same_ids(*stories_llama2c(), *stories_hf(), kTexts);
}

TEST_CASE("decode skips special tokens", "[tokenizer]") {
  DS_REQUIRE_SHARED_MODELS();
  for (auto& tok : {stories_llama2c(), stories_hf()}) {
    INFO(tok->kind());
    // <unk> = 0, <s> = 1, </s> = 2 are special; 403 = "▁Once", 426 = ".".
    CHECK(tok->decode(Ids{1, 403, 426, 2}) == "Once.");
    CHECK(tok->decode(Ids{0, 1, 2}).empty());
  }
}

TEST_CASE("decoding incomplete UTF-8 byte tokens", "[tokenizer]") {
  DS_REQUIRE_SHARED_MODELS();
  // <0xE4><0xB8> is "中" cut short. Hugging Face's ByteFallback decoder turns each byte of an
  // invalid run into U+FFFD; llama2.c's decoder writes the raw bytes.
  const Ids ids = {231, 187};
  CHECK(stories_hf()->decode(ids) == "\uFFFD\uFFFD");
  CHECK(stories_llama2c()->decode(ids) == "\xE4\xB8");
}

TEST_CASE("decode rejects ids outside the vocabulary", "[tokenizer]") {
  DS_REQUIRE_SHARED_MODELS();
  for (auto& tok : {stories_llama2c(), stories_hf()}) {
    INFO(tok->kind());
    CHECK_THROWS_AS(tok->decode(Ids{403, 512}), ds::Error);
    CHECK_THROWS_AS(tok->decode(Ids{-1}), ds::Error);
    CHECK_THROWS_WITH(tok->decode(Ids{512}),
                      Catch::Contains("unknown token id 512 (vocabulary has 512 tokens)"));
    CHECK_THROWS_AS(tok->token_text(600), ds::Error);
  }
}

TEST_CASE("a truncated or mismatched tokenizer.bin is an error", "[tokenizer]") {
  DS_REQUIRE_SHARED_MODELS();
  TempDir dir;
  const std::string bytes = read_file(kStoriesBin);
  REQUIRE(bytes.size() == 6227);
  for (size_t keep : {size_t{0}, size_t{2}, size_t{100}, bytes.size() - 1}) {
    INFO(keep << " bytes kept");
    const fs::path cut = dir.write("tok_cut.bin", bytes.substr(0, keep));
    CHECK_THROWS_AS(ds::load_llama2c_tokenizer(cut, 512), ds::Error);
  }
  // The file holds 512 tokens; a model header claiming more does not fit it.
  CHECK_THROWS_WITH(ds::load_llama2c_tokenizer(kStoriesBin, 513),
                    Catch::Contains("corrupt llama2.c tokenizer"));
  CHECK_THROWS_AS(ds::load_llama2c_tokenizer(dir.path() / "missing.bin", 512), ds::Error);
}

TEST_CASE("malformed or unsupported tokenizer.json is an error", "[tokenizer]") {
  TempDir dir;
  SECTION("not JSON") {
    const fs::path p = dir.write("tokenizer.json", "{\"model\": {\"type\": \"BPE\", ");
    CHECK_THROWS_WITH(ds::load_hf_tokenizer(p),
                      Catch::Contains(p.string()) && Catch::Contains("not valid JSON"));
  }
  SECTION("JSON of the wrong shape") {
    const fs::path p = dir.write("tokenizer.json", "{\"model\": 3}");
    CHECK_THROWS_AS(ds::load_hf_tokenizer(p), ds::Error);
    const fs::path q = dir.write("tokenizer.json", "[1, 2]");
    CHECK_THROWS_WITH(ds::load_hf_tokenizer(q), Catch::Contains("no \"model\" object"));
  }
  SECTION("unsupported component types") {
    nlohmann::json j = bundled_json();
    std::string expected;
    SECTION("BERT pre-tokenizer") {
      j["pre_tokenizer"] = {{"type", "BertPreTokenizer"}};
      expected = "unsupported pre_tokenizer type 'BertPreTokenizer'";
    }
    SECTION("pre-tokenizer inside a Sequence") {
      j["pre_tokenizer"] = {
          {"type", "Sequence"},
          {"pretokenizers", {{{"type", "ByteLevel"}}, {{"type", "Punctuation"}}}}};
      expected = "unsupported pre_tokenizer type 'Punctuation'";
    }
    SECTION("BERT normalizer") {
      j["normalizer"] = {{"type", "BertNormalizer"}};
      expected = "unsupported normalizer type 'BertNormalizer'";
    }
    SECTION("a regex PCRE2 rejects") {
      j["normalizer"] = {{"type", "Replace"}, {"pattern", {{"Regex", "(a"}}}, {"content", " "}};
      expected = "Replace normalizer: invalid regex '(a'";
    }
    SECTION("unknown Split behavior") {
      j["pre_tokenizer"] = {
          {"type", "Split"}, {"pattern", {{"String", " "}}}, {"behavior", "Sideways"}};
      expected = "unknown Split behavior 'Sideways'";
    }
    SECTION("Unigram model") {
      j["model"]["type"] = "Unigram";
      expected = "unsupported model type 'Unigram'";
    }
    SECTION("WordPiece decoder") {
      j["decoder"] = {{"type", "WordPiece"}};
      expected = "unsupported decoder type 'WordPiece'";
    }
    SECTION("RobertaProcessing post-processor") {
      j["post_processor"] = {{"type", "RobertaProcessing"}};
      expected = "unsupported post_processor type 'RobertaProcessing'";
    }
    SECTION("a component without a type") {
      j["pre_tokenizer"] = {{"replacement", "_"}};
      expected = "the pre_tokenizer has no \"type\"";
    }
    SECTION("a merge that is not two tokens") {
      j["model"]["merges"][0] = "a b c";
      expected = "merge 0 'a b c' is not two tokens separated by one space";
    }
    const fs::path p = dir.write("tokenizer.json", j.dump());
    CHECK_THROWS_AS(ds::load_hf_tokenizer(p), ds::Error);
    CHECK_THROWS_WITH(ds::load_hf_tokenizer(p), Catch::Contains(expected));
  }
}

// Found by fuzz_tokenizer_json in CI: a token id written as 1.98e70 reached nlohmann's get<int>,
// a float-to-int cast out of range (undefined behaviour, a UBSan abort). Every id and count of the
// file is now a whole number in range or an error naming it.
TEST_CASE("tokenizer.json ids and counts that are not whole numbers in range are errors",
          "[tokenizer]") {
  TempDir dir;
  nlohmann::json j = bundled_json();
  std::string expected;
  SECTION("a vocabulary id far past int's range, written as a float") {
    j["model"]["vocab"]["<0xC3>"] = 1.98e70;
    expected = "token '<0xC3>' has id 1.98e+70";
  }
  SECTION("a vocabulary id of 2^32 + 1 (not wrapped to 1)") {
    j["model"]["vocab"]["<0xC3>"] = 4294967297LL;
    expected = "token '<0xC3>' has id 4294967297";
  }
  SECTION("an added token's id 2.5") {
    j["added_tokens"][0]["id"] = 2.5;
    expected = "added token id 2.5";
  }
  SECTION("a template special token's id -1e300") {
    j["post_processor"]["special_tokens"]["<s>"]["ids"][0] = -1e300;
    expected = "special token '<s>' has id -1e+300";
  }
  SECTION("a Strip decoder's count below zero") {
    j["decoder"]["decoders"][3]["start"] = -1;
    expected = "the Strip decoder's start is -1";
  }
  const fs::path p = dir.write("tokenizer.json", j.dump());
  CHECK_THROWS_WITH(ds::load_hf_tokenizer(p), Catch::Contains(expected));
}

// An id of 2147483647 made the id space 2^31 strings (and its + 1 overflowed int32): ids are
// bounded by the vocab_size limit of models, 2^22 (found by reading the code fuzz_tokenizer_json
// reaches).
TEST_CASE("tokenizer.json ids past the vocabulary size limit are errors", "[tokenizer]") {
  TempDir dir;
  nlohmann::json j = bundled_json();
  std::string expected;
  SECTION("a vocabulary id of 2^22") {
    j["model"]["vocab"]["<0xC3>"] = 4194304;
    expected = "token '<0xC3>' has id 4194304, not a whole number in 0..4194303";
  }
  SECTION("an added token's id of 2^31 - 1") {
    j["added_tokens"][0]["id"] = 2147483647;
    expected = "added token id 2147483647, not a whole number in 0..4194303";
  }
  const fs::path p = dir.write("tokenizer.json", j.dump());
  CHECK_THROWS_AS(ds::load_hf_tokenizer(p), ds::Error);
  CHECK_THROWS_WITH(ds::load_hf_tokenizer(p), Catch::Contains(expected));
}

TEST_CASE("tokenizer.json with the largest allowed id has 2^22 ids", "[tokenizer]") {
  TempDir dir;
  nlohmann::json j = bundled_json();
  j["added_tokens"][0]["id"] = 4194303;
  const auto tok = ds::load_hf_tokenizer(dir.write("tokenizer.json", j.dump()));
  CHECK(tok->vocab_size() == 4194304);
}

TEST_CASE("tokenizer.json with a Split on backslash-C is refused", "[tokenizer]") {
  TempDir dir;
  nlohmann::json j = bundled_json();
  j["pre_tokenizer"] = {
      {"type", "Split"}, {"pattern", {{"Regex", "\\C"}}}, {"behavior", "Isolated"}};
  CHECK_THROWS_WITH(ds::load_hf_tokenizer(dir.write("tokenizer.json", j.dump())),
                    Catch::Contains("invalid regex '\\C'"));
}

TEST_CASE("tokenizer.json without tokenizer_config.json uses the template's BOS", "[tokenizer]") {
  DS_REQUIRE_SHARED_MODELS();
  TempDir dir;
  const fs::path p = dir.write("tokenizer.json", read_file(kStoriesJson));
  auto tok = ds::load_hf_tokenizer(p);
  CHECK(tok->bos_id() == 1);  // the TemplateProcessing "single" template starts with <s>
  CHECK_FALSE(tok->eos_id().has_value());
  CHECK(tok->encode("Lily", true) == Ids{1, 317});
}

TEST_CASE("tokenizer_config.json overrides add_bos_token / add_eos_token", "[tokenizer]") {
  DS_REQUIRE_SHARED_MODELS();
  TempDir dir;
  const fs::path p = dir.write("tokenizer.json", read_file(kStoriesJson));
  dir.write("tokenizer_config.json", R"({"add_bos_token": false, "add_eos_token": true,
      "bos_token": {"content": "<s>"}, "eos_token": "</s>"})");
  auto tok = ds::load_hf_tokenizer(p);
  CHECK(tok->bos_id() == 1);
  CHECK(tok->eos_id() == 2);
  CHECK(tok->encode("Lily", true) == Ids{317, 2});
  CHECK(tok->encode("Lily", false) == Ids{317});
}

TEST_CASE("Metaspace pre-tokenizer and decoder", "[tokenizer]") {
  // The same vocabulary with the newer Llama / Mistral layout: no normalizer, a Metaspace
  // pre-tokenizer that turns spaces into "▁", prepends one (unless the text already starts with
  // one) and splits in front of each "▁"; a Metaspace decoder that turns "▁" back into spaces and
  // drops those of the first token.
  DS_REQUIRE_SHARED_MODELS();  // ids derived by hand from stories260K-hf's vocabulary
  TempDir dir;
  nlohmann::json j = nlohmann::json::parse(read_file(kStoriesJson));
  j["normalizer"] = nullptr;
  const nlohmann::json metaspace = {{"type", "Metaspace"},
                                    {"replacement", "\u2581"},
                                    {"prepend_scheme", "always"},
                                    {"split", true}};
  j["pre_tokenizer"] = metaspace;
  j["decoder"] = {{"type", "Sequence"},
                  {"decoders", {metaspace, {{"type", "ByteFallback"}}, {{"type", "Fuse"}}}}};
  auto tok = ds::load_hf_tokenizer(dir.write("tokenizer.json", j.dump()));

  CHECK(tok->encode("Once upon a time", false) == Ids{403, 407, 261, 378});
  // "  hi" -> "▁▁hi" (no second prepend) -> words "▁", "▁hi". The vocabulary has "▁" = 410 and
  // "▁h" = 270 but neither "▁hi" nor "hi", so "▁hi" becomes "▁h" + "i" (417).
  const Ids ids = tok->encode("  hi", false);
  CHECK(ids == Ids{410, 270, 417});
  // The first token "▁" decodes to nothing: one of the two spaces is lost, as in Hugging Face.
  CHECK(tok->decode(ids) == " hi");
  for (std::string_view text : {"Lily's mom said, \"Lily!\"", "中文 text", "a\nb"}) {
    CHECK(tok->decode(tok->encode(text, true)) == text);
  }
}

TEST_CASE("a 200 KB text encodes and round trips", "[tokenizer]") {
  DS_REQUIRE_SHARED_MODELS();
  // Both encoders merge with a priority queue; a quadratic merge loop would take minutes here.
  std::string text;
  while (text.size() < 200'000) {
    text +=
        "Once upon a time, there was a little girl named Lily. She saw a big, red ball.\n"
        "  Café, 中文 🙂 and   spaces. ";
  }
  for (auto& tok : {stories_llama2c(), stories_hf()}) {
    INFO(tok->kind());
    const Ids ids = tok->encode(text, true);
    CHECK(ids.size() > 50'000);
    CHECK(tok->decode(ids) == text);
  }
  // A run of one character, the worst case for merging: 100,000 spaces.
  const std::string spaces(100'000, ' ');
  CHECK(stories_hf()->decode(stories_hf()->encode(spaces, false)) == spaces);
  CHECK(stories_llama2c()->decode(stories_llama2c()->encode(spaces, false)) == spaces);
}

TEST_CASE("kjv-llama: tokenizer.bin and tokenizer.json give the same ids", "[tokenizer]") {
  // Two encoders over two files that scripts/make_models wrote from one trained vocabulary: the
  // llama2.c loop merges the neighbours whose concatenation scores highest, the tokenizer.json BPE
  // merges by rank. They agree only if the merges list was written as make_models documents.
  auto bin = ds::load_llama2c_tokenizer(ds::test::model_tok(), 1024);
  auto json = ds::load_hf_tokenizer(fs::path(ds::test::model_hf()) / "tokenizer.json");
  std::vector<std::string> texts = kTexts;
  std::ifstream prompts(ds::test::prompts());
  for (std::string line; std::getline(prompts, line);) texts.push_back(line);
  REQUIRE(texts.size() == kTexts.size() + 32);
  texts.push_back(
      "And it came to pass in those days, that there went out a decree from Caesar Augustus, that "
      "all the world should be taxed. (And this taxing was first made when Cyrenius was governor "
      "of Syria.) Thy word is a lamp unto my feet; and a light unto my path! Selah? 1234567890");
  check_same_ids(*bin, *json, texts);
  for (const std::string& text : texts) CHECK(bin->decode(bin->encode(text, true)) == text);
}

TEST_CASE("kjv tokenizers: text -> ids -> text round trips", "[tokenizer]") {
  for (const std::string& dir : {ds::test::model_hf(), ds::test::qwen2_hf()}) {
    auto tok = ds::load_hf_tokenizer(fs::path(dir) / "tokenizer.json");
    for (const std::string& text : kTexts) {
      INFO(dir << ": " << text);
      CHECK(tok->decode(tok->encode(text, false)) == text);
    }
  }
}
