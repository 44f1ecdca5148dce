// Real checkpoints' tokenizer.json files (tests/data/tokenizers: Qwen3 byte-level BPE, Mistral
// SentencePiece-style BPE): ids computed by independent implementations reproduced exactly,
// special tokens in chat markup, errors, and a seeded round-trip property test.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "common/error.h"
#include "src/tokenizer/load.h"
#include "src/tokenizer/tokenizer.h"
#include "src/tokenizer/unicode.h"
#include "src/tokenizer/utf8.h"

namespace fs = std::filesystem;
using Ids = std::vector<int32_t>;

namespace {

const fs::path kData = fs::path(DRIFTSCOPE_SOURCE_DIR) / "tests" / "data" / "tokenizers";

// Loading the 11 MB Qwen file takes a while; every test shares one instance (encode and decode
// are const and thread-safe).
const ds::Tokenizer& qwen3() {
  static const auto tok = ds::load_tokenizer(kData / "qwen3");
  return *tok;
}
const ds::Tokenizer& mistral() {
  static const auto tok = ds::load_tokenizer(kData / "mistral");
  return *tok;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct Expected {
  std::string text;
  Ids ids;
};
std::vector<Expected> expected_ids(const std::string& name) {
  const auto j = nlohmann::json::parse(read_file(kData / name / "expected_ids.json"));
  std::vector<Expected> out;
  for (const auto& e : j) out.push_back({e.at("text"), e.at("ids")});
  return out;
}

ds::EncodeOptions plain_text() {
  return {.add_special = false, .special_in_text = false};
}

// Qwen3's added tokens (tokenizer.json "added_tokens").
constexpr int32_t kEndOfText = 151643;  // <|endoftext|>, special
constexpr int32_t kImStart = 151644;    // <|im_start|>, special
constexpr int32_t kImEnd = 151645;      // <|im_end|>, special
constexpr int32_t kThink = 151667;      // <think>, not special
constexpr int32_t kFirstAdded = kEndOfText;

}  // namespace

TEST_CASE("Qwen3 and Mistral fixtures load with their BOS/EOS policy", "[tokenizer][hf]") {
  // Qwen3: 151,643 BPE tokens + 26 added ones; tokenizer_config.json: bos_token null,
  // eos_token <|im_end|>, add_bos_token false; the post-processor (ByteLevel) adds nothing.
  CHECK(qwen3().vocab_size() == 151669);
  CHECK_FALSE(qwen3().bos_id().has_value());
  CHECK(qwen3().eos_id() == kImEnd);
  CHECK(qwen3().token_text(9707) == "Hello");
  CHECK(qwen3().token_text(220) == "\u0120");  // "Ġ", the byte-level stand-in for a space
  CHECK(qwen3().encode("Hello", true) == qwen3().encode("Hello", false));
  const auto qwen_policy = nlohmann::json::parse(qwen3().policy_json());
  CHECK(qwen_policy["kind"] == "hf-bpe");
  CHECK(qwen_policy["bos_id"].is_null());
  CHECK(qwen_policy["eos_id"] == kImEnd);
  CHECK(qwen_policy["adds_bos"] == false);
  CHECK(qwen_policy["adds_eos"] == false);
  CHECK(qwen_policy["special_in_text"] == true);

  // Mistral: 32,000 tokens; <s> = 1 added in front (template and add_bos_token true), no EOS.
  CHECK(mistral().vocab_size() == 32000);
  CHECK(mistral().bos_id() == 1);
  CHECK(mistral().eos_id() == 2);
  const auto mistral_policy = nlohmann::json::parse(mistral().policy_json());
  CHECK(mistral_policy["add_special"]["prefix"] == Ids{1});
  CHECK(mistral_policy["add_special"]["suffix"] == Ids{});
  CHECK(mistral_policy["adds_bos"] == true);
  CHECK(mistral_policy["adds_eos"] == false);
}

TEST_CASE("Qwen3 reproduces the fixture's expected ids and decodes them back", "[tokenizer][hf]") {
  // expected_ids.json: transformers.js (@lenml/tokenizers 3.7.2), add_special_tokens=false.
  const auto cases = expected_ids("qwen3");
  REQUIRE(cases.size() == 10);
  for (const Expected& e : cases) {
    INFO(e.text);
    CHECK(qwen3().encode(e.text, false) == e.ids);
    CHECK(qwen3().decode(e.ids) == e.text);
    // With add_special the ids are the same: Qwen adds no BOS / EOS.
    CHECK(qwen3().encode(e.text, true) == e.ids);
  }
}

TEST_CASE("Mistral reproduces the fixture's expected ids and decodes them back",
          "[tokenizer][hf]") {
  const auto cases = expected_ids("mistral");
  REQUIRE(cases.size() == 10);
  for (const Expected& e : cases) {
    INFO(e.text);
    CHECK(mistral().encode(e.text, false) == e.ids);
    CHECK(mistral().decode(e.ids) == e.text);
    Ids with_bos = {1};
    with_bos.insert(with_bos.end(), e.ids.begin(), e.ids.end());
    CHECK(mistral().encode(e.text, true) == with_bos);
  }
}

TEST_CASE("Qwen ids published by other projects", "[tokenizer][hf]") {
  // Qwen2, Qwen2.5 and Qwen3 share the byte-level vocabulary and merges. A unit test of a Qwen2
  // reimplementation asserts these ids against transformers' AutoTokenizer for
  // Qwen/Qwen2.5-0.5B-Instruct (a chat prompt as apply_chat_template writes it):
  const std::string chat =
      "<|im_start|>system\nYou are a helpful and truthful assistant. You should think "
      "step-by-step.<|im_end|>\n<|im_start|>user\nHow many r in strawberry.<|im_end|>\n"
      "<|im_start|>assistant\n";
  const Ids chat_ids = {151644, 8948, 198,    2610, 525,    264,   10950, 323,   89867,
                        17847,  13,   1446,   1265, 1744,   3019,  14319, 29208, 13,
                        151645, 198,  151644, 872,  198,    4340,  1657,  435,   304,
                        72600,  13,   151645, 198,  151644, 77091, 198};
  CHECK(qwen3().encode(chat, false) == chat_ids);
  // Decoding skips the special tokens; keeping them gives the text back.
  CHECK(qwen3().decode(chat_ids, /*skip_special=*/false) == chat);
  CHECK(qwen3().decode(chat_ids) ==
        "system\nYou are a helpful and truthful assistant. You should think step-by-step.\n"
        "user\nHow many r in strawberry.\nassistant\n");
  // Chinese with digits (a serving project's test request, tokenized by Qwen2.5-7B):
  CHECK(qwen3().encode("您好, 请从 1 数到 10000000.", false) ==
        Ids{111308, 11, 220, 14880, 45181, 220, 16, 47685, 26939, 220, 16, 15, 15, 15, 15, 15, 15,
            15, 13});
}

TEST_CASE("chat markup: special tokens are single ids unless special_in_text is off",
          "[tokenizer][hf]") {
  const std::string prompt =
      "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n<think>\n";
  const Ids ids = qwen3().encode(prompt, false);
  // "user" 872, "\n" 198, "assistant" 77091 as in the published prompt above; "What is 2+2?" is
  // 3838 374 220 17 10 17 30 in another project's Qwen2.5 prompt; <think> is 151667.
  CHECK(ids == Ids{kImStart, 872, 198, 3838, 374, 220, 17, 10, 17, 30, kImEnd, 198, kImStart, 77091,
                   198, kThink, 198});
  CHECK(qwen3().decode(ids, false) == prompt);

  // As plain text the markup is spelled with ordinary tokens: no special id, more ids, and the
  // same text back. <think> is an added token but not a special one, so (as in Hugging Face's
  // split_special_tokens) it is still matched.
  const Ids plain = qwen3().encode(prompt, plain_text());
  for (int32_t id : plain) {
    INFO(id);
    CHECK((id < kFirstAdded || id == kThink));
  }
  CHECK(std::count(plain.begin(), plain.end(), kThink) == 1);
  CHECK(plain.size() > ids.size());
  CHECK(qwen3().decode(plain) == prompt);
  // "<|im_start|>" alone: one id, or the ids of its characters as ordinary text.
  CHECK(qwen3().encode("<|im_start|>", false) == Ids{kImStart});
  CHECK(qwen3().encode("<|im_start|>", plain_text()).size() > 1);

  // Mistral: "<s>" in the text is BOS unless special_in_text is off; the text after it is
  // normalized on its own (a "▁" is prepended to it, as Hugging Face's legacy Llama does).
  const Ids with_bos = mistral().encode("<s>Hello", false);
  CHECK(with_bos == Ids{1, 22557});  // 22557 = "▁Hello" (fixture: "Hello, my dog..." -> 22557, ...)
  const Ids literal = mistral().encode("<s>Hello", plain_text());
  CHECK(std::find(literal.begin(), literal.end(), 1) == literal.end());
  CHECK(mistral().decode(literal) == "<s>Hello");
}

TEST_CASE("text that is not valid UTF-8 is an error naming the offset", "[tokenizer][hf]") {
  for (const ds::Tokenizer* tok : {&qwen3(), &mistral()}) {
    INFO(tok->kind());
    CHECK_THROWS_WITH(tok->encode("ok \xC3\x28 bad", false),
                      Catch::Contains("not valid UTF-8 (byte 0xC3 at offset 3 of 9)"));
    CHECK_THROWS_AS(tok->encode("\xED\xA0\x80", false), ds::Error);  // a surrogate
    CHECK_THROWS_AS(tok->encode("\xE4\xB8", false), ds::Error);      // cut short
  }
}

TEST_CASE("decoding byte-level tokens that are not whole characters", "[tokenizer][hf]") {
  // U+20000 "𠀀" is F0 A0 80 80; Qwen has no token for it, so it becomes three byte-level
  // tokens: "ð" (F0), "łĢ" (A0 80) and "Ģ" (80).
  const Ids ids = qwen3().encode("\U00020000", false);
  REQUIRE(ids == Ids{172, 63219, 222});
  CHECK(qwen3().token_text(172) == "\u00F0");
  CHECK(qwen3().token_text(63219) == "\u0142\u0122");
  CHECK(qwen3().token_text(222) == "\u0122");
  CHECK(qwen3().decode(ids) == "\U00020000");
  // Pieces of it decode as Rust's String::from_utf8_lossy would: one U+FFFD per maximal
  // ill-formed subpart. F0 A0 80 is one cut-off character; A0 80 two stray continuation bytes.
  CHECK(qwen3().decode(Ids{172, 63219}) == "\uFFFD");
  CHECK(qwen3().decode(Ids{63219}) == "\uFFFD\uFFFD");
  CHECK(qwen3().decode(Ids{172, 9707}) == "\uFFFDHello");
}

TEST_CASE("round trip on random Unicode strings (seeded property test)", "[tokenizer][hf]") {
  // decode(encode(s)) gives s back after the normalizer: NFC for Qwen (whose decoder restores
  // every byte), and for Mistral "▁" turned into a space (its decoder writes spaces for "▁").
  // The characters come from pools that exercise every part of the pipeline: ASCII with all
  // whitespace kinds, Latin-1, combining marks (which NFC composes), Greek/Cyrillic, CJK, Hangul,
  // emoji with ZWJ and variation selectors, digits of other scripts, private use and
  // supplementary planes, U+2581 itself, and any scalar value at all.
  struct Range {
    char32_t first, last;
  };
  const std::vector<Range> pools = {
      {0x20, 0x7E},       {0x09, 0x0D},     {0x20, 0x20},     {0xA0, 0xFF},     {0x300, 0x36F},
      {0x391, 0x3C9},     {0x410, 0x44F},   {0x4E00, 0x9FFF}, {0xAC00, 0xD7A3}, {0x1F300, 0x1F64F},
      {0x200D, 0x200D},   {0xFE0F, 0xFE0F}, {0x660, 0x669},   {0x2000, 0x200A}, {0xE000, 0xE0FF},
      {0x20000, 0x2A6DF}, {0x2581, 0x2581}, {0x1, 0x10FFFF}};
  std::mt19937 rng(20240607);
  const auto random_string = [&] {
    std::uniform_int_distribution<int> length(0, 60);
    std::uniform_int_distribution<size_t> pick(0, pools.size() - 1);
    std::string s;
    for (int n = length(rng); n > 0; --n) {
      const Range r = pools[pick(rng)];
      char32_t c = std::uniform_int_distribution<char32_t>(r.first, r.last)(rng);
      if (c >= 0xD800 && c <= 0xDFFF) c = 0xFFFD;  // surrogates are not characters
      // UTF-8 of c.
      if (c < 0x80) {
        s += static_cast<char>(c);
      } else if (c < 0x800) {
        s += static_cast<char>(0xC0 | (c >> 6));
        s += static_cast<char>(0x80 | (c & 0x3F));
      } else if (c < 0x10000) {
        s += static_cast<char>(0xE0 | (c >> 12));
        s += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
        s += static_cast<char>(0x80 | (c & 0x3F));
      } else {
        s += static_cast<char>(0xF0 | (c >> 18));
        s += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
        s += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
        s += static_cast<char>(0x80 | (c & 0x3F));
      }
    }
    return s;
  };
  const auto replace_all = [](std::string s, const std::string& from, const std::string& to) {
    for (size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size()) {
      s.replace(pos, from.size(), to);
    }
    return s;
  };

  int failures = 0;
  for (int i = 0; i < 2000; ++i) {
    const std::string s = random_string();
    REQUIRE(ds::utf8_is_valid(s));
    const std::string qwen_expected = ds::unicode_normalize(s, ds::NormalForm::kNFC);
    const std::string qwen_got = qwen3().decode(qwen3().encode(s, plain_text()));
    const std::string mistral_expected = replace_all(s, "\u2581", " ");
    const std::string mistral_got = mistral().decode(mistral().encode(s, plain_text()));
    if (qwen_got != qwen_expected || mistral_got != mistral_expected) {
      ++failures;
      UNSCOPED_INFO("case " << i << ": " << nlohmann::json(s).dump());
      CHECK(qwen_got == qwen_expected);
      CHECK(mistral_got == mistral_expected);
    }
  }
  CHECK(failures == 0);
}

TEST_CASE("long inputs encode in reasonable time (no quadratic loops)", "[tokenizer][hf]") {
  // A 300 KB mixed text, and the worst cases for the regex and the merges: one 200,000-letter
  // word, 200,000 spaces, 200,000 newlines. A quadratic step would take minutes here.
  std::string text;
  while (text.size() < 300'000) {
    text +=
        "Once upon a time, 中文 and émigré 🙂 1234567 <|im_end|>\n\n  def f(x):\treturn x ";
  }
  const Ids ids = qwen3().encode(text, false);
  CHECK(ids.size() > 50'000);
  CHECK(qwen3().decode(ids, false) == text);
  for (const std::string& s :
       {std::string(200'000, 'a'), std::string(200'000, ' '), std::string(200'000, '\n')}) {
    CHECK(qwen3().decode(qwen3().encode(s, false)) == s);
    CHECK(mistral().decode(mistral().encode(s, false)) == s);
  }
}

TEST_CASE("load_tokenizer accepts a model's padded vocabulary, not a smaller one",
          "[tokenizer][hf]") {
  // Qwen checkpoints have 151,936 embedding rows for 151,669 tokens.
  CHECK(ds::load_tokenizer(kData / "qwen3", 151936)->vocab_size() == 151669);
  CHECK_THROWS_WITH(ds::load_tokenizer(kData / "mistral", 31999),
                    Catch::Contains("has 32000 tokens, the model only 31999"));
  CHECK_THROWS_WITH(ds::load_tokenizer(kData), Catch::Contains("has no tokenizer.json"));
}
