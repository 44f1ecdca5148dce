// Whole numbers read from JSON files (header-only; for code that links nlohmann_json).
//
// nlohmann's get<int>() on a value stored as a double converts with a plain cast, which is
// undefined behaviour when the double is out of the target's range (1e70 as an int; found by
// fuzzing tokenizer.json). Every integer a file supplies is read through json_integer instead.
#pragma once

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <type_traits>

namespace ds {

// The value as a T when it is a JSON integer (not 1.0, not "1") within [lo, hi]; nothing
// otherwise. Compared in 64-bit arithmetic, so 2^32 + 1 is refused rather than wrapped to 1.
template <typename T = int64_t>
std::optional<T> json_integer(const nlohmann::json& v, T lo = std::numeric_limits<T>::min(),
                              T hi = std::numeric_limits<T>::max()) {
  static_assert(std::is_integral_v<T> && sizeof(T) <= 8);
  const auto from_unsigned = [&](uint64_t u) -> std::optional<T> {
    if constexpr (std::is_signed_v<T>) {
      if (hi < 0) return std::nullopt;
      if (lo > 0 && u < static_cast<uint64_t>(lo)) return std::nullopt;
    } else {
      if (u < lo) return std::nullopt;
    }
    if (u > static_cast<uint64_t>(hi)) return std::nullopt;
    return static_cast<T>(u);
  };
  if (v.is_number_unsigned()) return from_unsigned(v.get<uint64_t>());
  if (!v.is_number_integer()) return std::nullopt;  // a float such as 1e70, a string, ...
  const int64_t s = v.get<int64_t>();  // a signed integer: parsed "-5", or built from an int
  if (s >= 0) return from_unsigned(static_cast<uint64_t>(s));
  if constexpr (std::is_unsigned_v<T>) {
    return std::nullopt;
  } else {
    if (s < static_cast<int64_t>(lo) || s > static_cast<int64_t>(hi)) return std::nullopt;
    return static_cast<T>(s);
  }
}

}  // namespace ds
