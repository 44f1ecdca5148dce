// bf16 / fp16 conversions against independent references: the compiler's _Float16 conversions
// and a nearest-value search in double; every 16-bit pattern is round-tripped.
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <random>

#include "common/float_formats.h"

namespace {

// Reference bf16 rounding: pick the nearer of the two bf16 neighbours in double; ties to even.
uint16_t ref_bf16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t lo = static_cast<uint16_t>(x >> 16);
  if ((x & 0xffffu) == 0) return lo;
  const uint16_t hi = static_cast<uint16_t>(lo + 1);  // next pattern away from zero
  const double dlo = std::abs(double(f) - double(ds::bf16_bits_to_f32(lo)));
  // Rounding treats Inf as the next step past the largest finite value: 2^128.
  const double vhi = (hi & 0x7fffu) == 0x7f80u ? std::copysign(0x1p128, double(f))
                                               : double(ds::bf16_bits_to_f32(hi));
  const double dhi = std::abs(double(f) - vhi);
  if (dlo < dhi) return lo;
  if (dhi < dlo) return hi;
  return (lo & 1u) == 0 ? lo : hi;
}

bool same_or_both_nan(float a, float b) {
  return (std::isnan(a) && std::isnan(b)) ||
         std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b);
}

}  // namespace

TEST_CASE("every bf16 pattern round-trips through float32", "[kernels][formats]") {
  for (uint32_t b = 0; b <= 0xffffu; ++b) {
    const float f = ds::bf16_bits_to_f32(static_cast<uint16_t>(b));
    if (std::isnan(f)) {
      REQUIRE(std::isnan(ds::bf16_bits_to_f32(ds::f32_to_bf16_bits(f))));
    } else {
      REQUIRE(ds::f32_to_bf16_bits(f) == b);
    }
  }
}

// _Float16 is the independent reference here; clang before 15 has no _Float16 on x86 (the
// sanitizer build, scripts/ci_sanitize.sh), so these two cases run in the GCC build only.
#ifdef __FLT16_MAX__
TEST_CASE("every fp16 pattern converts like the compiler's _Float16 and round-trips",
          "[kernels][formats]") {
  for (uint32_t h = 0; h <= 0xffffu; ++h) {
    const _Float16 ref = std::bit_cast<_Float16>(static_cast<uint16_t>(h));
    const float f = ds::f16_bits_to_f32(static_cast<uint16_t>(h));
    REQUIRE(same_or_both_nan(f, static_cast<float>(ref)));
    if (!std::isnan(f)) REQUIRE(ds::f32_to_f16_bits(f) == h);
  }
}

TEST_CASE("float32 to fp16 rounds like the compiler (ties to even, overflow, subnormals)",
          "[kernels][formats]") {
  auto check = [](float f) {
    const uint16_t ref = std::bit_cast<uint16_t>(static_cast<_Float16>(f));
    const uint16_t got = ds::f32_to_f16_bits(f);
    if (std::isnan(f)) {
      REQUIRE((got & 0x7c00u) == 0x7c00u);
      REQUIRE((got & 0x03ffu) != 0);
    } else {
      INFO("f = " << f << " bits " << std::bit_cast<uint32_t>(f));
      REQUIRE(got == ref);
    }
  };
  // Halfway points between neighbouring fp16 values (ties) and their float neighbours.
  for (uint32_t h = 0; h < 0x7c00u; ++h) {
    const double a = ds::f16_bits_to_f32(static_cast<uint16_t>(h));
    const double b = h + 1 == 0x7c00u ? 65536.0 : double(ds::f16_bits_to_f32(uint16_t(h + 1)));
    const float mid = static_cast<float>((a + b) / 2);  // exact in float32
    for (float f : {mid, std::nextafter(mid, 0.f), std::nextafter(mid, INFINITY)}) {
      check(f);
      check(-f);
    }
  }
  for (float f : {65504.f, 65519.f, 65520.f, 1e6f, INFINITY, 0x1p-25f, 0x1p-26f, 0x1.8p-25f,
                  std::bit_cast<float>(0x7fc00001u), 0.f, -0.f}) {
    check(f);
  }
  std::mt19937 rng(12345);
  for (int i = 0; i < 2000000; ++i) check(std::bit_cast<float>(static_cast<uint32_t>(rng())));
}
#endif  // __FLT16_MAX__

TEST_CASE("float32 to bf16 rounds to nearest, ties to even", "[kernels][formats]") {
  auto check = [](float f) {
    const uint16_t got = ds::f32_to_bf16_bits(f);
    if (std::isnan(f)) {
      REQUIRE(std::isnan(ds::bf16_bits_to_f32(got)));
    } else {
      INFO("bits " << std::bit_cast<uint32_t>(f));
      REQUIRE(got == ref_bf16(f));
    }
  };
  // Exact ties: low 16 bits 0x8000, with an even and an odd kept mantissa.
  CHECK(ds::f32_to_bf16_bits(std::bit_cast<float>(0x3f808000u)) == 0x3f80);  // even: down
  CHECK(ds::f32_to_bf16_bits(std::bit_cast<float>(0x3f818000u)) == 0x3f82);  // odd: up
  CHECK(ds::f32_to_bf16_bits(std::bit_cast<float>(0x7f7fffffu)) == 0x7f80);  // overflow: Inf
  CHECK(ds::f32_to_bf16_bits(-INFINITY) == 0xff80);
  std::mt19937 rng(777);
  for (int i = 0; i < 2000000; ++i) check(std::bit_cast<float>(static_cast<uint32_t>(rng())));
  for (uint32_t hi = 0; hi < 0x10000u; hi += 7) {
    for (uint32_t lo : {0x7fffu, 0x8000u, 0x8001u}) check(std::bit_cast<float>((hi << 16) | lo));
  }
}

TEST_CASE("bf16_step: the rounded value's neighbour one bf16 ulp up or down",
          "[kernels][formats]") {
  CHECK(ds::bf16_step(1.0f, 1) == 1.0078125f);    // 1 + 2^-7
  CHECK(ds::bf16_step(1.0f, -1) == 0.99609375f);  // 1 - 2^-8 (the binade below is finer)
  CHECK(ds::bf16_step(-1.0f, 1) == -0.99609375f);
  CHECK(ds::bf16_step(-1.0f, -1) == -1.0078125f);
  CHECK(ds::bf16_step(1.00390625f, 1) == 1.0078125f);  // rounded first (a tie, to even: 1), then up
  CHECK(ds::bf16_step(0.0f, 1) == std::bit_cast<float>(0x00010000u));
  CHECK(ds::bf16_step(0.0f, -1) == std::bit_cast<float>(0x80010000u));
  CHECK(std::isinf(ds::bf16_step(std::bit_cast<float>(0x7f7f0000u), 1)));  // past the largest
  CHECK(std::isnan(ds::bf16_step(NAN, 1)));
  CHECK(ds::bf16_step(INFINITY, -1) == INFINITY);
  // every finite pattern moves by exactly one step of its bit pattern
  for (uint32_t b = 0; b < 0x7f80u; b += 13) {
    const float x = ds::bf16_bits_to_f32(static_cast<uint16_t>(b));
    CHECK(ds::f32_to_bf16_bits(ds::bf16_step(x, 1)) == b + 1);
    if (b > 0) CHECK(ds::f32_to_bf16_bits(ds::bf16_step(x, -1)) == b - 1);
  }
}
