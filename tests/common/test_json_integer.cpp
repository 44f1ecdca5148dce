// json_integer: whole numbers from JSON files, refused (not cast) when they are floats, strings
// or out of the requested range. Expected values are written by hand.
#include <catch2/catch.hpp>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "common/json_integer.h"

using ds::json_integer;
using nlohmann::json;

TEST_CASE("json_integer reads whole numbers within the range", "[common][json]") {
  CHECK(json_integer<int32_t>(json::parse("7")) == 7);
  CHECK(json_integer<int32_t>(json::parse("-7")) == -7);
  CHECK(json_integer<int32_t>(json(7)) == 7);  // built from an int: stored as signed
  CHECK(json_integer<int32_t>(json::parse("2147483647")) == INT32_MAX);
  CHECK(json_integer<int64_t>(json::parse("-9223372036854775808")) == INT64_MIN);
  CHECK(json_integer<uint64_t>(json::parse("18446744073709551615")) == UINT64_MAX);
  CHECK(json_integer<size_t>(json::parse("0")) == 0u);
  CHECK(json_integer<int32_t>(json::parse("5"), 5, 5) == 5);
}

TEST_CASE("json_integer refuses floats, other types and values outside the range",
          "[common][json]") {
  for (const char* text : {"1.0", "2.5", "1.98e70", "-1e300", "\"3\"", "null", "true", "[1]"}) {
    INFO(text);
    CHECK_FALSE(json_integer<int32_t>(json::parse(text)).has_value());
    CHECK_FALSE(json_integer<uint64_t>(json::parse(text)).has_value());
  }
  CHECK_FALSE(json_integer<int32_t>(json::parse("2147483648")).has_value());
  CHECK_FALSE(json_integer<int32_t>(json::parse("4294967297")).has_value());  // not 1
  CHECK_FALSE(json_integer<int32_t>(json::parse("-2147483649")).has_value());
  CHECK_FALSE(json_integer<int64_t>(json::parse("9223372036854775808")).has_value());
  CHECK_FALSE(json_integer<size_t>(json::parse("-1")).has_value());
  CHECK_FALSE(json_integer<size_t>(json(-1)).has_value());
  CHECK_FALSE(json_integer<int32_t>(json::parse("-1"), 0, INT32_MAX).has_value());
  CHECK_FALSE(json_integer<int32_t>(json::parse("4"), 5, 9).has_value());
  CHECK_FALSE(json_integer<int32_t>(json::parse("10"), 5, 9).has_value());
  CHECK_FALSE(json_integer<int32_t>(json::parse("3"), -9, -5).has_value());
  CHECK_FALSE(json_integer<int32_t>(json::parse("-3"), -9, -5).has_value());
  CHECK(json_integer<int32_t>(json::parse("-6"), -9, -5) == -6);
}
