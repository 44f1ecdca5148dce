// The number formats driftscope reads, computes in and writes, in one table of traits (as ggml's
// ggml_type and its type_traits): each format's size, its significand, and its name in every
// vocabulary that spells one (driftscope's flags, trace datasets, safetensors headers). The
// runtime's `Storage`, the trace's dataset types, the loaders' tensor types and the diff's noise
// floors are all read from here.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

#include "common/float_formats.h"

namespace ds {

// The formats, floating point then integer. Hidden states are f32, f16 or bf16; a checkpoint's
// tensors f64, f32, f16 or bf16; tokens and top-K ids i32; kernel durations i64.
enum class NumberFormat { f64, f32, f16, bf16, i32, i64 };

struct NumberFormatTraits {
  NumberFormat format;
  const char* name;         // "bf16": driftscope's own name (--hidden-dtype, synth --dtype)
  const char* trace_name;   // "float16": a trace dataset's type as numpy names it (bf16: "bf16")
  const char* safetensors;  // "BF16": a safetensors header's dtype
  size_t bytes;
  int significand_bits;  // p, the implicit bit included (unit roundoff 2^-p); 0 for integers
};

// In the order of the enum (checked below).
inline constexpr NumberFormatTraits kNumberFormats[] = {
    {NumberFormat::f64, "f64", "float64", "F64", 8, 53},
    {NumberFormat::f32, "f32", "float32", "F32", 4, 24},
    {NumberFormat::f16, "f16", "float16", "F16", 2, 11},
    {NumberFormat::bf16, "bf16", "bf16", "BF16", 2, 8},
    {NumberFormat::i32, "i32", "int32", "I32", 4, 0},
    {NumberFormat::i64, "i64", "int64", "I64", 8, 0},
};

constexpr const NumberFormatTraits& traits(NumberFormat f) {
  return kNumberFormats[static_cast<int>(f)];
}

constexpr bool table_in_enum_order() {
  int i = 0;
  for (const NumberFormatTraits& t : kNumberFormats) {
    if (static_cast<int>(t.format) != i++) return false;
  }
  return i == static_cast<int>(NumberFormat::i64) + 1;
}
static_assert(table_in_enum_order(), "one row per NumberFormat, in the enum's order");

constexpr bool is_float(NumberFormat f) {
  return traits(f).significand_bits > 0;
}

// The format named `name` in one of the table's vocabularies (`column`: &NumberFormatTraits::name,
// ::trace_name or ::safetensors), if any.
inline std::optional<NumberFormat> find_number_format(std::string_view name,
                                                      const char* NumberFormatTraits::*column) {
  for (const NumberFormatTraits& t : kNumberFormats) {
    if (name == t.*column) return t.format;
  }
  return std::nullopt;
}

// Storage's traits, from the table: the format a tensor stored as `s` holds (native is float,
// as the runtime's tensors, the trace's hidden states and the loaders' weights are; the CPU's
// fp64 oracle computes in double but stores what it taps as float), its name and its size.
constexpr NumberFormat number_format(Storage s) {
  return s == Storage::f16    ? NumberFormat::f16
         : s == Storage::bf16 ? NumberFormat::bf16
                              : NumberFormat::f32;
}
constexpr const char* storage_name(Storage s) {
  return traits(number_format(s)).name;  // "f32", "f16", "bf16"
}
constexpr size_t storage_bytes(Storage s) {
  return traits(number_format(s)).bytes;
}
// The Storage of format f: f32 is native, f16 and bf16 themselves; none for the others.
constexpr std::optional<Storage> storage_of(NumberFormat f) {
  switch (f) {
    case NumberFormat::f32:
      return Storage::native;
    case NumberFormat::f16:
      return Storage::f16;
    case NumberFormat::bf16:
      return Storage::bf16;
    default:
      return std::nullopt;
  }
}
static_assert(storage_of(number_format(Storage::native)) == Storage::native &&
                  storage_of(number_format(Storage::f16)) == Storage::f16 &&
                  storage_of(number_format(Storage::bf16)) == Storage::bf16,
              "number_format and storage_of are inverses");

}  // namespace ds
