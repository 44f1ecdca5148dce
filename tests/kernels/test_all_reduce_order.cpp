// ops::all_reduce's two orders (kernels/ops.h AllReduce, docs/numerics.md "row-parallel matmul")
// pinned for tp = 1..5 against values computed by hand.
//
// Most cases round each addition to bf16: 8 significant bits, so in [256, 512) bf16 steps by 2;
// 257 is a tie that rounds to 256 (even) and 259 a tie that rounds to 260 (258 is odd there).
// Each rank holds n values (parts + s * n); every value position is its own reduction, so one
// call checks several differently designed columns at once.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <vector>

#include "common/float_formats.h"
#include "kernels/ops.h"

namespace {

using ds::Storage;
using ds::ops::AllReduce;

// ranks[s] = rank s's n values; returns the reduced n values (parts is copied: it is clobbered).
std::vector<float> reduce(const std::vector<std::vector<float>>& ranks, AllReduce order,
                          Storage out) {
  const size_t n = ranks.at(0).size();
  std::vector<float> parts;
  for (const auto& r : ranks) {
    REQUIRE(r.size() == n);
    parts.insert(parts.end(), r.begin(), r.end());
  }
  std::vector<float> y(n, std::numeric_limits<float>::quiet_NaN());
  ds::ops::all_reduce<float>(y.data(), parts.data(), static_cast<int>(ranks.size()), n, order, out);
  return y;
}

float bf(float v) {
  return ds::round_to_bf16(v);
}

}  // namespace

TEST_CASE("all_reduce: tp = 1 copies rank 0 unrounded in either order", "[kernels][all_reduce]") {
  // 257 is not a bf16 value; a copy keeps it (a rounding would give 256).
  for (AllReduce order : {AllReduce::ring, AllReduce::tree}) {
    const auto y = reduce({{257.0f, -3.5f}}, order, Storage::bf16);
    CHECK(y[0] == 257.0f);
    CHECK(y[1] == -3.5f);
  }
  CHECK(bf(257.0f) == 256.0f);
}

TEST_CASE("all_reduce: tp = 2 is one addition p0 + p1 rounded to out in either order",
          "[kernels][all_reduce]") {
  //   column 0: 256 + 1 = 257 -> bf16 256 (unrounded it would stay 257)
  //   column 1: 3 + 5 = 8 (exact)
  for (AllReduce order : {AllReduce::ring, AllReduce::tree}) {
    const auto y = reduce({{256.0f, 3.0f}, {1.0f, 5.0f}}, order, Storage::bf16);
    CHECK(y[0] == 256.0f);
    CHECK(y[1] == 8.0f);
  }
}

TEST_CASE("all_reduce: tp = 3 ring and tree are both (p0 + p1) + p2 (the odd rank joins last)",
          "[kernels][all_reduce]") {
  // p = [256, 1, 1]:
  //   (p0 + p1) + p2: 257 -> 256; 257 -> 256                                             -> 256
  //   odd one out first, p0 + (p1 + p2): 256 + 2                                        -> 258
  for (AllReduce order : {AllReduce::ring, AllReduce::tree}) {
    const auto y = reduce({{256.0f}, {1.0f}, {1.0f}}, order, Storage::bf16);
    CHECK(y[0] == 256.0f);
  }
  CHECK(bf(256.0f + bf(1.0f + 1.0f)) == 258.0f);
}

TEST_CASE("all_reduce: tp = 4 ring is ((p0 + p1) + p2) + p3", "[kernels][all_reduce]") {
  // column 0, p = [256, 1, 1, 1]: 257 -> 256, 257 -> 256, 257 -> 256                     -> 256
  //   (the tree order gives 258, see the next test)
  // column 1, p = [2, 4, 8, 16]: exact sums                                                -> 30
  const auto y = reduce({{256.0f, 2.0f}, {1.0f, 4.0f}, {1.0f, 8.0f}, {1.0f, 16.0f}},
                        AllReduce::ring, Storage::bf16);
  CHECK(y[0] == 256.0f);
  CHECK(y[1] == 30.0f);
  CHECK(bf(bf(256.0f + 1.0f) + bf(1.0f + 1.0f)) == 258.0f);
}

TEST_CASE("all_reduce: tp = 4 tree is (p0 + p1) + (p2 + p3)", "[kernels][all_reduce]") {
  // column 0, p = [256, 1, 1, 1]: 257 -> 256; 1 + 1 = 2; 256 + 2 = 258                   -> 258
  //   (the ring order gives 256, see above)
  const auto y = reduce({{256.0f}, {1.0f}, {1.0f}, {1.0f}}, AllReduce::tree, Storage::bf16);
  CHECK(y[0] == 258.0f);
  CHECK(bf(bf(bf(256.0f + 1.0f) + 1.0f) + 1.0f) == 256.0f);
}

TEST_CASE("all_reduce: tp = 4 ring and tree in fp32 (native) round each addition too",
          "[kernels][all_reduce]") {
  // p = [1e8, 1, -1e8, 1]; fp32 steps by 8 at 1e8, so 1e8 + 1 -> 1e8 and -1e8 + 1 -> -1e8.
  //   ring: ((1e8 + 1) + -1e8) + 1 = (1e8 - 1e8) + 1                                     -> 1
  //   tree: (1e8 + 1) + (-1e8 + 1) = 1e8 + -1e8                                         -> 0
  const std::vector<std::vector<float>> p{{1e8f}, {1.0f}, {-1e8f}, {1.0f}};
  CHECK(reduce(p, AllReduce::ring, Storage::native)[0] == 1.0f);
  CHECK(reduce(p, AllReduce::tree, Storage::native)[0] == 0.0f);
}

TEST_CASE("all_reduce: tp = 5 ring is (((p0 + p1) + p2) + p3) + p4", "[kernels][all_reduce]") {
  // p = [256, 0, 1, 1, 0]: 256, 257 -> 256, 257 -> 256, 256                               -> 256
  //   (the tree order gives (256 + 2) + 0 = 258)
  const auto y = reduce({{256.0f}, {0.0f}, {1.0f}, {1.0f}, {0.0f}}, AllReduce::ring, Storage::bf16);
  CHECK(y[0] == 256.0f);
  CHECK(bf(bf(256.0f + 0.0f) + bf(1.0f + 1.0f)) + 0.0f == 258.0f);
}

TEST_CASE("all_reduce: tp = 5 tree is ((p0 + p1) + (p2 + p3)) + p4, the odd one out moving up",
          "[kernels][all_reduce]") {
  // Level 1: (p0 + p1), (p2 + p3), p4 moves up; level 2: their first two added, p4 moves up;
  // level 3: that sum + p4. Three columns, each telling the pinned order from one alternative:
  //   column 0, p = [256, 0, 1, 1, 0]:
  //     pinned: (256 + 0) + (1 + 1) = 258; 258 + 0                                       -> 258
  //     ring:   256, 257 -> 256, 257 -> 256, 256                                         -> 256
  //   column 1, p = [256, 0, 1, 0, 1]:
  //     pinned: (256 + 0) + (1 + 0) = 257 -> 256; 256 + 1 = 257 -> 256                  -> 256
  //     odd one joining its neighbour pair first, (p0 + p1) + ((p2 + p3) + p4): 256 + 2  -> 258
  //   column 2, p = [1, 1, 256, 0, 0]:
  //     pinned: (1 + 1) + (256 + 0) = 258; 258 + 0                                       -> 258
  //     odd one out taken at the front, p0 + ((p1 + p2) + (p3 + p4)):
  //       1 + 256 = 257 -> 256; 256 + 0 = 256; 1 + 256 = 257 -> 256                      -> 256
  const auto y = reduce({{256.0f, 256.0f, 1.0f},
                         {0.0f, 0.0f, 1.0f},
                         {1.0f, 1.0f, 256.0f},
                         {1.0f, 0.0f, 0.0f},
                         {0.0f, 1.0f, 0.0f}},
                        AllReduce::tree, Storage::bf16);
  CHECK(y[0] == 258.0f);
  CHECK(y[1] == 256.0f);
  CHECK(y[2] == 258.0f);
  // the alternatives, written out:
  CHECK(bf(bf(bf(bf(256.0f + 0.0f) + 1.0f) + 1.0f) + 0.0f) == 256.0f);  // ring, column 0
  CHECK(bf(bf(256.0f + 0.0f) + bf(bf(1.0f + 0.0f) + 1.0f)) == 258.0f);  // column 1
  CHECK(bf(1.0f + bf(bf(1.0f + 256.0f) + bf(0.0f + 0.0f))) == 256.0f);  // column 2
}
