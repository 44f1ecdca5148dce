// ops::rope (kernels/ops.h, docs/numerics.md "rope") pinned against values computed by hand: the
// half-split layout pairs x[i] with x[i + head_dim/2], both new values are computed from the old
// pair in T, the cos / sin row is the row's position, and each value is rounded once to out.
#include <catch2/catch.hpp>
#include <limits>
#include <vector>

#include "common/float_formats.h"
#include "kernels/ops.h"

namespace {

// ops::rope on the call description built from its parts.
void rope(float* x, int rows, int heads, int head_dim, const int* positions, const float* cos,
          const float* sin, ds::Storage out) {
  ds::ops::OpNumerics num;
  num.out = out;
  ds::ops::rope<float>(
      ds::ops::Rope<float*, const float*>{x, rows, heads, head_dim, positions, cos, sin, num});
}

}  // namespace

TEST_CASE("rope: half-split pairs (i, i + h) rotated from the old values at the row's position",
          "[kernels][rope]") {
  // head_dim 4 (h = 2), 2 heads, 2 rows at positions 1 and 0.
  // cos / sin tables (max_pos 2, h = 2): position 0: c = [1, 1], s = [0, 0] (identity);
  //                                      position 1: c = [0.5, 0.25], s = [0.75, -1].
  // Row 0 (position 1), head 0, x = [1, 2, 3, 4]:
  //   i = 0 pairs x0 = 1 with x2 = 3: x0 = 1 * 0.5 - 3 * 0.75 = -1.75
  //                                   x2 = 3 * 0.5 + 1 * 0.75 = 2.25
  //   i = 1 pairs x1 = 2 with x3 = 4: x1 = 2 * 0.25 - 4 * -1 = 4.5
  //                                   x3 = 4 * 0.25 + 2 * -1 = -1
  //   -> [-1.75, 4.5, 2.25, -1]
  //   (interleaved pairs (x0, x1), (x2, x3) would give x0 = 1 * 0.5 - 2 * 0.75 = -1;
  //    x2 computed from the new x0 would give 3 * 0.5 + -1.75 * 0.75 = 0.1875)
  // Row 0, head 1, x = [8, 4, 2, 1]: x0 = 4 - 1.5 = 2.5; x2 = 1 + 6 = 7; x1 = 1 + 1 = 2;
  //   x3 = 0.25 - 4 = -3.75 -> [2.5, 2, 7, -3.75]
  // Row 1 (position 0): unchanged.
  const std::vector<float> cos{1.0f, 1.0f, 0.5f, 0.25f};
  const std::vector<float> sin{0.0f, 0.0f, 0.75f, -1.0f};
  const std::vector<int> positions{1, 0};
  std::vector<float> x{1.0f, 2.0f, 3.0f, 4.0f, 8.0f, 4.0f, 2.0f, 1.0f,
                       1.0f, 2.0f, 3.0f, 4.0f, 8.0f, 4.0f, 2.0f, 1.0f};
  rope(x.data(), 2, 2, 4, positions.data(), cos.data(), sin.data(), ds::Storage::native);
  const std::vector<float> want{-1.75f, 4.5f, 2.25f, -1.0f, 2.5f, 2.0f, 7.0f, -3.75f,
                                1.0f,   2.0f, 3.0f,  4.0f,  8.0f, 4.0f, 2.0f, 1.0f};
  CHECK(x == want);
}

TEST_CASE("rope: each new value is computed in fp32 and rounded once to out", "[kernels][rope]") {
  // head_dim 2, c = 1, s = 1, x = [257, 1], out = bf16 (steps by 2 in [256, 512)):
  //   x0 = 257 * 1 - 1 * 1 = 256 -> 256;  x1 = 1 * 1 + 257 * 1 = 258 -> 258
  //   (x rounded to bf16 first: 257 -> 256, so x0 = 255 (a bf16 value) and x1 = 257 -> 256)
  const std::vector<float> cos{1.0f}, sin{1.0f};
  const int position = 0;
  std::vector<float> x{257.0f, 1.0f};
  rope(x.data(), 1, 1, 2, &position, cos.data(), sin.data(), ds::Storage::bf16);
  CHECK(x[0] == 256.0f);
  CHECK(x[1] == 258.0f);
  CHECK(ds::round_to_bf16(ds::round_to_bf16(257.0f) - 1.0f) == 255.0f);
}
