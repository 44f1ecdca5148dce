// Diff metrics against values computed independently here, from the known arrays the traces were
// written with: flip, top-5 Jaccard, log-prob RMSE (with the bounded case), KL exact and
// approximate, margins and at-risk rows, per-site drift, onset and growth.
#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <cmath>
#include <numeric>
#include <random>
#include <set>

#include "diff/diff.h"
#include "diff/metrics.h"
#include "tests/diff/trace_builder.h"
#include "tests/support/temp_dir.h"

using Catch::Matchers::WithinAbs;
using Catch::Matchers::WithinRel;

namespace {

constexpr int V = 8;
constexpr int K = 6;
constexpr int W = 4;  // hidden width

// ---- independent reference computations (double, from the values as stored: float32) ----------

double stored(double x) {
  return static_cast<double>(static_cast<float>(x));
}

double lse_of(const std::vector<double>& row) {
  double m = *std::max_element(row.begin(), row.end()), s = 0;
  for (double x : row) s += std::exp(x - m);
  return m + std::log(s);
}

// Ids of the k largest values (the test rows have no ties).
std::vector<int> top_ids(const std::vector<double>& row, int k) {
  std::vector<int> ids(row.size());
  std::iota(ids.begin(), ids.end(), 0);
  std::sort(ids.begin(), ids.end(), [&](int a, int b) { return row[a] > row[b]; });
  ids.resize(static_cast<size_t>(k));
  return ids;
}

bool contains(const std::vector<int>& v, int x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

double ref_jaccard(const std::vector<int>& a, const std::vector<int>& b) {
  int inter = 0;
  for (int x : a) inter += contains(b, x);
  return static_cast<double>(inter) / static_cast<double>(a.size() + b.size() - inter);
}

// KL(A‖B) over the whole vocabulary.
double ref_kl_exact(const std::vector<double>& a, const std::vector<double>& b) {
  const double la = lse_of(a), lb = lse_of(b);
  double kl = 0;
  for (size_t i = 0; i < a.size(); ++i) kl += std::exp(a[i] - la) * ((a[i] - la) - (b[i] - lb));
  return kl;
}

// KL over the ids in both top-K sets plus one bucket for the rest, with the stored (float) lse.
double ref_kl_topk(const std::vector<double>& a, const std::vector<double>& b, int k) {
  const double la = stored(lse_of(a)), lb = stored(lse_of(b));
  const auto ta = top_ids(a, k), tb = top_ids(b, k);
  double kl = 0, sa = 0, sb = 0;
  for (int i : ta) {
    if (!contains(tb, i)) continue;
    const double pa = std::exp(a[i] - la), pb = std::exp(b[i] - lb);
    kl += pa * std::log(pa / pb);
    sa += pa;
    sb += pb;
  }
  return kl + (1 - sa) * std::log((1 - sa) / (1 - sb));
}

struct Rel {
  double rel, cos, max_abs;
};
Rel ref_drift(const std::vector<float>& a, const std::vector<float>& b) {
  double na = 0, nb = 0, nd = 0, dot = 0, mx = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    na += double(a[i]) * a[i];
    nb += double(b[i]) * b[i];
    nd += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    dot += double(a[i]) * b[i];
    mx = std::max(mx, std::abs(double(a[i]) - b[i]));
  }
  return {std::sqrt(nd / na), dot / std::sqrt(na * nb), mx};
}

double ref_median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// ---- the hand-built pair -------------------------------------------------------------------

// A: prompt [1 5 6], generates [2 3 4 7]; B generates [2 3 0 7]: tokens differ at index 5, the
// third generated token (step 2), chosen by row 4. Rows 0..4 are compared.
const std::vector<int32_t> kPrompt = {1, 5, 6};
const std::vector<int32_t> kGenA = {2, 3, 4, 7};
const std::vector<int32_t> kGenB = {2, 3, 0, 7};
constexpr int kRows = 6;
constexpr int kCompared = 5;

std::vector<std::vector<double>> logits_a() {
  std::vector<std::vector<double>> l(kRows, std::vector<double>(V));
  for (int r = 0; r < kRows; ++r) {
    for (int i = 0; i < V; ++i) l[r][i] = 0.25 * ((3 * i + 5 * r) % 8);  // a permutation of 0..1.75
  }
  return l;
}

std::vector<std::vector<double>> logits_b() {
  auto a = logits_a();
  auto b = a;
  for (int i = 0; i < V; ++i) {
    b[1][i] = a[1][i] + (i + 1) / 64.0;                           // same ranking, shifted values
    b[2][i] = 0.25 * ((3 * i + 5 * 2 + 3) % 8) + (i + 1) / 64.0;  // another ranking
    b[3][i] = 1.75 - a[3][i] + (i + 1) / 128.0;                   // reversed: A's top-1 is last
    b[4][i] = a[4][i] + (i + 1) / 64.0;
  }
  b[4][0] = 2.5;  // token 0 becomes B's top-1 at the flip row
  return b;
}

const std::vector<std::string> kSitesA = {"embed", "L0/attn_out", "L0/out", "L1/out", "final_norm"};
const std::vector<std::string> kSitesB = {"embed", "L0/out", "L1/out", "final_norm"};

float hidden_a(size_t site, int r, int j) {
  return (r + 1) * (j + 1) * 0.5f + static_cast<float>(site);
}

std::map<std::string, std::vector<std::vector<float>>> hidden(bool b) {
  std::map<std::string, std::vector<std::vector<float>>> h;
  for (size_t s = 0; s < kSitesA.size(); ++s) {
    auto& rows = h[kSitesA[s]];
    for (int r = 0; r < kRows; ++r) {
      std::vector<float> row(W);
      for (int j = 0; j < W; ++j) {
        float x = hidden_a(s, r, j);
        if (b && kSitesA[s] == "L0/out" && r >= 2) x += 0.001f * (j + 1) * r;
        if (b && kSitesA[s] == "L1/out" && r >= 1) x += 0.01f * (j + 1);
        if (b && kSitesA[s] == "final_norm" && r >= 3 && j == 0) x += 0.1f;
        row[j] = x;
      }
      rows.push_back(row);
    }
  }
  if (b) h.erase("L0/attn_out");
  return h;
}

ds::test::TraceSpec spec(bool b, bool full) {
  ds::test::TraceSpec t;
  t.topk = K;
  t.full_logits = full;
  ds::test::SeqSpec s;
  s.prompt = kPrompt;
  s.generated = b ? kGenB : kGenA;
  s.logits = b ? logits_b() : logits_a();
  s.hidden = hidden(b);
  s.site_order = b ? kSitesB : kSitesA;
  t.seqs.push_back(s);
  // Sequence 1: the same on both sides (A's data).
  ds::test::SeqSpec same = s;
  same.generated = kGenA;
  same.logits = logits_a();
  same.hidden = hidden(false);
  same.site_order = kSitesA;
  t.seqs.push_back(same);
  return t;
}

}  // namespace

TEST_CASE("row metrics: the sums follow docs/metrics.md's lane order to the bit", "[diff]") {
  // The documented order, written out here: element i in lane i mod 4, each lane in order of i,
  // the lanes added (l0 + l1) + (l2 + l3); every product and sum rounded in double (no FMA).
  auto reference = [](const std::vector<float>& a, const std::vector<float>& b) {
    volatile double aa[4] = {0, 0, 0, 0}, dd[4] = {0, 0, 0, 0}, ab[4] = {0, 0, 0, 0},
                    bb[4] = {0, 0, 0, 0};
    double mx = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      const double x = a[i], y = b[i];
      volatile double xx = x * x, yy = y * y, xy = x * y, e = x - y;
      volatile double ee = e * e;
      aa[i % 4] = aa[i % 4] + xx;
      bb[i % 4] = bb[i % 4] + yy;
      dd[i % 4] = dd[i % 4] + ee;
      ab[i % 4] = ab[i % 4] + xy;
      mx = std::max(mx, std::fabs(e));
    }
    auto total = [](volatile double* v) { return (v[0] + v[1]) + (v[2] + v[3]); };
    const double sa = total(aa), sb = total(bb), sd = total(dd), sab = total(ab);
    return std::array<double, 3>{sd == 0 ? 0.0 : std::sqrt(sd) / std::sqrt(sa),
                                 std::clamp(sab / (std::sqrt(sa) * std::sqrt(sb)), -1.0, 1.0), mx};
  };
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-4, 4), eps(-1e-3f, 1e-3f);
  for (size_t n : {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 33, 768, 1001}) {
    INFO("width " << n);
    std::vector<float> a(n), b(n);
    for (size_t i = 0; i < n; ++i) {
      a[i] = u(rng) * std::exp2(static_cast<float>(static_cast<int>(i % 9) - 4));
      b[i] = a[i] + eps(rng);
    }
    b[n / 2] = a[n / 2];  // a zero difference too
    const auto d = ds::diff::row_drift(a, b);
    const auto want = reference(a, b);
    CHECK(d.rel_l2 == want[0]);
    CHECK(d.cos == want[1]);
    CHECK(d.max_abs == want[2]);
  }
}

TEST_CASE("row metrics on small arrays", "[diff]") {
  const std::vector<float> a = {3, 4}, b = {3, 4.5f};
  const auto d = ds::diff::row_drift(a, b);
  CHECK_THAT(d.rel_l2, WithinRel(0.5 / 5.0, 1e-15));
  CHECK_THAT(d.cos, WithinRel((9 + 18) / (5.0 * std::sqrt(9 + 20.25)), 1e-15));
  CHECK(d.max_abs == 0.5);
  CHECK_FALSE(d.identical);
  // ‖a‖ = 0: 0 when b is 0 too, else +inf; cosine 1 for two zero vectors, 0 for one.
  const std::vector<float> z = {0, 0};
  CHECK(ds::diff::row_drift(z, z).rel_l2 == 0);
  CHECK(ds::diff::row_drift(z, z).cos == 1);
  CHECK(std::isinf(ds::diff::row_drift(z, b).rel_l2));
  CHECK(ds::diff::row_drift(z, b).cos == 0);
  // NaN on either side makes every number NaN.
  const std::vector<float> n = {3, NAN};
  CHECK(ds::diff::row_drift(a, n).non_finite);
  CHECK(std::isnan(ds::diff::row_drift(n, a).rel_l2));

  const std::vector<int32_t> ta = {1, 2, 3, 4, 5, 9}, tb = {1, 2, 3, 6, 7, 4};
  CHECK_THAT(ds::diff::jaccard(ta, tb, 5), WithinRel(3.0 / 7.0, 1e-15));
  CHECK(ds::diff::jaccard(ta, ta, 5) == 1.0);
  CHECK(ds::diff::jaccard(ta, tb, 6) == 4.0 / 8.0);  // {1,2,3,4} of {1,2,3,4,5,6,7,9}

  // A NaN logit makes the KL NaN (never clamped to 0): NaN always fails.
  const std::vector<int32_t> ids = {0, 1};
  const std::vector<float> good = {1, 0}, bad = {NAN, 0}, full_good = {1, 0, -1},
                           full_bad = {NAN, 0, -1};
  bool exact = false;
  const ds::diff::LogitsRow rg{ids, good, 1.5, full_good}, rn{ids, bad, 1.5, full_bad};
  CHECK(std::isnan(ds::diff::kl_divergence(rg, rn, exact)));
  CHECK(exact);
  const ds::diff::LogitsRow tg{ids, good, 1.5, {}}, tn{ids, bad, 1.5, {}};
  CHECK(std::isnan(ds::diff::kl_divergence(tn, tg, exact)));
  CHECK_FALSE(exact);

  std::vector<double> v = {3, NAN, 1, 2};
  CHECK(ds::diff::median_finite(v) == 2);
  std::vector<double> e = {4, 1, 3, 2};
  CHECK(ds::diff::median_finite(e) == 2.5);
}

// KL(A‖B) in long double, each lse from the row's own maximum (independent of kl_divergence's
// order of operations and of its exponentials).
long double ref_kl_long(const std::vector<float>& a, const std::vector<float>& b) {
  auto lse = [](const std::vector<float>& r) {
    long double m = -INFINITY, s = 0;
    for (float x : r) m = std::max<long double>(m, x);
    for (float x : r) s += std::exp(static_cast<long double>(x) - m);
    return m + std::log(s);
  };
  const long double la = lse(a), lb = lse(b);
  long double kl = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const long double pa = std::exp(static_cast<long double>(a[i]) - la);
    if (pa > 0) kl += pa * ((a[i] - la) - (b[i] - lb));
  }
  return kl;
}

TEST_CASE("exact KL over a full vocabulary matches a long double reference and keeps edge values",
          "[diff]") {
  // 8,195 ids: the exponentials go four at a time where the CPU has AVX2, the last 3 one by one.
  std::mt19937 rng(11);
  std::normal_distribution<float> g(0, 3);
  const size_t v = 8195;
  std::vector<float> a(v), b(v);
  for (size_t i = 0; i < v; ++i) {
    a[i] = g(rng);
    b[i] = a[i] + 0.05f * g(rng);
  }
  a[17] = -INFINITY;          // no mass on A's side: no term
  a[40] = b[40] = -800.0f;    // exp underflows to 0
  a[8194] = b[8194] = 20.0f;  // the largest logit sits in the scalar tail
  auto kl = [](const std::vector<float>& x, const std::vector<float>& y) {
    const std::vector<int32_t> ids = {0};
    const std::vector<float> top = {x[0]};
    bool exact = false;
    const double k = ds::diff::kl_divergence({ids, top, 0, x}, {ids, top, 0, y}, exact);
    CHECK(exact);
    return k;
  };
  const double got = kl(a, b);
  CHECK(got > 0);
  CHECK_THAT(got, WithinRel(static_cast<double>(ref_kl_long(a, b)), 1e-9));  // cancellation: ~6e-11
  CHECK(kl(a, a) == 0.0);

  auto with = [](std::vector<float> r, size_t i, float x) {
    r[i] = x;
    return r;
  };
  CHECK(std::isnan(kl(a, with(b, 1000, NAN))));  // NaN in the vector part: NaN
  CHECK(std::isnan(kl(with(a, 2001, NAN), b)));
  CHECK(std::isnan(kl(a, with(b, 3000, INFINITY))));   // +inf: lse is inf, inf - inf is NaN
  CHECK(kl(a, with(b, 8194, -INFINITY)) == INFINITY);  // A's largest mass impossible under B
}

TEST_CASE("approximate KL is a lower bound of the exact KL", "[diff]") {
  std::mt19937 rng(7);
  std::normal_distribution<float> g(0, 2);
  for (int trial = 0; trial < 200; ++trial) {
    const int v = 50, k = 1 + trial % 10;
    std::vector<float> fa(v), fb(v);
    for (int i = 0; i < v; ++i) {
      fa[i] = g(rng);
      fb[i] = fa[i] + 0.3f * g(rng);
    }
    std::vector<double> da(fa.begin(), fa.end()), db(fb.begin(), fb.end());
    const auto ia = top_ids(da, k), ib = top_ids(db, k);
    std::vector<int32_t> ida(ia.begin(), ia.end()), idb(ib.begin(), ib.end());
    std::vector<float> la, lb;
    for (int i : ia) la.push_back(fa[i]);
    for (int i : ib) lb.push_back(fb[i]);
    const double lsa = lse_of(da), lsb = lse_of(db);
    ds::diff::LogitsRow ra{ida, la, lsa, {}}, rb{idb, lb, lsb, {}};
    ds::diff::LogitsRow fra{ida, la, lsa, fa}, frb{idb, lb, lsb, fb};
    bool exact = true;
    const double approx = ds::diff::kl_divergence(ra, rb, exact);
    CHECK_FALSE(exact);
    const double full = ds::diff::kl_divergence(fra, frb, exact);
    CHECK(exact);
    CHECK_THAT(full, WithinRel(ref_kl_exact(da, db), 1e-9));
    CHECK(approx <= full + 1e-12);
  }
}

TEST_CASE("hand-built traces: flip, logits metrics and drift match independent values", "[diff]") {
  ds::test::TempDir dir;
  for (bool full : {false, true}) {
    INFO("full logits " << full);
    const auto pa = dir.path() / (full ? "fa.h5" : "a.h5"),
               pb = dir.path() / (full ? "fb.h5" : "b.h5");
    ds::test::write_trace(pa, spec(false, full));
    ds::test::write_trace(pb, spec(true, full));
    const auto A = ds::trace::TraceReader::open(pa), B = ds::trace::TraceReader::open(pb);
    ds::diff::DiffOptions opt;
    opt.block_bytes = 3 * W * 4;  // three rows per block: blocks split the compared range
    const auto rep = ds::diff::diff_traces(A, B, opt);
    CHECK(ds::diff::check_consistency(rep).empty());
    REQUIRE(rep.sequences.size() == 2);
    CHECK(rep.model_equal);
    CHECK(rep.config_diff.empty());
    const auto& s = rep.sequences[0];
    CHECK(s.prompt_equal);
    CHECK(s.compared == kCompared);

    // First flip: step 2, position 5, chosen by row 4; each side's top-5 from its own row.
    REQUIRE(s.first_flip);
    CHECK(s.first_flip->step == 2);
    CHECK(s.first_flip->position == 5);
    CHECK(s.first_flip->token_a == 4);
    CHECK(s.first_flip->token_b == 0);
    CHECK(s.verdict == ds::diff::Verdict::flip);
    const auto la = logits_a(), lb = logits_b();
    for (int side = 0; side < 2; ++side) {
      const auto& row = side == 0 ? la[4] : lb[4];
      const auto& got = side == 0 ? s.first_flip->top5_a : s.first_flip->top5_b;
      const auto ids = top_ids(row, 5);
      const double lse = stored(lse_of(row));
      REQUIRE(got.size() == 5);
      for (int k = 0; k < 5; ++k) {
        CHECK(got[k].id == ids[k]);
        CHECK_THAT(got[k].prob, WithinRel(std::exp(row[ids[k]] - lse), 1e-12));
      }
      const double m = std::exp(row[ids[0]] - lse) - std::exp(row[ids[1]] - lse);
      CHECK_THAT(side == 0 ? s.first_flip->margin_a : s.first_flip->margin_b, WithinRel(m, 1e-12));
      CHECK_THAT(side == 0 ? s.first_flip->margin_logit_a : s.first_flip->margin_logit_b,
                 WithinRel(row[ids[0]] - row[ids[1]], 1e-12));
    }

    // Logits over rows 0..4.
    double sum_j = 0, min_j = 1, sum_sq = 0, sum_kl = 0, max_kl = 0;
    int bounded = 0, at_risk = 0;
    for (int r = 0; r < kCompared; ++r) {
      const double lsa = stored(lse_of(la[r])), lsb = stored(lse_of(lb[r]));
      const auto t5a = top_ids(la[r], 5), t5b = top_ids(lb[r], 5), tkb = top_ids(lb[r], K);
      const double j = ref_jaccard(t5a, t5b);
      sum_j += j;
      min_j = std::min(min_j, j);
      const int y = t5a[0];
      double lpb;
      if (full || contains(tkb, y)) {
        lpb = lb[r][y] - lsb;
      } else {
        lpb = lb[r][tkb.back()] - lsb;  // upper bound: B's K-th logit
        ++bounded;
      }
      sum_sq += std::pow(lpb - (la[r][y] - lsa), 2);
      const double kl = full ? ref_kl_exact(la[r], lb[r]) : ref_kl_topk(la[r], lb[r], K);
      CHECK_THAT(s.positions[r].kl, WithinAbs(kl, 1e-9));
      sum_kl += kl;
      max_kl = std::max(max_kl, kl);
      CHECK(s.positions[r].jaccard == j);
      // At risk (choice rows 2..4): A's top-1/top-2 logit margin below twice the largest
      // |Δ log p| over A's top-5 ids known on B.
      double drift = 0;
      for (int i : t5a) {
        if (full || contains(tkb, i))
          drift = std::max(drift, std::abs((lb[r][i] - lsb) - (la[r][i] - lsa)));
      }
      CHECK_THAT(s.positions[r].logit_drift, WithinAbs(drift, 1e-12));
      const bool risk = r >= 2 && la[r][t5a[0]] - la[r][t5a[1]] < 2 * drift;
      CHECK(s.positions[r].at_risk == risk);
      at_risk += risk;
    }
    const auto& L = s.logits;
    CHECK(L.positions == kCompared);
    CHECK(L.kl_exact == full);
    CHECK_THAT(L.top5_jaccard_mean, WithinRel(sum_j / kCompared, 1e-12));
    CHECK(L.top5_jaccard_min == min_j);
    CHECK(min_j < 1);  // the test exercises differing top-5 sets
    CHECK_THAT(L.logprob_rmse, WithinRel(std::sqrt(sum_sq / kCompared), 1e-9));
    CHECK(L.logprob_bounded == bounded);
    if (!full) CHECK(bounded == 1);  // row 3: A's top-1 is B's last
    CHECK_THAT(L.kl_mean, WithinAbs(sum_kl / kCompared, 1e-9));
    CHECK_THAT(L.kl_max, WithinAbs(max_kl, 1e-9));
    CHECK(L.choice_rows == 3);
    CHECK(L.at_risk == at_risk);

    // Drift: one row per common site (L0/attn_out is only in A), values from the arrays.
    CHECK(s.sites_only_a == std::vector<std::string>{"L0/attn_out"});
    REQUIRE(s.drift.size() == kSitesB.size());
    const auto ha = hidden(false), hb = hidden(true);
    std::map<std::string, double> medians;
    for (size_t k = 0; k < kSitesB.size(); ++k) {
      const auto& d = s.drift[k];
      CHECK(d.site == kSitesB[k]);
      std::vector<double> rel, cos, mabs;
      for (int r = 0; r < kCompared; ++r) {
        const auto x = ref_drift(ha.at(d.site)[r], hb.at(d.site)[r]);
        rel.push_back(x.rel);
        cos.push_back(x.cos);
        mabs.push_back(x.max_abs);
      }
      CHECK_THAT(d.rel_l2_median, WithinRel(ref_median(rel), 1e-12));
      CHECK_THAT(d.rel_l2_max, WithinRel(*std::max_element(rel.begin(), rel.end()), 1e-12));
      CHECK_THAT(d.cos_min, WithinRel(*std::min_element(cos.begin(), cos.end()), 1e-12));
      CHECK_THAT(d.max_abs, WithinRel(*std::max_element(mabs.begin(), mabs.end()), 1e-12));
      CHECK(d.noise_floor == std::ldexp(1.0, -23));
      medians[d.site] = ref_median(rel);
    }
    CHECK(s.drift[0].rel_l2_max == 0);  // embed
    // Onset: the first site in forward order above the floor (L0/out), at its first such row.
    REQUIRE(s.onset);
    CHECK(s.onset->site == "L0/out");
    CHECK(s.onset->position == 2);
    // Layer view: L0/out and L1/out, growth = ratio of medians.
    REQUIRE(s.layers.size() == 2);
    CHECK(s.layers[0].site == "L0/out");
    CHECK(s.layers[1].site == "L1/out");
    CHECK_FALSE(s.layers[0].growth);
    REQUIRE(s.layers[1].growth);
    CHECK_THAT(*s.layers[1].growth, WithinRel(medians["L1/out"] / medians["L0/out"], 1e-12));
    CHECK(s.drift.back().layer == 2);  // final_norm sits after the last layer

    // Sequence 1 is the same on both sides; the summary counts one divergence in two.
    const auto& same = rep.sequences[1];
    CHECK(same.verdict == ds::diff::Verdict::identical);
    CHECK_FALSE(same.first_flip);
    CHECK_FALSE(same.onset);
    CHECK(same.logits.top5_jaccard_min == 1);
    CHECK(same.logits.kl_max == 0);
    CHECK(rep.summary.sequences == 2);
    CHECK(rep.summary.diverged == 1);
    CHECK(rep.summary.div_percent == 50.0);
  }
}

TEST_CASE("storage dtype sets the noise floor", "[diff]") {
  ds::test::TempDir dir;
  auto a = spec(false, false), b = spec(true, false);
  b.hidden_dtype = ds::Storage::bf16;
  ds::test::write_trace(dir.path() / "a.h5", a);
  ds::test::write_trace(dir.path() / "b.h5", b);
  const auto rep = ds::diff::diff_traces(ds::trace::TraceReader::open(dir.path() / "a.h5"),
                                         ds::trace::TraceReader::open(dir.path() / "b.h5"));
  for (const auto& d : rep.sequences[0].drift) {
    CHECK(d.dtype == "bf16");
    CHECK(d.noise_floor == std::ldexp(1.0, -7));
  }
}
