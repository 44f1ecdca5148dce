// The parts of the tokenizer.json pipeline one at a time: pre-tokenizers, added-token matching,
// normalizers, decoders' UTF-8 repair, regexes. Expected values are those of the unit tests of
// huggingface/tokenizers (pre_tokenizers/{split,byte_level,digits,metaspace}.rs,
// tokenizer/added_vocabulary.rs), quoted where used.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "common/error.h"
#include "src/tokenizer/added.h"
#include "src/tokenizer/normalizer.h"
#include "src/tokenizer/pretokenizer.h"
#include "src/tokenizer/regex.h"
#include "src/tokenizer/tokenizer.h"
#include "src/tokenizer/unicode.h"
#include "src/tokenizer/utf8.h"

using nlohmann::json;
using Strings = std::vector<std::string>;

namespace {

const ds::hf::Parser kParser("test.json");

Strings pre_tokenize(const json& config, const std::string& text, bool at_origin = true) {
  const ds::hf::PreTokenizer pre(config, kParser);
  std::vector<ds::hf::Piece> pieces = {{text, at_origin}};
  pre.apply(pieces);
  Strings out;
  for (const auto& p : pieces) out.push_back(p.text);
  return out;
}

json split(const std::string& behavior, bool invert) {
  return {{"type", "Split"},
          {"pattern", {{"Regex", R"(\w+|[^\w\s]+)"}}},
          {"behavior", behavior},
          {"invert", invert}};
}

// (text, id or -1) of each segment.
std::vector<std::pair<std::string, int>> segments(const ds::hf::AddedVocabulary& vocab,
                                                  const ds::hf::Normalizer& normalizer,
                                                  const std::string& text,
                                                  bool match_special = true) {
  std::vector<std::pair<std::string, int>> out;
  for (const auto& s : vocab.split(text, normalizer, match_special)) {
    out.emplace_back(s.text, s.id ? *s.id : -1);
  }
  return out;
}

}  // namespace

TEST_CASE("Split pre-tokenizer: the five delimiter behaviours", "[tokenizer][parts]") {
  // split.rs "basic": the regex \w+|[^\w\s]+ with invert = true, so whitespace delimits.
  const std::string text = "How are you doing?";
  CHECK(pre_tokenize(split("Removed", true), text) == Strings{"How", "are", "you", "doing", "?"});
  CHECK(pre_tokenize(split("Isolated", true), text) ==
        Strings{"How", " ", "are", " ", "you", " ", "doing", "?"});
  CHECK(pre_tokenize(split("MergedWithPrevious", true), text) ==
        Strings{"How ", "are ", "you ", "doing", "?"});
  CHECK(pre_tokenize(split("MergedWithNext", true), text) ==
        Strings{"How", " are", " you", " doing", "?"});
  CHECK(pre_tokenize(split("Contiguous", true), text) ==
        Strings{"How", " ", "are", " ", "you", " ", "doing?"});
  // split.rs "invert": splitting on " " equals splitting inverted on "Hello".
  const json on_space = {{"type", "Split"},
                         {"pattern", {{"String", " "}}},
                         {"behavior", "Removed"},
                         {"invert", false}};
  const json not_hello = {{"type", "Split"},
                          {"pattern", {{"String", "Hello"}}},
                          {"behavior", "Removed"},
                          {"invert", true}};
  CHECK(pre_tokenize(on_space, "Hello Hello Hello") == Strings{"Hello", "Hello", "Hello"});
  CHECK(pre_tokenize(not_hello, "Hello Hello Hello") == Strings{"Hello", "Hello", "Hello"});
}

TEST_CASE("Split with the Qwen / Llama 3 regex", "[tokenizer][parts]") {
  // The look-ahead \s+(?!\S) leaves the last space of a run to the word after it; (?i:'s|...)
  // takes contractions in either case; \p{N} keeps digits one by one.
  const json qwen = {
      {"type", "Split"},
      {"pattern",
       {{"Regex",
         R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"}}},
      {"behavior", "Isolated"},
      {"invert", false}};
  CHECK(pre_tokenize(qwen, "I'M here   now 123!\n\nok") ==
        Strings{"I", "'M", " here", "  ", " now", " ", "1", "2", "3", "!\n\n", "ok"});
  CHECK(pre_tokenize(qwen, "naïve café") == Strings{"naïve", " café"});
}

TEST_CASE("ByteLevel pre-tokenizer", "[tokenizer][parts]") {
  // byte_level.rs "pre_tokenization", "add_prefix_space", "handling_of_newlines",
  // "handling_of_multiple_whitespaces", "offsets_when_char_split_up".
  const json plain = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
  const json prefix = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", true}};
  const json no_regex = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", false}};
  CHECK(pre_tokenize(plain, "Hello my friend, how is your day going?") ==
        Strings{"Hello", "Ġmy", "Ġfriend", ",", "Ġhow", "Ġis", "Ġyour", "Ġday", "Ġgoing", "?"});
  for (const std::string text :
       {"Hello my friend, how is your day going?", " Hello my friend, how is your day going?"}) {
    CHECK(pre_tokenize(prefix, text) ==
          Strings{"ĠHello", "Ġmy", "Ġfriend", ",", "Ġhow", "Ġis", "Ġyour", "Ġday", "Ġgoing", "?"});
  }
  CHECK(pre_tokenize(no_regex, "Hello my friend, how is your day going?") ==
        Strings{"ĠHelloĠmyĠfriend,ĠhowĠisĠyourĠdayĠgoing?"});
  CHECK(pre_tokenize(plain, "Hello there\nHello there") ==
        Strings{"Hello", "Ġthere", "Ċ", "Hello", "Ġthere"});
  CHECK(pre_tokenize(plain, "Hello there       dear") ==
        Strings{"Hello", "Ġthere", "ĠĠĠĠĠĠ", "Ġdear"});
  CHECK(pre_tokenize(plain, "i⭢j") == Strings{"i", "âŃ¢", "j"});
}

TEST_CASE("Digits pre-tokenizer", "[tokenizer][parts]") {
  // digits.rs "numbers" and "individual_digits".
  CHECK(pre_tokenize({{"type", "Digits"}, {"individual_digits", false}}, "Hey 123 friend!") ==
        Strings{"Hey ", "123", " friend!"});
  CHECK(pre_tokenize({{"type", "Digits"}, {"individual_digits", true}}, "Hey 123 friend!") ==
        Strings{"Hey ", "1", "2", "3", " friend!"});
  // char::is_numeric is any Unicode number: Arabic-Indic digits and Roman numerals too.
  CHECK(pre_tokenize({{"type", "Digits"}, {"individual_digits", false}}, "a٣٤Ⅻb") ==
        Strings{"a", "٣٤Ⅻ", "b"});
}

TEST_CASE("Metaspace pre-tokenizer and its prepend schemes", "[tokenizer][parts]") {
  // metaspace.rs "basic" and "multiple_spaces".
  const json always = {{"type", "Metaspace"}, {"replacement", "▁"}, {"prepend_scheme", "always"}};
  CHECK(pre_tokenize(always, "Hey friend!") == Strings{"▁Hey", "▁friend!"});
  CHECK(pre_tokenize(always, "Hey   friend!") == Strings{"▁Hey", "▁", "▁", "▁friend!"});
  // "first" prepends only to the piece at the start of the input (not to text after an added
  // token); "never" to none. split = false keeps the piece whole.
  const json first = {{"type", "Metaspace"}, {"replacement", "▁"}, {"prepend_scheme", "first"}};
  CHECK(pre_tokenize(first, "Hey friend", true) == Strings{"▁Hey", "▁friend"});
  CHECK(pre_tokenize(first, "Hey friend", false) == Strings{"Hey", "▁friend"});
  const json never = {{"type", "Metaspace"}, {"prepend_scheme", "never"}, {"split", false}};
  CHECK(pre_tokenize(never, "Hey friend") == Strings{"Hey▁friend"});
  // Legacy files: add_prefix_space true = "always".
  CHECK(pre_tokenize({{"type", "Metaspace"}, {"add_prefix_space", true}}, "a b") ==
        Strings{"▁a", "▁b"});
}

TEST_CASE("Sequence of pre-tokenizers runs each on every piece", "[tokenizer][parts]") {
  const json seq = {{"type", "Sequence"},
                    {"pretokenizers",
                     {{{"type", "Digits"}, {"individual_digits", true}},
                      {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}};
  CHECK(pre_tokenize(seq, "a 12") == Strings{"aĠ", "1", "2"});
}

TEST_CASE("added tokens: single_word, lstrip, rstrip, normalized", "[tokenizer][parts]") {
  using ds::hf::AddedToken;
  // added_vocabulary.rs "can_extract_added_tokens".
  {
    const ds::hf::Normalizer none;
    const ds::hf::AddedVocabulary vocab(
        {AddedToken{"my", 0, false, false, false, false, true},
         AddedToken{"name", 1, false, false, false, false, true}, AddedToken{"[CLS]", 2, true},
         AddedToken{"[SEP]", 3, true}},
        none);
    CHECK(segments(vocab, none, "[CLS] My name is Anthony [SEP]") ==
          std::vector<std::pair<std::string, int>>{
              {"", 2}, {" My ", -1}, {"", 1}, {" is Anthony ", -1}, {"", 3}});
    // Special tokens left in the text: [CLS] and [SEP] stay characters, "name" still matches.
    CHECK(segments(vocab, none, "[CLS] My name", false) ==
          std::vector<std::pair<std::string, int>>{{"[CLS] My ", -1}, {"", 1}});
  }
  // "options_use_cases": a Lowercase normalizer; "my" (normalized) is found in "My", with the
  // spaces on both sides; "ony" (single_word) is not found inside "Anthony".
  {
    const ds::hf::Normalizer lowercase({{"type", "Lowercase"}}, kParser);
    const ds::hf::AddedVocabulary vocab(
        {AddedToken{"my", 0, false, false, true, true, true},
         AddedToken{"name", 1, false, false, false, false, true},
         AddedToken{"ony", 2, false, true, false, false, true}, AddedToken{"[CLS]", 3, true},
         AddedToken{"[SEP]", 4, true}},
        lowercase);
    CHECK(segments(vocab, lowercase, "[CLS] My name is Anthony [SEP]") ==
          std::vector<std::pair<std::string, int>>{
              {"", 3}, {"", 0}, {"", 1}, {" is anthony ", -1}, {"", 4}});
  }
  // "test_single_word_is_correct" and "test_single_word_is_unicode_correct".
  {
    const ds::hf::Normalizer lowercase({{"type", "Lowercase"}}, kParser);
    const ds::hf::AddedVocabulary vocab({AddedToken{"<mask>", 0, false, true, false, false, true}},
                                        lowercase);
    CHECK(segments(vocab, lowercase, "<mask> My name <mask> A<mask> <mask>ony <mask>") ==
          std::vector<std::pair<std::string, int>>{
              {"", 0}, {" my name ", -1}, {"", 0}, {" a<mask> <mask>ony ", -1}, {"", 0}});
    // A combining mark is a word character; punctuation and dashes are not.
    CHECK(segments(vocab, lowercase, "<mask>, <mask>- \u25CC\u0330<mask>") ==
          std::vector<std::pair<std::string, int>>{
              {"", 0}, {", ", -1}, {"", 0}, {"- \u25CC\u0330<mask>", -1}});
  }
  // "test_lstrip_unicode_space": lstrip / rstrip take any White_Space (tab, U+2000), but not
  // whitespace an earlier match already took.
  {
    const ds::hf::Normalizer lowercase({{"type", "Lowercase"}}, kParser);
    const ds::hf::AddedVocabulary vocab({AddedToken{"<mask>", 0, false, true, true, true, true}},
                                        lowercase);
    CHECK(segments(vocab, lowercase, "Hi <mask> there\t<mask>\t<mask>\u2000") ==
          std::vector<std::pair<std::string, int>>{
              {"hi", -1}, {"", 0}, {"there", -1}, {"", 0}, {"", 0}});
  }
  // Leftmost-longest: "<|a|b|>" wins over its prefix "<|a|".
  {
    const ds::hf::Normalizer none;
    const ds::hf::AddedVocabulary vocab(
        {AddedToken{"<|a|", 0, true}, AddedToken{"<|a|b|>", 1, true}}, none);
    CHECK(segments(vocab, none, "x<|a|b|>y<|a|z") ==
          std::vector<std::pair<std::string, int>>{
              {"x", -1}, {"", 1}, {"y", -1}, {"", 0}, {"z", -1}});
  }
}

TEST_CASE("normalizers: NFC, NFKC, Lowercase, Prepend, Replace with a regex",
          "[tokenizer][parts]") {
  const ds::hf::Normalizer nfc({{"type", "NFC"}}, kParser);
  CHECK(nfc.apply("e\u0301") == "\u00E9");  // e + combining acute -> é
  CHECK(nfc.apply("\u00E9") == "\u00E9");
  const ds::hf::Normalizer nfkc({{"type", "NFKC"}}, kParser);
  CHECK(nfkc.apply("\uFB01") == "fi");  // the ligature ﬁ
  const ds::hf::Normalizer nfd({{"type", "NFD"}}, kParser);
  CHECK(nfd.apply("\u00E9") == "e\u0301");
  // Lowercase maps character by character: a final capital sigma becomes σ, as Rust does.
  const ds::hf::Normalizer lower({{"type", "Lowercase"}}, kParser);
  CHECK(lower.apply("ÀB ΟΔΟΣ") == "àb οδοσ");
  const ds::hf::Normalizer seq(
      {{"type", "Sequence"},
       {"normalizers",
        {{{"type", "Replace"}, {"pattern", {{"Regex", " {2,}"}}}, {"content", " "}},
         {{"type", "Prepend"}, {"prepend", "▁"}}}}},
      kParser);
  CHECK(seq.apply("a   b  c") == "▁a b c");
  CHECK(seq.apply("").empty());  // Prepend adds nothing to an empty text
}

TEST_CASE("UTF-8 repair and validation", "[tokenizer][parts]") {
  // Maximal subparts (Unicode 15, section 3.9, Table 3-8 example): 61 F1 80 80 E1 80 C2 62 80 63
  // 80 BF 64 -> a, FFFD, FFFD, FFFD, b, FFFD, c, FFFD, FFFD, d.
  CHECK(ds::utf8_make_valid("\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64") ==
        "a\uFFFD\uFFFD\uFFFDb\uFFFDc\uFFFD\uFFFDd");
  CHECK(ds::utf8_make_valid("\xE4\xB8") == "\uFFFD");                          // cut short
  CHECK(ds::utf8_make_valid("\xED\xA0\x80") == "\uFFFD\uFFFD\uFFFD");          // a surrogate
  CHECK(ds::utf8_make_valid("\xF0\x9F\x99\x82 ok") == "\xF0\x9F\x99\x82 ok");  // valid stays
  CHECK(ds::utf8_first_invalid("ab\xC0\xAF") == 2u);                           // overlong
  CHECK_FALSE(ds::utf8_first_invalid("é中🙂").has_value());
}

TEST_CASE("regex: Unicode classes, and errors that name the pattern", "[tokenizer][parts]") {
  const ds::Regex letters(R"(\p{L}+)", "test");
  std::vector<ds::Regex::Span> spans;
  letters.find_all("ab 中文 12 été", spans);
  CHECK(spans == std::vector<ds::Regex::Span>{{0, 2}, {3, 9}, {13, 18}});
  // An empty match moves on by a whole character, never into the middle of one.
  const ds::Regex empty("x*", "test");
  spans.clear();
  empty.find_all("中x", spans);
  CHECK(spans == std::vector<ds::Regex::Span>{{3, 4}});
  CHECK_THROWS_WITH(ds::Regex("[a-", "tokenizer.json: Split pre_tokenizer"),
                    Catch::Contains("tokenizer.json: Split pre_tokenizer: invalid regex '[a-'"));
  CHECK(ds::unicode_library_version().starts_with("ICU "));
}

// \C matches a single byte even in UTF mode: a Split on it cut "é" into two invalid halves, which
// the BPE model decoded with *utf8_decode_char of an empty optional (found by reading the code
// fuzz_tokenizer_json reaches). The pattern is refused when the tokenizer is loaded.
TEST_CASE("regex: a pattern with the one-byte escape backslash-C is refused",
          "[tokenizer][parts]") {
  CHECK_THROWS_WITH(ds::Regex(R"(\C)", "tokenizer.json: Split pre_tokenizer"),
                    Catch::Contains("tokenizer.json: Split pre_tokenizer: invalid regex '\\C'"));
  CHECK_THROWS_AS(ds::Regex(R"(a\C+)", "test"), ds::Error);
}

TEST_CASE("a small Llama 3 shaped tokenizer.json: ignore_merges, Sequence post-processor",
          "[tokenizer][parts]") {
  // Llama 3's layout on a toy vocabulary: Split (digits in groups of up to three) + ByteLevel
  // without its own regex, BPE with ignore_merges, post-processor Sequence[ByteLevel,
  // TemplateProcessing] putting <|begin_of_text|> in front, ByteLevel decoder.
  const json config = json::parse(R"({
    "added_tokens": [{"id": 9, "content": "<|begin_of_text|>", "special": true,
                      "normalized": false}],
    "normalizer": null,
    "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
      {"type": "Split", "pattern": {"Regex": "\\p{N}{1,3}| ?\\p{L}+|\\s+"},
       "behavior": "Isolated", "invert": false},
      {"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}]},
    "model": {"type": "BPE", "ignore_merges": true,
              "vocab": {"a": 0, "b": 1, "c": 2, "bc": 3, "abc": 4, "1": 5, "2": 6, "Ġ": 7,
                        "Ġa": 8, "12": 10},
              "merges": ["b c", "Ġ a", "1 2"]},
    "post_processor": {"type": "Sequence", "processors": [
      {"type": "ByteLevel", "add_prefix_space": true},
      {"type": "TemplateProcessing",
       "single": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}},
                  {"Sequence": {"id": "A", "type_id": 0}}],
       "special_tokens": {"<|begin_of_text|>": {"id": "<|begin_of_text|>", "ids": [9]}}}]},
    "decoder": {"type": "ByteLevel"}
  })");
  const auto dir = std::filesystem::temp_directory_path() /
                   ("ds_llama3_shape_" + std::to_string(std::random_device{}()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "tokenizer.json") << config.dump();
  const auto tok = ds::load_hf_tokenizer(dir / "tokenizer.json");
  std::filesystem::remove_all(dir);

  // "abc" is a vocabulary entry: taken whole, though the merges alone would give "a" "bc".
  CHECK(tok->encode("abc", false) == std::vector<int32_t>{4});
  // " ab" is not: merges give "Ġa" then "b". "1212" splits as "121" "2" (else it would be
  // "12" "12").
  CHECK(tok->encode("abc ab", false) == std::vector<int32_t>{4, 8, 1});
  CHECK(tok->encode("1212", false) == std::vector<int32_t>{10, 5, 6});
  CHECK(tok->encode("abc", true) == std::vector<int32_t>{9, 4});
  CHECK(tok->bos_id() == 9);
  CHECK(tok->decode(std::vector<int32_t>{9, 4, 8, 1}) == "abc ab");
}
