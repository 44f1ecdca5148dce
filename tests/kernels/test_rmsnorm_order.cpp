// ops::rmsnorm's order (kernels/ops.h, docs/numerics.md "rmsnorm") pinned against values computed
// by hand: the sum of squares over i = 0..dim-1 in order, inv = 1 / sqrt(ss / dim + eps), and
// y = round((x * inv) * w).
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <vector>

#include "common/float_formats.h"
#include "kernels/ops.h"

namespace {

std::vector<float> rmsnorm(const std::vector<float>& x, const std::vector<float>& w, int rows,
                           double eps, ds::Storage out = ds::Storage::native) {
  const int dim = static_cast<int>(w.size());
  REQUIRE(x.size() == w.size() * rows);
  std::vector<float> y(x.size(), std::numeric_limits<float>::quiet_NaN());
  ds::ops::OpNumerics num;
  num.out = out;
  ds::ops::rmsnorm<float>(
      ds::ops::Rmsnorm<float*, const float*>{y.data(), x.data(), w.data(), rows, dim, eps, num});
  return y;
}

}  // namespace

TEST_CASE("rmsnorm: the sum of squares runs over i = 0..dim-1 in order", "[kernels][rmsnorm]") {
  // Two rows with the same values in opposite orders, dim = 4, eps = 0, w = 1.
  //   row 0, x = [4096, 1, 1, 1]: squares 2^24, 1, 1, 1; 2^24 + 1 is a tie in fp32 -> 2^24,
  //     three times: ss = 2^24; ss / 4 = 2^22; sqrt = 2048; inv = 2^-11 (all exact)
  //     y = [4096 * 2^-11, 2^-11, 2^-11, 2^-11] = [2, 2^-11, 2^-11, 2^-11]
  //   row 1, x = [1, 1, 1, 4096]: 1 + 1 + 1 = 3; 3 + 2^24 is a tie -> 2^24 + 4 (even);
  //     ss / 4 = 2^22 + 1 (exact); sqrt(2^22 + 1) = 2048 (1 + 2^-23 - 2^-47 ...) = 2048 + 2^-12
  //     less a hair, and fp32 steps by 2^-12 there -> 2048 + 2^-12;
  //     inv = 1 / (2048 (1 + 2^-23)) = 2^-11 (1 - 2^-23 + 2^-46 ...); below 2^-11 fp32 steps by
  //     2^-35, so this is 2^-11 - 2^-34 plus a hair -> 2^-11 - 2^-34
  //     y = [2^-11 - 2^-34 (three times), 4096 (2^-11 - 2^-34) = 2 - 2^-22]
  const std::vector<float> x{4096.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 4096.0f};
  const auto y = rmsnorm(x, {1.0f, 1.0f, 1.0f, 1.0f}, 2, 0.0);
  CHECK(y[0] == 2.0f);
  CHECK(y[1] == 0x1p-11f);
  CHECK(y[2] == 0x1p-11f);
  CHECK(y[3] == 0x1p-11f);
  const float inv1 = 0x1p-11f - 0x1p-34f;
  CHECK(y[4] == inv1);
  CHECK(y[5] == inv1);
  CHECK(y[6] == inv1);
  CHECK(y[7] == 2.0f - 0x1p-22f);
  // The intermediate steps of row 1, written out:
  CHECK(((1.0f + 1.0f) + 1.0f) + 16777216.0f == 16777220.0f);
  CHECK(std::sqrt(4194305.0f) == 2048.0f + 0x1p-12f);
  CHECK(1.0f / (2048.0f + 0x1p-12f) == inv1);
}

TEST_CASE("rmsnorm: y = (x * inv) * w, not x * (inv * w), (x * w) * inv or x / rms * w",
          "[kernels][rmsnorm]") {
  // x = [1, 1, 3, 5], eps = 0: ss = 1 + 1 + 9 + 25 = 36; ss / 4 = 9; sqrt = 3;
  // inv = fp32(1/3) = 11184811 * 2^-25 = (1/3)(1 + 2^-25).
  // w = [1, 1, 1, 1 + 2^-23]. Element 3 (units of 2^-23 in [1, 2)):
  //   pinned: 5 * inv = 55924055 * 2^-25 = 13981013.75 units -> 13981014;
  //           * (1 + 2^-23) = 13981014 + 1.67 units -> 13981016 * 2^-23
  //   x * (inv * w): inv * w = 11184811 + 1.33 (units of 2^-25) -> 11184812;
  //           * 5 = 55924060 * 2^-25 = 13981015 * 2^-23 exactly
  //   x / rms * w: 5 / 3 = 13981013.33 units -> 13981013; * w = 13981014.67 -> 13981015
  //   (x * w) * inv: 5 (1 + 2^-23) -> 5 + 2^-21 (fp32 steps by 2^-21 in [4, 8));
  //           * inv = (5/3 + 2^-21/3)(1 + 2^-25) = 13981014.67 + 0.42 units -> 13981015
  // Elements 0..2 are x * inv: inv, inv, 3 * inv = 1 + 2^-25 -> 1.
  const auto y = rmsnorm({1.0f, 1.0f, 3.0f, 5.0f}, {1.0f, 1.0f, 1.0f, 1.0f + 0x1p-23f}, 1, 0.0);
  const float inv = 11184811.0f * 0x1p-25f;
  CHECK(inv == 1.0f / 3.0f);
  CHECK(y[0] == inv);
  CHECK(y[1] == inv);
  CHECK(y[2] == 1.0f);
  CHECK(y[3] == 13981016.0f * 0x1p-23f);
  const float w3 = 1.0f + 0x1p-23f;
  CHECK(5.0f * (inv * w3) == 13981015.0f * 0x1p-23f);
  CHECK((5.0f / 3.0f) * w3 == 13981015.0f * 0x1p-23f);
  CHECK((5.0f * w3) * inv == 13981015.0f * 0x1p-23f);
}

TEST_CASE("rmsnorm: eps is added to ss / dim before the square root, then y is rounded to out",
          "[kernels][rmsnorm]") {
  // x = [3, 3], eps = 7: ss = 18; ss / 2 + 7 = 16; sqrt = 4; inv = 0.25; x * inv = 0.75.
  //   (eps added before dividing would give (18 + 7) / 2 = 12.5, sqrt 3.5355..., not 4)
  // w = [1, 1 + 2^-9]: 0.75 * (1 + 2^-9) = 0.75 + 0.75 * 2^-9 = 0.7514648...
  //   native keeps it; bf16 steps by 2^-8 in [0.5, 1) and 0.75 * 2^-9 is below half a step
  //   -> 0.75
  const std::vector<float> x{3.0f, 3.0f}, w{1.0f, 1.0f + 0x1p-9f};
  const auto native = rmsnorm(x, w, 1, 7.0);
  CHECK(native[0] == 0.75f);
  CHECK(native[1] == 0.75f + 0.75f * 0x1p-9f);
  const auto bf = rmsnorm(x, w, 1, 7.0, ds::Storage::bf16);
  CHECK(bf[0] == 0.75f);
  CHECK(bf[1] == 0.75f);
  CHECK(std::sqrt((18.0f + 7.0f) / 2.0f) != 4.0f);
}
