// tokenizer.json reading helpers: JSON parsing, error messages, patterns (see
// tokenizer_hf_common.h).
#include "src/tokenizer/json_common.h"

#include <fmt/format.h>

#include "common/error.h"
#include "common/json_error.h"
#include "src/model/text_file.h"
#include "src/tokenizer/utf8.h"

namespace ds::hf {

json read_json(const std::filesystem::path& path) {
  const char* hint = "the file may be truncated or damaged; fetch it again";
  // bounded and regular: a folder, a FIFO or a file of gigabytes is refused with the limit
  const std::string text = read_regular_text_file(path, kMaxTokenizerBytes, "tokenizer file", hint);
  try {
    return json::parse(text);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number like 1e400
    throw Error(json_parse_failure(path.string(), text, e), hint);
  }
}

void Parser::unsupported(std::string_view component, std::string_view type,
                         std::string_view hint) const {
  throw Error(fmt::format("{}: unsupported {} type '{}'", file_, component, type),
              std::string(hint));
}

void Parser::invalid(std::string_view what) const {
  throw Error(fmt::format("{}: {}", file_, what),
              "the tokenizer.json does not follow the Hugging Face format");
}

std::string Parser::type(const json& j, std::string_view component) const {
  if (!j.is_object() || !j.contains("type") || !j.at("type").is_string()) {
    invalid(fmt::format("the {} has no \"type\"", component));
  }
  return j.at("type").get<std::string>();
}

std::string Parser::one_character(const json& j, const char* key, std::string_view where) const {
  const auto s = j.at(key).get<std::string>();
  if (s.empty() || !utf8_is_valid(s) || utf8_decode_char(s, 0)->length != s.size()) {
    invalid(fmt::format("the {} {} '{}' is not one character", where, key, s));
  }
  return s;
}

Pattern::Pattern(const json& j, const Parser& parser, std::string_view where) {
  if (j.is_object() && j.contains("String")) {
    literal_ = j.at("String").get<std::string>();
    if (literal_.empty()) parser.invalid(fmt::format("the {} has an empty String pattern", where));
  } else if (j.is_object() && j.contains("Regex")) {
    regex_ = std::make_shared<const Regex>(j.at("Regex").get<std::string>(),
                                           fmt::format("{}: {}", parser.file(), where));
  } else {
    parser.invalid(fmt::format("the {} has no String or Regex pattern", where));
  }
}

void Pattern::find_all(std::string_view text, std::vector<Regex::Span>& out) const {
  if (regex_) {
    regex_->find_all(text, out);
    return;
  }
  for (size_t hit = text.find(literal_); hit != std::string_view::npos;
       hit = text.find(literal_, hit + literal_.size())) {
    out.emplace_back(hit, hit + literal_.size());
  }
}

std::string replace_all(std::string_view text, const Pattern& pattern, std::string_view content) {
  std::vector<Regex::Span> matches;
  pattern.find_all(text, matches);
  std::string out;
  size_t pos = 0;
  for (const auto& [begin, end] : matches) {
    out.append(text, pos, begin - pos);
    out += content;
    pos = end;
  }
  out.append(text, pos);
  return out;
}

std::string replace_all(std::string_view text, std::string_view literal, std::string_view content) {
  if (literal.empty()) return std::string(text);
  std::string out;
  size_t pos = 0;
  for (size_t hit; (hit = text.find(literal, pos)) != std::string_view::npos;) {
    out.append(text, pos, hit - pos);
    out += content;
    pos = hit + literal.size();
  }
  out.append(text, pos);
  return out;
}

}  // namespace ds::hf
