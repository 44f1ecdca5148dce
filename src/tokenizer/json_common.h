// Shared pieces of the tokenizer.json reader: the JSON file, error messages that name the file and
// the component, and the String / Regex patterns that Split, Replace and friends use.
#pragma once

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "src/model/config.h"
#include "src/tokenizer/regex.h"

namespace ds::hf {

using nlohmann::json;

// Lets the maps be searched with a string_view, without building a std::string.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};
using IdMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

// The largest id a vocabulary or added token may have: the tokenizer's id space (a table of the
// largest id + 1 entries) stays within a model's vocab_size limit (docs/cli.md, "Input limits"),
// so a file with the id 2147483647 is refused rather than allocating 2^31 strings.
inline constexpr int32_t kMaxTokenId = ConfigLimits::vocab_size - 1;

// Parses a JSON file; ds::Error naming the file when it is not JSON.
json read_json(const std::filesystem::path& path);

// Knows the file name, for error messages ("<file>: unsupported pre_tokenizer type 'X'").
class Parser {
 public:
  explicit Parser(std::string file) : file_(std::move(file)) {}
  const std::string& file() const { return file_; }

  [[noreturn]] void unsupported(std::string_view component, std::string_view type,
                                std::string_view hint) const;
  [[noreturn]] void invalid(std::string_view what) const;

  // j["type"] of a component; a clear error when it is missing.
  std::string type(const json& j, std::string_view component) const;
  // j[key] as a string holding exactly one character.
  std::string one_character(const json& j, const char* key, std::string_view where) const;

 private:
  std::string file_;
};

// A pattern: {"String": "..."} matches the text literally, {"Regex": "..."} is a PCRE2 regex.
class Pattern {
 public:
  Pattern(const json& j, const Parser& parser, std::string_view where);
  // Non-overlapping, non-empty matches, left to right, appended to `out`.
  void find_all(std::string_view text, std::vector<Regex::Span>& out) const;

 private:
  std::string literal_;
  std::shared_ptr<const Regex> regex_;  // set for {"Regex": ...}
};

// Every match of `pattern` in `text` replaced by `content`.
std::string replace_all(std::string_view text, const Pattern& pattern, std::string_view content);
std::string replace_all(std::string_view text, std::string_view literal, std::string_view content);

}  // namespace ds::hf
