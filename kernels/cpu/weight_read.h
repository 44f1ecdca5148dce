// Reading weights as a checkpoint stores them (ops::StoredWeights): a float32 pointer, or a
// pointer to bf16 / fp16 bit patterns that widens each value it reads to float, which is exact.
// Generic loops write `w + offset` and `w[k]` for all three, so a 16-bit weight gives the same
// bits as its float32 copy would, with no copy made.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "common/float_formats.h"
#include "kernels/ops.h"

namespace ds::ops {

template <Storage F>
struct Halves {
  const uint16_t* p = nullptr;
  float operator[](size_t i) const {
    return F == Storage::bf16 ? bf16_bits_to_f32(p[i]) : f16_bits_to_f32(p[i]);
  }
  Halves operator+(size_t offset) const { return {p + offset}; }
};
using Bf16Ptr = Halves<Storage::bf16>;
using F16Ptr = Halves<Storage::f16>;

// A packed matrix (ops.h: blocks of 8 rows, the 8 rows' values at each k side by side) read
// through W; its rows are ldw values long.
template <typename W>
struct Packed {
  W base;
};
template <typename W>
struct IsPacked : std::false_type {};
template <typename W>
struct IsPacked<Packed<W>> : std::true_type {};

// One row of a packed matrix: its values 8 apart.
template <typename W>
struct Strided {
  W p;
  float operator[](size_t k) const { return p[8 * k]; }
};

// Row n of a matrix whose rows are ldw long: generic loops read row(w, n, ldw)[k] for row-major
// pointers and readers and for packed matrices alike.
template <typename W>
W row(W w, size_t n, size_t ldw) {
  return w + n * ldw;
}
template <typename W>
Strided<W> row(Packed<W> w, size_t n, size_t ldw) {
  return {w.base + ((n / 8) * ldw * 8 + n % 8)};
}

// f(reader) with the reader of w's format and layout: const float*, Bf16Ptr or F16Ptr, row-major
// or wrapped in Packed.
template <typename F>
decltype(auto) with_weights(StoredWeights w, F&& f) {
  const auto* h = static_cast<const uint16_t*>(w.data);
  const auto* p = static_cast<const float*>(w.data);
  switch (w.format) {
    case Storage::bf16:
      return w.packed ? f(Packed<Bf16Ptr>{Bf16Ptr{h}}) : f(Bf16Ptr{h});
    case Storage::f16:
      return w.packed ? f(Packed<F16Ptr>{F16Ptr{h}}) : f(F16Ptr{h});
    default:
      return w.packed ? f(Packed<const float*>{p}) : f(p);
  }
}

}  // namespace ds::ops
