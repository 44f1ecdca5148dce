// The number-format table: its traits agree with the conversions and types they describe, each
// vocabulary names every format once, and Storage's traits come from it.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <string>

#include "common/number_format.h"

using ds::NumberFormat;
using ds::traits;

TEST_CASE("the number-format table's sizes and significands are those of the types",
          "[number-format]") {
  CHECK(traits(NumberFormat::f64).bytes == sizeof(double));
  CHECK(traits(NumberFormat::f64).significand_bits == std::numeric_limits<double>::digits);
  CHECK(traits(NumberFormat::f32).bytes == sizeof(float));
  CHECK(traits(NumberFormat::f32).significand_bits == std::numeric_limits<float>::digits);
  CHECK(traits(NumberFormat::i32).bytes == sizeof(int32_t));
  CHECK(traits(NumberFormat::i64).bytes == sizeof(int64_t));
  // The 16-bit formats: 1 + p bits of significand are exact, the next bit rounds to even.
  for (NumberFormat f : {NumberFormat::f16, NumberFormat::bf16}) {
    INFO(traits(f).name);
    CHECK(traits(f).bytes == 2);
    const int p = traits(f).significand_bits;
    const ds::Storage s = *ds::storage_of(f);
    const float exact = 1.0f + std::ldexp(1.0f, 1 - p);  // the last significand bit set
    CHECK(ds::round_to(exact, s) == exact);
    CHECK(ds::round_to(1.0f + std::ldexp(1.0f, -p), s) == 1.0f);  // a tie: to even
  }
  CHECK_FALSE(ds::is_float(NumberFormat::i32));
  CHECK(ds::is_float(NumberFormat::bf16));
}

TEST_CASE("each vocabulary of the table names every format once and reads back",
          "[number-format]") {
  for (const auto column : {&ds::NumberFormatTraits::name, &ds::NumberFormatTraits::trace_name,
                            &ds::NumberFormatTraits::safetensors}) {
    std::set<std::string> names;
    for (const auto& t : ds::kNumberFormats) {
      CHECK(names.insert(t.*column).second);
      CHECK(ds::find_number_format(t.*column, column) == t.format);
    }
    CHECK_FALSE(ds::find_number_format("float8", column).has_value());
  }
  // The spellings files and flags already use.
  CHECK(std::string(traits(NumberFormat::f16).trace_name) == "float16");
  CHECK(std::string(traits(NumberFormat::bf16).trace_name) == "bf16");
  CHECK(std::string(traits(NumberFormat::bf16).safetensors) == "BF16");
  CHECK(std::string(traits(NumberFormat::f32).name) == "f32");
}

TEST_CASE("Storage's traits come from the table", "[number-format]") {
  CHECK(ds::number_format(ds::Storage::native) == NumberFormat::f32);
  CHECK(ds::number_format(ds::Storage::f16) == NumberFormat::f16);
  CHECK(ds::number_format(ds::Storage::bf16) == NumberFormat::bf16);
  CHECK(std::string(ds::storage_name(ds::Storage::native)) == "f32");
  CHECK(std::string(ds::storage_name(ds::Storage::bf16)) == "bf16");
  CHECK(ds::storage_bytes(ds::Storage::f16) == 2);
  CHECK_FALSE(ds::storage_of(NumberFormat::f64).has_value());
  CHECK_FALSE(ds::storage_of(NumberFormat::i32).has_value());
}
