// A JSON file that cannot be read, said as the file, the line and the cause (header-only; for code
// that links nlohmann_json): "sw/sweep.json: not valid JSON at line 3, column 1: unexpected end
// of input", without nlohmann's "[json.exception.parse_error.101] parse error at" wrapper, which
// reads like an internal error.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace ds {

// nlohmann's message less its "[json.exception.<kind>.<id>] " prefix.
inline std::string json_error_cause(const nlohmann::json::exception& e) {
  std::string what = e.what();
  if (what.starts_with("[json.exception.")) {
    const size_t close = what.find("] ");
    if (close != std::string::npos) what.erase(0, close + 2);
  }
  return what;
}

// Where and why nlohmann could not parse `text`: the line and column of the byte where it stopped
// (counted from 1) and the cause without nlohmann's wrappers ("unexpected end of input; expected
// '[', '{', or a literal"). For an error that is not a parse error, line 0 and its message.
struct JsonFailure {
  size_t line = 0, column = 0;
  std::string cause;
};

inline JsonFailure json_failure(std::string_view text, const nlohmann::json::exception& e) {
  JsonFailure f{0, 0, json_error_cause(e)};
  const auto* parse = dynamic_cast<const nlohmann::json::parse_error*>(&e);
  if (parse == nullptr) return f;
  std::string& cause = f.cause;
  // "parse error at line 3, column 1: syntax error while parsing value - unexpected end of input"
  for (const char* prefix : {"parse error at ", "parse error: "}) {
    if (cause.starts_with(prefix)) {
      cause.erase(0, std::string_view(prefix).size());
      break;
    }
  }
  if (cause.starts_with("line ")) cause.erase(0, cause.find(": ") + 2);
  if (cause.starts_with("syntax error while parsing ")) {
    const size_t dash = cause.find(" - ");
    if (dash != std::string::npos) cause.erase(0, dash + 3);
  }
  const size_t at = std::min<size_t>(parse->byte == 0 ? 0 : parse->byte - 1, text.size());
  f.line = 1;
  f.column = 1;
  for (size_t i = 0; i < at; ++i) {
    if (text[i] == '\n') {
      ++f.line;
      f.column = 1;
    } else {
      ++f.column;
    }
  }
  return f;
}

// "<name>: not valid JSON at line L, column C: <cause>" for a parse error of `text` (the file's
// contents); for any other JSON error (a wrong type, a missing key) "<name>: <cause>".
inline std::string json_parse_failure(const std::string& name, std::string_view text,
                                      const nlohmann::json::exception& e) {
  const JsonFailure f = json_failure(text, e);
  if (f.line == 0) return name + ": " + f.cause;
  return name + ": not valid JSON at line " + std::to_string(f.line) + ", column " +
         std::to_string(f.column) + ": " + f.cause;
}

}  // namespace ds
