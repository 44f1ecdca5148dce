// Storage formats of the runtime's tensors and bit-exact conversions between float32 and the
// 16-bit formats bf16 and fp16.
// Rounding is to nearest, ties to even; NaN stays NaN (quiet), overflow becomes Inf,
// fp16 subnormals are produced and read exactly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace ds {

namespace detail {
// std::bit_cast for 4-byte values, in C++17 too (nvcc compiles kernels/cuda as C++17).
template <typename To, typename From>
inline To bit_cast(From v) {
  static_assert(sizeof(To) == sizeof(From));
  To out;
  std::memcpy(&out, &v, sizeof out);
  return out;
}
}  // namespace detail

inline float bf16_bits_to_f32(uint16_t b) {
  return detail::bit_cast<float>(uint32_t{b} << 16);
}

inline uint16_t f32_to_bf16_bits(float f) {
  uint32_t x = detail::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x0040u);  // NaN
  uint32_t lsb = (x >> 16) & 1u;
  return static_cast<uint16_t>((x + 0x7fffu + lsb) >> 16);  // carries into Inf on overflow
}

inline float f16_bits_to_f32(uint16_t h) {
  uint32_t sign = uint32_t{h & 0x8000u} << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0) {  // zero or subnormal: mant * 2^-24, exact in float32
    float v = static_cast<float>(mant) * 0x1p-24f;
    return detail::bit_cast<float>(detail::bit_cast<uint32_t>(v) | sign);
  }
  if (exp == 31) return detail::bit_cast<float>(sign | 0x7f800000u | (mant << 13));  // Inf / NaN
  return detail::bit_cast<float>(sign | ((exp + 112u) << 23) | (mant << 13));
}

inline uint16_t f32_to_f16_bits(float f) {
  uint32_t x = detail::bit_cast<uint32_t>(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t a = x & 0x7fffffffu;
  if (a > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x3ffu));  // NaN
  if (a >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520 rounds to Inf
  if (a >= 0x38800000u) {                                              // normal fp16 (>= 2^-14)
    a += 0xfffu + ((a >> 13) & 1u);                                    // round to nearest even
    return static_cast<uint16_t>(sign | ((a - 0x38000000u) >> 13));    // rebias 127 -> 15
  }
  // Subnormal or zero: adding 0.5 (whose ulp is 2^-24, the fp16 subnormal step) lets the FPU
  // round |f| to a multiple of 2^-24 with ties to even; the low bits then count those steps.
  float r = detail::bit_cast<float>(a) + 0.5f;
  return static_cast<uint16_t>(sign | (detail::bit_cast<uint32_t>(r) - 0x3f000000u));
}

inline float round_to_bf16(float f) {
  return bf16_bits_to_f32(f32_to_bf16_bits(f));
}
inline float round_to_f16(float f) {
  return f16_bits_to_f32(f32_to_f16_bits(f));
}

// f rounded to bf16, then moved one bf16 step up (dir > 0, towards +Inf) or down (dir < 0):
// a neighbour of the rounded value, one bf16 ulp from it (past the largest finite value: Inf).
// NaN and Inf stay as they are. The test perturbation's nudge (numerics_plan.h Nudge).
inline float bf16_step(float f, int dir) {
  uint16_t b = f32_to_bf16_bits(f);
  if ((b & 0x7f80u) == 0x7f80u) return bf16_bits_to_f32(b);  // Inf or NaN
  const bool negative = (b & 0x8000u) != 0;
  if ((b & 0x7fffu) == 0) {
    b = dir > 0 ? 0x0001u : 0x8001u;  // from ±0: the smallest subnormal of that sign
  } else if ((dir > 0) != negative) {
    b = static_cast<uint16_t>(b + 1);  // larger magnitude
  } else {
    b = static_cast<uint16_t>(b - 1);  // smaller magnitude
  }
  return bf16_bits_to_f32(b);
}

// Where a weight, an activation, an op's output or the KV cache is stored: native = the compute
// type itself (float; double in the CPU's fp64 oracle), f16 / bf16 = rounded to nearest even into
// that 16-bit format. The one storage enum of kernels/ and the runtimes.
enum class Storage { native, f16, bf16 };

// v rounded to storage s (identity for native).
inline float round_to(float v, Storage s) {
  switch (s) {
    case Storage::f16:
      return round_to_f16(v);
    case Storage::bf16:
      return round_to_bf16(v);
    default:
      return v;
  }
}

// n floats to the bit patterns of a 16-bit format (half: f16 or bf16), and back. The one
// narrow / widen routine of the project (writer, reader, loaders, synth, CUDA uploads).
inline void narrow(const float* in, uint16_t* out, size_t n, Storage half) {
  if (half == Storage::f16) {
    for (size_t i = 0; i < n; ++i) out[i] = f32_to_f16_bits(in[i]);
  } else {
    for (size_t i = 0; i < n; ++i) out[i] = f32_to_bf16_bits(in[i]);
  }
}
inline void widen(const uint16_t* in, float* out, size_t n, Storage half) {
  if (half == Storage::f16) {
    for (size_t i = 0; i < n; ++i) out[i] = f16_bits_to_f32(in[i]);
  } else {
    for (size_t i = 0; i < n; ++i) out[i] = bf16_bits_to_f32(in[i]);
  }
}

}  // namespace ds
