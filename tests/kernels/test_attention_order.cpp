// ops::attention's order (kernels/ops.h Attention and OpNumerics, docs/numerics.md "attention")
// pinned on one query against a few keys.
//
// Most cases make every exp() exact so the expected values can be worked out by hand: q = 0 gives
// equal scores (exp(0) = 1, p_t = 1/n, exact for n a power of two), and a score 200 below the max
// gives exp(-200) = 0 (it underflows fp32, whose smallest value is about e^-103). The values of v
// then sit on fp32 / fp16 rounding edges, so each alternative order gives a different result.
// One case with general scores compares with the documented formula written out below in fp32
// temporaries, bit for bit.
#include <algorithm>
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "common/float_formats.h"
#include "kernels/ops.h"

namespace {

using ds::Storage;
using ds::ops::OpNumerics;

const float kNaN = std::numeric_limits<float>::quiet_NaN();

OpNumerics numerics(int splits, bool accum_f16 = false, Storage p_round = Storage::native,
                    Storage out = Storage::native) {
  OpNumerics a;
  a.split = splits;
  a.accum_f16 = accum_f16;
  a.p_round = p_round;
  a.out = out;
  return a;
}

// FlashAttention-2's order with tiles of `tile` keys.
OpNumerics tiled(int tile, Storage p_round = Storage::native) {
  OpNumerics a = numerics(1, false, p_round);
  a.tile = tile;
  return a;
}

// One sequence: k, v hold (capacity, n_kv_heads * head_dim), q holds (rows, n_heads * head_dim).
struct Case {
  int n_heads = 1, n_kv_heads = 1, head_dim = 1, window = 0;
  float scale = 1.0f;
  std::vector<float> q, k, v;
  std::vector<int> positions;

  std::vector<float> run(const OpNumerics& num) const {
    const int rows = static_cast<int>(positions.size());
    const size_t q_dim = static_cast<size_t>(n_heads) * head_dim;
    REQUIRE(q.size() == rows * q_dim);
    REQUIRE(k.size() == v.size());
    const int max_pos = *std::max_element(positions.begin(), positions.end());
    REQUIRE(k.size() >= static_cast<size_t>(max_pos + 1) * n_kv_heads * head_dim);
    std::vector<float> out(rows * q_dim, kNaN);
    std::vector<float> scratch(2 * (max_pos + 1) + head_dim, kNaN);
    ds::ops::Attention<float*> a{out.data(), q.data(), k.data(), v.data()};
    a.rows = rows;
    a.positions = positions.data();
    a.n_heads = n_heads;
    a.n_kv_heads = n_kv_heads;
    a.head_dim = head_dim;
    a.window = window;
    a.scale = scale;
    a.num = num;
    ds::ops::attention<float>(a, scratch.data());
    return out;
  }
};

// One head, head_dim 1 or more, query at position n - 1 attending all n keys.
Case one_query(const std::vector<float>& q, const std::vector<float>& k,
               const std::vector<float>& v) {
  Case c;
  c.head_dim = static_cast<int>(q.size());
  c.q = q;
  c.k = k;
  c.v = v;
  c.positions = {static_cast<int>(k.size() / q.size()) - 1};
  return c;
}

// 8 keys with equal scores (q = 0), so p_t = 1/8 and, with split-KV, exp(s - m_c) = 1 and every
// chunk factor exp(m_c - m) = 1. head_dim 2: v column 0 = [2^27, 8, 8, 8, 8, 8, 8, 8] (so
// p_t v_t = [2^24, 1, ...]), column 1 = [0, 1, ..., 7] (exact sums).
Case uniform_eight() {
  std::vector<float> k, v;
  for (int t = 0; t < 8; ++t) {
    k.insert(k.end(), {static_cast<float>(t), -1.0f});
    v.insert(v.end(), {t == 0 ? 134217728.0f : 8.0f, static_cast<float>(t)});
  }
  return one_query({0.0f, 0.0f}, k, v);
}

}  // namespace

TEST_CASE("attention: splits = 1 sums p_t * v_t over t in order", "[kernels][attention]") {
  // p_t = 1/8; column 0: p v = [2^24, 1, 1, 1, 1, 1, 1, 1].
  //   in order: 2^24 + 1 is an fp32 tie -> 2^24, seven times                          -> 16777216
  //   reversed: 1 + ... + 1 = 7; 7 + 2^24 is a tie between 2^24 + 6 (odd) and 2^24 + 8  -> 16777224
  // column 1: (0 + 1 + ... + 7) / 8 = 3.5 (exact)
  const auto y = uniform_eight().run(numerics(1));
  CHECK(y[0] == 16777216.0f);
  CHECK(y[1] == 3.5f);
  CHECK(7.0f + 16777216.0f == 16777224.0f);
}

TEST_CASE("attention: split-KV (2 splits) sums each chunk in order then merges in chunk order",
          "[kernels][attention]") {
  // 8 keys, 2 chunks of 4: o_c = sum over the chunk of 1 * v_t, l_c = 4, factors 1.
  //   column 0: o_0 = 2^27 + 8 + 8 + 8: fp32 steps by 16 at 2^27, each +8 a tie -> 2^27;
  //             o_1 = 32; merge 2^27 + 32 (exact); l = 8; / 8 = 2^24 + 4              -> 16777220
  //   (splits = 1 gives 2^24, see above)
  const auto y = uniform_eight().run(numerics(2));
  CHECK(y[0] == 16777220.0f);
  CHECK(y[1] == 3.5f);
}

TEST_CASE("attention: split-KV (3 splits of 8 keys) cuts chunks 3 3 2 and merges them in order",
          "[kernels][attention]") {
  // Column 0 (units: v), chunks t = 0..2, 3..5, 6..7:
  //   o = [2^27 (the 8s lost), 24, 16];
  //   (2^27 + 24) is a tie between 2^27 + 16 (odd) and 2^27 + 32 -> 2^27 + 32; + 16 = 2^27 + 48;
  //   / 8 = 2^24 + 6                                                                    -> 16777222
  // Alternatives:
  //   chunks 2 3 3: o = [2^27, 24, 24]; 2^27 + 32; + 24 = 2^27 + 56, a tie between 48 (odd) and
  //     64 -> 2^27 + 64; / 8                                                           -> 16777224
  //   merge o_0 + (o_1 + o_2) = 2^27 + 40, a tie between 32 (even) and 48 -> 2^27 + 32 -> 16777220
  const auto y = uniform_eight().run(numerics(3));
  CHECK(y[0] == 16777222.0f);
  CHECK(y[1] == 3.5f);
  const float two27 = 134217728.0f;
  CHECK(((two27 + 24.0f) + 24.0f) / 8.0f == 16777224.0f);
  CHECK((two27 + (24.0f + 16.0f)) / 8.0f == 16777220.0f);
}

TEST_CASE("attention: split-KV merge scales chunk c by exp(m_c - m) with m the largest chunk max",
          "[kernels][attention]") {
  // head_dim 1, q = 1, scale 1, so s_t = k_t; 4 keys, splits = 2: chunks t = 0..1 and 2..3.
  SECTION("low chunk first") {
    // k = [-200, -200, 0, 0], v = [100, 100, 3, 5]:
    //   chunk 0: m_0 = -200, l_0 = 2, o_0 = 200;  chunk 1: m_1 = 0, l_1 = 2, o_1 = 8
    //   m = 0: factors exp(-200) = 0 and 1; out = (0 + 8) / (0 + 2)                      -> 4
    //   without the rescaling: (200 + 8) / 4 = 52;  with m = m_0: exp(200) = inf, inf / inf = NaN
    const auto c = one_query({1.0f}, {-200.0f, -200.0f, 0.0f, 0.0f}, {100.0f, 100.0f, 3.0f, 5.0f});
    CHECK(c.run(numerics(2))[0] == 4.0f);
    CHECK(c.run(numerics(1))[0] == 4.0f);  // softmax: p = [0, 0, 1/2, 1/2], 1.5 + 2.5
  }
  SECTION("high chunk first") {
    // k = [0, 0, -200, -200], v = [3, 5, 100, 100]: the same with the chunks swapped    -> 4
    //   (with m = the last chunk's max, -200: exp(200) = inf, NaN)
    const auto c = one_query({1.0f}, {0.0f, 0.0f, -200.0f, -200.0f}, {3.0f, 5.0f, 100.0f, 100.0f});
    CHECK(c.run(numerics(2))[0] == 4.0f);
  }
  CHECK(std::exp(-200.0f) == 0.0f);
  CHECK(std::isinf(std::exp(200.0f)));
}

TEST_CASE("attention: p_round rounds p_t with splits = 1 but exp(s - m_c) with split-KV",
          "[kernels][attention]") {
  // q = 0, 3 keys, v = [3, 3, 3], p_round = bf16.
  //   splits = 1: p = fp32(1/3) = 0x3EAAAAAB -> bf16 0x3EAB = 0.333984375; p v = 1.001953125
  //     (exact); 1.001953125 * 3 summed = 3.005859375 (exact)                    -> 3.005859375
  //     with p_round native: 3 * fp32(1/3) = 1 + 2^-25 -> 1; sum                            -> 3
  //   splits = 3 (and 2): exp(0) = 1 is already a bf16 value; o = 3 + 3 + 3 = 9, l = 3     -> 3
  //   out = bf16 as well: 3.005859375 in [2, 4), where bf16 steps by 2^-6                   -> 3
  const auto c = one_query({0.0f}, {5.0f, 6.0f, 7.0f}, {3.0f, 3.0f, 3.0f});
  CHECK(c.run(numerics(1, false, Storage::bf16))[0] == 3.005859375f);
  CHECK(c.run(numerics(1, false, Storage::native))[0] == 3.0f);
  CHECK(c.run(numerics(3, false, Storage::bf16))[0] == 3.0f);
  CHECK(c.run(numerics(2, false, Storage::bf16))[0] == 3.0f);
  CHECK(c.run(numerics(1, false, Storage::bf16, Storage::bf16))[0] == 3.0f);
  CHECK(ds::round_to_bf16(1.0f / 3.0f) == 0.333984375f);
}

TEST_CASE("attention: fp16 accumulation sums q.k over d and p_t v_t over t in order in fp16",
          "[kernels][attention]") {
  // q = [2048, 1, 1]; k_0 = [1, 1, 1], k_1 = [1, 0, 0]; scale 1.
  //   fp16 dot, d in order: 2048; 2049 -> 2048 (tie, fp16 steps by 2 in [2048, 4096)); 2048
  //     for both keys, so s_0 = s_1, p = [1/2, 1/2]
  //   (d in reverse: 1 + 1 = 2, 2 + 2048 = 2050: s_0 = 2050 and p would not be even;
  //    in fp32: s_0 = 2049, the same)
  // v_0 = [4096, 2, 0], v_1 = [2, 2, 6]; out in fp16, t in order:
  //   d = 0: 2048; 2048 + 1 = 2049 -> 2048 (in fp32: 2049)                            -> 2048
  //   d = 1: 1 + 1                                                                     -> 2
  //   d = 2: 0 + 3                                                                     -> 3
  const auto c = one_query({2048.0f, 1.0f, 1.0f}, {1.0f, 1.0f, 1.0f, 1.0f, 0.0f, 0.0f},
                           {4096.0f, 2.0f, 0.0f, 2.0f, 2.0f, 6.0f});
  const auto y = c.run(numerics(1, true));
  CHECK(y[0] == 2048.0f);
  CHECK(y[1] == 2.0f);
  CHECK(y[2] == 3.0f);
  const auto f16 = [](float v) { return ds::round_to_f16(v); };
  CHECK(f16(f16(f16(1.0f) + 1.0f) + 2048.0f) == 2050.0f);  // the reversed dot
  // without fp16 accumulation the scores differ (2049 vs 2048) and so does d = 0
  CHECK(c.run(numerics(1, false))[0] != 2048.0f);
}

TEST_CASE("attention: split-KV with fp16 accumulation sums each o_c in fp16 and merges in fp32",
          "[kernels][attention]") {
  // q = 0, 4 keys, v = [2048, 1, 1, 0], splits = 2 (chunks t = 0..1 and 2..3):
  //   o_0 = 2048; 2048 + 1 = 2049 -> 2048 (fp16 tie);  o_1 = 1 + 0 = 1
  //   merge in fp32: 2048 + 1 = 2049; l = 4; 2049 / 4                                   -> 512.25
  //   merged in fp16 instead: 2049 -> 2048, / 4 = 512; o_c in fp32: 2050 / 4 = 512.5
  // splits = 1, fp16: p = 1/4: 512; 512 + 0.25 -> 512 (fp16 steps by 0.5 in [512, 1024),
  //   a tie to even); 512 + 0.25 -> 512; + 0                                            -> 512
  const auto c = one_query({0.0f}, {1.0f, 2.0f, 3.0f, 4.0f}, {2048.0f, 1.0f, 1.0f, 0.0f});
  CHECK(c.run(numerics(2, true))[0] == 512.25f);
  CHECK(c.run(numerics(2, false))[0] == 512.5f);
  CHECK(c.run(numerics(1, true))[0] == 512.0f);
  CHECK(ds::round_to_f16(2049.0f) / 4.0f == 512.0f);
}

TEST_CASE("attention: a query at position p with window w attends keys max(0 p-w+1) to p",
          "[kernels][attention]") {
  // q = 0 (equal scores), v_t = 2^t; keys the query must not read are NaN in k and v, so reading
  // one makes the output NaN. The cache holds 8 positions.
  const auto make = [](int p, int window, int lo) {
    Case c;
    c.window = window;
    c.q = {0.0f};
    c.positions = {p};
    for (int t = 0; t < 8; ++t) {
      const bool inside = t >= lo && t <= p;
      c.k.push_back(inside ? 1.0f : kNaN);
      c.v.push_back(inside ? std::ldexp(1.0f, t) : kNaN);
    }
    return c;
  };
  // p = 5, window 4: keys 2..5, p_t = 1/4: (4 + 8 + 16 + 32) / 4                          -> 15
  CHECK(make(5, 4, 2).run(numerics(1))[0] == 15.0f);
  CHECK(make(5, 4, 2).run(numerics(2))[0] == 15.0f);
  // p = 1, window 4: 1 - 4 + 1 < 0, so keys 0..1: (1 + 2) / 2                              -> 1.5
  CHECK(make(1, 4, 0).run(numerics(1))[0] == 1.5f);
  // p = 3, window 0 (unlimited): keys 0..3: (1 + 2 + 4 + 8) / 4                           -> 3.75
  CHECK(make(3, 0, 0).run(numerics(1))[0] == 3.75f);
  // p = 6, window 1: key 6 alone                                                           -> 64
  CHECK(make(6, 1, 6).run(numerics(1))[0] == 64.0f);
  // one window wider (keys 1..5 for p = 5) reads a NaN key: the NaN fence is live
  CHECK(std::isnan(make(5, 5, 2).run(numerics(1))[0]));
}

TEST_CASE("attention: query head h reads kv head h / (n_heads / n_kv_heads)",
          "[kernels][attention]") {
  // n_heads = 4, n_kv_heads = 2, head_dim 1, query at position 1 (keys 0 and 1), q = 1 for all.
  //   kv head 0: k = [0, 0], v = [10, 30]: equal scores           -> (10 + 30) / 2 = 20
  //   kv head 1: k = [-200, 0], v = [50, 70]: p = [exp(-200) = 0, 1]                    -> 70
  //   heads 0, 1 -> kv 0; heads 2, 3 -> kv 1                             -> [20, 20, 70, 70]
  //   (an interleaved mapping h % n_kv_heads would give [20, 70, 20, 70])
  Case c;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.q = {1.0f, 1.0f, 1.0f, 1.0f};
  c.positions = {1};
  c.k = {0.0f, -200.0f, 0.0f, 0.0f};  // (t, kv head): t = 0: [0, -200], t = 1: [0, 0]
  c.v = {10.0f, 50.0f, 30.0f, 70.0f};
  const auto y = c.run(numerics(1));
  CHECK(y[0] == 20.0f);
  CHECK(y[1] == 20.0f);
  CHECK(y[2] == 70.0f);
  CHECK(y[3] == 70.0f);
}

namespace {

// The documented formulas (kernels/ops.h attention, docs/numerics.md), written out in fp32 for one
// head of one query against keys 0..n-1, with the chunk sizes given explicitly.
struct Ref {
  std::vector<float> q, k, v;  // k, v: (n, head_dim)
  float scale;
  int hd() const { return static_cast<int>(q.size()); }
  int n() const { return static_cast<int>(k.size()) / hd(); }

  float score(int t) const {
    float acc = 0.0f;
    for (int d = 0; d < hd(); ++d) {
      const float prod = q[d] * k[t * hd() + d];
      acc = acc + prod;
    }
    return acc * scale;
  }

  // splits = 1: max; e_t = exp(s_t - max) summed in order; p_t = round(e_t / sum); out = sum p v.
  std::vector<float> softmax(Storage p_round) const {
    float mx = -INFINITY;
    for (int t = 0; t < n(); ++t) mx = std::max(mx, score(t));
    std::vector<float> e(n());
    float sum = 0.0f;
    for (int t = 0; t < n(); ++t) {
      e[t] = std::exp(score(t) - mx);
      sum = sum + e[t];
    }
    std::vector<float> out(hd(), 0.0f);
    for (int t = 0; t < n(); ++t) {
      const float p = ds::round_to(e[t] / sum, p_round);
      for (int d = 0; d < hd(); ++d) {
        const float pv = p * v[t * hd() + d];
        out[d] = out[d] + pv;
      }
    }
    return out;
  }

  // tiled (online softmax): per group of keys, in order: m' = max(m, max s), alpha =
  // exp(m - m'), e = exp(s - m'), l = l * alpha + (sum of e in order), o = o * alpha + sum
  // round(e) v in order; out = o / l.
  std::vector<float> tiled(const std::vector<std::vector<int>>& groups, Storage p_round) const {
    float m = -INFINITY, l = 0.0f;
    std::vector<float> o(hd(), 0.0f);
    for (const std::vector<int>& g : groups) {
      float mt = -INFINITY;
      for (int t : g) mt = std::max(mt, score(t));
      const float mn = std::max(m, mt);
      const float alpha = std::exp(m - mn);
      std::vector<float> e;
      float sum = 0.0f;
      for (int t : g) {
        e.push_back(std::exp(score(t) - mn));
        sum = sum + e.back();
      }
      const float la = l * alpha;
      l = la + sum;
      for (int d = 0; d < hd(); ++d) {
        float acc = o[d] * alpha;
        for (size_t i = 0; i < g.size(); ++i) {
          const float ev = ds::round_to(e[i], p_round) * v[g[i] * hd() + d];
          acc = acc + ev;
        }
        o[d] = acc;
      }
      m = mn;
    }
    for (int d = 0; d < hd(); ++d) o[d] = o[d] / l;
    return o;
  }

  // split-KV: per chunk m_c, l_c = sum e, o_c = sum round(e) v; merged in chunk order.
  std::vector<float> split(const std::vector<int>& sizes, Storage p_round) const {
    std::vector<float> m, l;
    std::vector<std::vector<float>> o;
    int t0 = 0;
    for (int size : sizes) {
      float mc = -INFINITY;
      for (int t = t0; t < t0 + size; ++t) mc = std::max(mc, score(t));
      float lc = 0.0f;
      std::vector<float> oc(hd(), 0.0f);
      for (int t = t0; t < t0 + size; ++t) {
        const float e = std::exp(score(t) - mc);
        lc = lc + e;
        const float er = ds::round_to(e, p_round);
        for (int d = 0; d < hd(); ++d) {
          const float ev = er * v[t * hd() + d];
          oc[d] = oc[d] + ev;
        }
      }
      m.push_back(mc);
      l.push_back(lc);
      o.push_back(oc);
      t0 += size;
    }
    REQUIRE(t0 == n());
    float mx = -INFINITY;
    for (float mc : m) mx = std::max(mx, mc);
    float lsum = 0.0f;
    std::vector<float> out(hd(), 0.0f);
    for (size_t c = 0; c < sizes.size(); ++c) {
      const float f = std::exp(m[c] - mx);
      const float lf = l[c] * f;
      lsum = lsum + lf;
      for (int d = 0; d < hd(); ++d) {
        const float of = o[c][d] * f;
        out[d] = out[d] + of;
      }
    }
    for (int d = 0; d < hd(); ++d) out[d] = out[d] / lsum;
    return out;
  }
};

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::bit_cast<uint32_t>(a[i]) != std::bit_cast<uint32_t>(b[i])) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("attention: general scores with splits 1 2 3 (chunks 3 2 and 2 2 1) match the formula",
          "[kernels][attention]") {
  // 5 keys, head_dim 3, scale 1/sqrt(3): scores spread over a few units, so every exp() is
  // general and every merge factor exp(m_c - m) is neither 0 nor 1.
  Ref r;
  r.q = {0.75f, -1.25f, 0.5f};
  r.k = {1.5f, 0.25f,  -2.0f, -0.5f, 1.75f,  0.125f, 2.25f, -1.0f,
         0.5f, 0.375f, 0.5f,  1.5f,  -1.75f, -0.25f, 2.5f};
  r.v = {1.1f, -2.3f, 0.7f,  3.9f, 0.2f, -1.4f, -0.6f, 2.8f,
         1.9f, 0.45f, -3.1f, 2.2f, 1.7f, 1.3f,  -0.9f};
  r.scale = 1.0f / std::sqrt(3.0f);
  Case c = one_query(r.q, r.k, r.v);
  c.scale = r.scale;
  for (Storage pr : {Storage::native, Storage::bf16}) {
    INFO("p_round " << (pr == Storage::native ? "native" : "bf16"));
    const auto want1 = r.softmax(pr);
    const auto want2 = r.split({3, 2}, pr);
    const auto want3 = r.split({2, 2, 1}, pr);
    CHECK(same_bits(c.run(numerics(1, false, pr)), want1));
    CHECK(same_bits(c.run(numerics(2, false, pr)), want2));
    CHECK(same_bits(c.run(numerics(3, false, pr)), want3));
    // These inputs tell the orders apart: each pinned result differs from the others and from
    // the smaller-chunks-first cuts (2 3 and 1 2 2).
    CHECK_FALSE(same_bits(want1, want2));
    CHECK_FALSE(same_bits(want1, want3));
    CHECK_FALSE(same_bits(want2, want3));
    CHECK_FALSE(same_bits(want2, r.split({2, 3}, pr)));
    CHECK_FALSE(same_bits(want3, r.split({1, 2, 2}, pr)));
  }
}

TEST_CASE("attention: tiled (FlashAttention-2) order rescales per aligned key tile",
          "[kernels][attention]") {
  // The general 5-key case with tiles of 2 keys: keys {0, 1}, {2, 3}, {4}; with tiles of 4:
  // {0..3}, {4}. The tiles start at multiples of the tile size, never at the first key.
  Ref r;
  r.q = {0.75f, -1.25f, 0.5f};
  r.k = {1.5f, 0.25f,  -2.0f, -0.5f, 1.75f,  0.125f, 2.25f, -1.0f,
         0.5f, 0.375f, 0.5f,  1.5f,  -1.75f, -0.25f, 2.5f};
  // v such that every order below gives other bits (found by trying values; the earlier tests'
  // v leave the 2-key and 4-key tilings equal)
  r.v = {-3.26f, 1.54f,  0.15f,  3.01f,  2.92f,  3.16f, 2.63f, -3.32f,
         2.64f,  -3.69f, -1.82f, -2.64f, -3.53f, 3.03f, 1.36f};
  r.scale = 1.0f / std::sqrt(3.0f);
  Case c = one_query(r.q, r.k, r.v);
  c.scale = r.scale;
  for (Storage pr : {Storage::native, Storage::bf16}) {
    INFO("p_round " << (pr == Storage::native ? "native" : "bf16"));
    const auto want2 = r.tiled({{0, 1}, {2, 3}, {4}}, pr);
    const auto want4 = r.tiled({{0, 1, 2, 3}, {4}}, pr);
    CHECK(same_bits(c.run(tiled(2, pr)), want2));
    CHECK(same_bits(c.run(tiled(4, pr)), want4));
    // a tile wider than the keys is one group: the online softmax of one tile, which is still
    // not the whole-row softmax (o is divided by l once, at the end, and p_t is not normalised)
    CHECK(same_bits(c.run(tiled(64, pr)), r.tiled({{0, 1, 2, 3, 4}}, pr)));
    // the orders differ from each other and from the split-KV merge of the same cuts
    CHECK_FALSE(same_bits(want2, want4));
    CHECK_FALSE(same_bits(want2, r.softmax(pr)));
    CHECK_FALSE(same_bits(want2, r.tiled({{0}, {1, 2}, {3, 4}}, pr)));  // tiles from the first key
  }
  // split-KV requested: the split order, not the tiles (as the CUDA backend decides)
  OpNumerics split_and_tile = tiled(2);
  split_and_tile.split = 2;
  CHECK(same_bits(c.run(split_and_tile), r.split({3, 2}, Storage::native)));
}

TEST_CASE("attention: tiled order with a window starts at the tile holding the first key",
          "[kernels][attention]") {
  // Query at position 6 with window 4 attends keys 3..6; tiles of 2 aligned at 0: {3}, {4, 5},
  // {6}. Keys 0..2 are NaN: reading one makes the output NaN.
  Ref r;
  r.q = {0.5f, -1.0f};
  r.scale = 0.75f;
  for (int t = 0; t < 7; ++t) {
    r.k.insert(r.k.end(), {0.25f * t - 0.5f, 1.0f - 0.375f * t});
    r.v.insert(r.v.end(), {1.0f + 0.25f * t, 2.0f - 0.5f * t * t});
  }
  Case c = one_query(r.q, r.k, r.v);
  c.scale = r.scale;
  c.window = 4;
  Ref fenced = r;
  for (int t = 0; t < 3; ++t) {
    for (int d = 0; d < 2; ++d) c.k[t * 2 + d] = c.v[t * 2 + d] = kNaN;
  }
  const auto got = c.run(tiled(2));
  CHECK(same_bits(got, fenced.tiled({{3}, {4, 5}, {6}}, Storage::native)));
  CHECK_FALSE(same_bits(got, fenced.tiled({{3, 4}, {5, 6}}, Storage::native)));
}
