// ops::matmul's reduction order (kernels/ops.h Gemm and OpNumerics, docs/numerics.md "matmul")
// pinned on tiny inputs against values computed by hand. The inputs sit on fp32's / fp16's rounding
// edges (2^24 + 1 in fp32, 2048 + 1 in fp16, both ties that round to even), so each alternative
// order named in a comment gives a different result; a second CHECK recomputes that alternative
// with plain float arithmetic (and the conversions of common/float_formats.h) and shows it differs
// from the pinned value.
//
// w is all ones wherever the products are not the point, so x[k] * w[k] = x[k] exactly and the
// reduction alone decides the result.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <vector>

#include "common/float_formats.h"
#include "kernels/ops.h"

namespace {

using ds::Storage;
using ds::ops::OpNumerics;

// ops::matmul on the call description built from its parts.
template <typename T>
void matmul(T* y, const T* x, int ldx, const T* w, int ldw, const T* b, int M, int N, int K,
            OpNumerics num) {
  ds::ops::matmul<T>(ds::ops::Gemm<T*, const T*>{y, x, w, b, M, N, K, ldx, ldw, 0, num});
}

constexpr float kTwo24 = 16777216.0f;  // 2^24: from here on fp32 steps by 2, so 2^24 + 1 is a tie

// y = sum_k x[k] * w[k] (+ b) for one row and one column.
float dot1(const std::vector<float>& x, const std::vector<float>& w, OpNumerics g,
           const float* bias = nullptr) {
  REQUIRE(x.size() == w.size());
  float y = std::numeric_limits<float>::quiet_NaN();
  const int K = static_cast<int>(x.size());
  matmul<float>(&y, x.data(), K, w.data(), K, bias, 1, 1, K, g);
  return y;
}

std::vector<float> ones(size_t n) {
  return std::vector<float>(n, 1.0f);
}

OpNumerics split(int s, bool accum_f16 = false, Storage out = Storage::native) {
  OpNumerics g;
  g.split = s;
  g.accum_f16 = accum_f16;
  g.out = out;
  return g;
}

}  // namespace

TEST_CASE("matmul: each chunk is summed from its first k upward", "[kernels][matmul]") {
  // x = [1, 1, 2^24], split_k = 1.
  //   upward:   (0 + 1) + 1 = 2; 2 + 2^24 = 2^24 + 2 (exact)             -> 16777218
  //   downward: 2^24 + 1 = tie -> 2^24 (even); 2^24 + 1 -> 2^24         -> 16777216
  const std::vector<float> x{1.0f, 1.0f, kTwo24};
  CHECK(dot1(x, ones(3), split(1)) == 16777218.0f);
  const float downward = (kTwo24 + 1.0f) + 1.0f;
  CHECK(downward == 16777216.0f);
}

TEST_CASE("matmul: split-K chunks are contiguous, larger first (K = 5 split 2: k 0..2 then 3..4)",
          "[kernels][matmul]") {
  // x = [2^24, 1, 1, 1, 1].
  //   split 2, chunks [0,3) and [3,5):  c0 = (2^24 + 1) + 1 -> 2^24 (each +1 a tie to even)
  //                                     c1 = 1 + 1 = 2;  c0 + c1 = 2^24 + 2 (exact) -> 16777218
  //   smaller first, [0,2) and [2,5):   c0 = 2^24, c1 = 3; 2^24 + 3 is a tie between 2^24 + 2
  //                                     (odd mantissa) and 2^24 + 4 (even)          -> 16777220
  //   no split (split 1): 2^24 + 1 + 1 + 1 + 1, every +1 lost                       -> 16777216
  const std::vector<float> x{kTwo24, 1.0f, 1.0f, 1.0f, 1.0f};
  CHECK(dot1(x, ones(5), split(2)) == 16777218.0f);
  CHECK(dot1(x, ones(5), split(1)) == 16777216.0f);
  const float smaller_first = kTwo24 + ((1.0f + 1.0f) + 1.0f);
  CHECK(smaller_first == 16777220.0f);
}

TEST_CASE("matmul: split-K chunks larger first (K = 5 split 3: k 0..1 then 2..3 then 4)",
          "[kernels][matmul]") {
  // x = [2^24, 1, 1, 1, 0].
  //   sizes 2, 2, 1: c0 = 2^24 + 1 -> 2^24, c1 = 2, c2 = 0; (2^24 + 2) + 0             -> 16777218
  //   sizes 1, 2, 2: c0 = 2^24, c1 = 2, c2 = 1; (2^24 + 2) + 1 = tie -> 2^24 + 4       -> 16777220
  const std::vector<float> x{kTwo24, 1.0f, 1.0f, 1.0f, 0.0f};
  CHECK(dot1(x, ones(5), split(3)) == 16777218.0f);
  const float smaller_first = (kTwo24 + (1.0f + 1.0f)) + (1.0f + 0.0f);
  CHECK(smaller_first == 16777220.0f);
}

TEST_CASE("matmul: split-K chunk sums are added in chunk order", "[kernels][matmul]") {
  // K = 3, split 3: one product per chunk, c = [2^24, 1, 1].
  //   chunk order (c0 + c1) + c2:  2^24 + 1 -> 2^24; 2^24 + 1 -> 2^24                 -> 16777216
  //   c0 + (c1 + c2):              2^24 + 2                                            -> 16777218
  //   reverse (c2 + c1) + c0:      2 + 2^24                                            -> 16777218
  const std::vector<float> x{kTwo24, 1.0f, 1.0f};
  CHECK(dot1(x, ones(3), split(3)) == 16777216.0f);
  CHECK(kTwo24 + (1.0f + 1.0f) == 16777218.0f);
}

TEST_CASE("matmul: the bias is added after the chunk sums, and only the result is rounded to out",
          "[kernels][matmul]") {
  SECTION("bias last, in fp32") {
    // x = [1, 1], split 2 (c0 = 1, c1 = 1), b = 2^24.
    //   documented: (1 + 1) + 2^24 = 2^24 + 2                                           -> 16777218
    //   bias first: (2^24 + 1) + 1, each +1 a tie to even                            -> 16777216
    const float b = kTwo24;
    CHECK(dot1({1.0f, 1.0f}, ones(2), split(2), &b) == 16777218.0f);
    CHECK((kTwo24 + 1.0f) + 1.0f == 16777216.0f);
  }
  SECTION("one rounding to bf16, after the bias") {
    // x = [256, 1], b = 1, out = bf16 (8 significant bits: steps of 2 in [256, 512)).
    //   documented: 256 + 1 = 257 (fp32, exact); 257 + 1 = 258; bf16(258) = 258          -> 258
    //   rounded before the bias: bf16(257) = 256 (tie to even); 256 + 1 = 257 -> bf16 256
    const float b = 1.0f;
    CHECK(dot1({256.0f, 1.0f}, ones(2), split(1, false, Storage::bf16), &b) == 258.0f);
    CHECK(ds::round_to_bf16(ds::round_to_bf16(257.0f) + 1.0f) == 256.0f);
  }
}

TEST_CASE("matmul: fp16 accumulation rounds every partial sum to fp16", "[kernels][matmul]") {
  // fp16 has 11 significant bits: in [2048, 4096) it steps by 2, so 2048 + 1 is a tie -> 2048.
  const std::vector<float> x{2048.0f, 1.0f, 1.0f, 1.0f, 1.0f};
  SECTION("one chunk") {
    //   fp16: 2048; 2049 -> 2048; 2049 -> 2048; ... -> 2048.   In fp32 it would be 2052.
    CHECK(dot1(x, ones(5), split(1, true)) == 2048.0f);
    CHECK(dot1(x, ones(5), split(1, false)) == 2052.0f);
  }
  SECTION("chunks [0,3) + [3,5), each summed in fp16, chunk sums added in fp16") {
    //   c0: 2048, 2049 -> 2048, 2049 -> 2048;  c1: 1, 1 + 1 = 2;  2048 + 2 = 2050 (an fp16 value)
    CHECK(dot1(x, ones(5), split(2, true)) == 2050.0f);
  }
  SECTION("the chunk sums are added in fp16 too") {
    // K = 3, split 3: chunk sums 2048, 1, 1.
    //   fp16: 2048 + 1 -> 2048; 2048 + 1 -> 2048                                          -> 2048
    //   chunk sums added in fp32 instead: 2048 + 1 + 1                                    -> 2050
    CHECK(dot1({2048.0f, 1.0f, 1.0f}, ones(3), split(3, true)) == 2048.0f);
    CHECK(dot1({2048.0f, 1.0f, 1.0f}, ones(3), split(3, false)) == 2050.0f);
  }
}

TEST_CASE("matmul: fp16 accumulation adds each unrounded fp32 product, then rounds the sum",
          "[kernels][matmul]") {
  // x = [2, 1 + 2^-11], w = [1, 2^-10]: products 2 and 2^-10 + 2^-21 (both exact in fp32).
  //   documented: acc = f16(0 + 2) = 2; 2 + 2^-10 + 2^-21 is exact in fp32 (ulp 2^-22 at 2);
  //     fp16 steps by 2^-9 in [2, 4) and the value lies above the midpoint 2 + 2^-10
  //     -> 2 + 2^-9 = 2.001953125
  //   product rounded to fp16 first: f16(2^-10 + 2^-21) = 2^-10 (2^-21 is half a step of 2^-20:
  //     tie to even); 2 + 2^-10 is then a tie -> 2
  const std::vector<float> x{2.0f, 1.0f + 0x1p-11f};
  const std::vector<float> w{1.0f, 0x1p-10f};
  CHECK(dot1(x, w, split(1, true)) == 2.001953125f);
  CHECK(ds::round_to_f16(2.0f + ds::round_to_f16(0x1p-10f + 0x1p-21f)) == 2.0f);
}

TEST_CASE("matmul: with fp16 accumulation the bias is added in fp32 after the fp16 sum",
          "[kernels][matmul]") {
  // x = [2048, 0], b = 1, out native.
  //   fp16 sum: 2048; + b in fp32 = 2049 (not an fp16 value)                             -> 2049
  //   bias added in the fp16 accumulator: 2049 -> 2048
  const float b = 1.0f;
  CHECK(dot1({2048.0f, 0.0f}, ones(2), split(1, true), &b) == 2049.0f);
  CHECK(ds::round_to_f16(2048.0f + 1.0f) == 2048.0f);
}

TEST_CASE("matmul: rows of x and w are ldx / ldw apart and every (m, n) has the same order",
          "[kernels][matmul]") {
  // M = 2, N = 2, K = 3 with ldx = ldw = 4; the padding column is NaN, so reading it shows.
  // Row m of x times row n of w, summed k = 0, 1, 2 in fp32:
  //   x0 = [2^24, 1, 1], x1 = [1, 1, 2^24];  w0 = [1, 1, 1], w1 = [1, 1, 0]
  //   y00 = (2^24 + 1) + 1 -> 2^24;  y01 = 2^24 + 1 + 0 -> 2^24
  //   y10 = (1 + 1) + 2^24 = 2^24 + 2;  y11 = 2 + 0 = 2
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> x{kTwo24, 1.0f, 1.0f, nan, 1.0f, 1.0f, kTwo24, nan};
  const std::vector<float> w{1.0f, 1.0f, 1.0f, nan, 1.0f, 1.0f, 0.0f, nan};
  std::vector<float> y(4, nan);
  matmul<float>(y.data(), x.data(), 4, w.data(), 4, nullptr, 2, 2, 3, split(1));
  CHECK(y[0] == 16777216.0f);
  CHECK(y[1] == 16777216.0f);
  CHECK(y[2] == 16777218.0f);
  CHECK(y[3] == 2.0f);
}

TEST_CASE("matmul: double runs the same order (split-K boundaries at 2^53)", "[kernels][matmul]") {
  // The fp64 oracle shares the loops: with 2^53 (where doubles step by 2) the K = 5, split 2
  // example gives c0 = (2^53 + 1) + 1 -> 2^53, c1 = 2, 2^53 + 2; no split gives 2^53.
  const double two53 = 9007199254740992.0;
  const std::vector<double> x{two53, 1.0, 1.0, 1.0, 1.0};
  const std::vector<double> w(5, 1.0);
  double y = 0;
  matmul<double>(&y, x.data(), 5, w.data(), 5, nullptr, 1, 1, 5, split(2));
  CHECK(y == two53 + 2.0);
  matmul<double>(&y, x.data(), 5, w.data(), 5, nullptr, 1, 1, 5, split(1));
  CHECK(y == two53);
}
