// Reading weights as a checkpoint stores them (ops::StoredWeights): a float32 pointer, or a
// pointer to bf16 / fp16 bit patterns that widens each value it reads to float, which is exact.
// Generic loops write `w + offset` and `w[k]` for all three, so a 16-bit weight gives the same
// bits as its float32 copy would, with no copy made.
#pragma once

#include <cstddef>
#include <cstdint>

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

// f(reader) with the reader of w's format: const float*, Bf16Ptr or F16Ptr.
template <typename F>
decltype(auto) with_weights(StoredWeights w, F&& f) {
  switch (w.format) {
    case Storage::bf16:
      return f(Bf16Ptr{static_cast<const uint16_t*>(w.data)});
    case Storage::f16:
      return f(F16Ptr{static_cast<const uint16_t*>(w.data)});
    default:
      return f(static_cast<const float*>(w.data));
  }
}

}  // namespace ds::ops
