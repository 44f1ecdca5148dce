// A JSON file's failure as the file, the line and the cause (common/json_error.h), without
// nlohmann's "[json.exception.parse_error.101] parse error at" wrapper.
#include <catch2/catch.hpp>
#include <string>

#include "common/json_error.h"

namespace {

std::string failure(const std::string& text) {
  try {
    const auto parsed = nlohmann::json::parse(text);
    return parsed.dump();
  } catch (const nlohmann::json::exception& e) {
    return ds::json_parse_failure("f.json", text, e);
  }
  return "";
}

}  // namespace

TEST_CASE("json_parse_failure names the file, the line and the cause", "[common]") {
  CHECK(failure("{\n") ==
        "f.json: not valid JSON at line 2, column 1: unexpected end of input; expected string "
        "literal");
  CHECK(failure("{\"a\": 1,\n \"b\": x}") ==
        "f.json: not valid JSON at line 2, column 7: invalid literal; last read: '\"b\": x'");
  const std::string other = [] {
    try {
      return nlohmann::json::parse("{}").at("k").dump();
    } catch (const nlohmann::json::exception& e) {
      return ds::json_parse_failure("f.json", "{}", e);
    }
    return std::string();
  }();
  CHECK(other == "f.json: key 'k' not found");
  CHECK(failure("{\n").find("json.exception") == std::string::npos);
}
