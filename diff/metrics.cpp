// The diff metrics on plain arrays (formulas in docs/metrics.md).
#include "diff/metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "diff/tolerances.h"

namespace ds::diff {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// The four sums and the largest difference of row_drift, each sum kept in four lanes (element i
// goes to lane i mod 4, added in order of i; the lanes are added at the end, (l0 + l1) + (l2 +
// l3)), so the four lanes fit one AVX2 register. Products of two float32 values in double are exact
// and cannot overflow, so a sum is non-finite exactly when an element was.
struct Sums {
  double aa, bb, dd, ab, mx;
};

struct Lanes {
  double aa[4] = {0, 0, 0, 0}, bb[4] = {0, 0, 0, 0}, dd[4] = {0, 0, 0, 0}, ab[4] = {0, 0, 0, 0},
         mx[4] = {0, 0, 0, 0};
};

// Elements [i, n) into the lanes, one at a time (the whole row without AVX2, else its tail).
void add_scalar(const float* a, const float* b, size_t i, size_t n, Lanes& l) {
  for (; i < n; ++i) {
    const size_t j = i % 4;
    const double x = a[i], y = b[i], e = x - y;
    l.aa[j] += x * x;
    l.bb[j] += y * y;
    l.dd[j] += e * e;
    l.ab[j] += x * y;
    const double ae = e < 0 ? -e : e;
    l.mx[j] =
        l.mx[j] < ae ? ae : l.mx[j];  // NaN never reaches a result: non-finite rows return early
  }
}

#if defined(__x86_64__)
// The same operations on the four lanes at once: a multiply then an add (no FMA, which would round
// once instead of twice), |e| by clearing the sign, the max keeping the old value on a tie. The
// results are the scalar loop's bits.
__attribute__((target("avx2"))) size_t add_avx2(const float* a, const float* b, size_t n,
                                                Lanes& l) {
  __m256d aa = _mm256_setzero_pd(), bb = aa, dd = aa, ab = aa, mx = aa;
  const __m256d sign = _mm256_set1_pd(-0.0);
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const __m256d x = _mm256_cvtps_pd(_mm_loadu_ps(a + i)),
                  y = _mm256_cvtps_pd(_mm_loadu_ps(b + i));
    const __m256d e = _mm256_sub_pd(x, y);
    aa = _mm256_add_pd(aa, _mm256_mul_pd(x, x));
    bb = _mm256_add_pd(bb, _mm256_mul_pd(y, y));
    dd = _mm256_add_pd(dd, _mm256_mul_pd(e, e));
    ab = _mm256_add_pd(ab, _mm256_mul_pd(x, y));
    mx = _mm256_max_pd(_mm256_andnot_pd(sign, e), mx);  // |e| > mx ? |e| : mx
  }
  _mm256_storeu_pd(l.aa, aa);
  _mm256_storeu_pd(l.bb, bb);
  _mm256_storeu_pd(l.dd, dd);
  _mm256_storeu_pd(l.ab, ab);
  _mm256_storeu_pd(l.mx, mx);
  return i;
}
#endif

// The exact KL's passes over a full-logits row (docs/metrics.md, "Exact KL, how it is computed").
// Every sum is kept in four lanes, element i in lane i mod 4 in order of i, the lanes added as
// (l0 + l1) + (l2 + l3), as in row_drift; the AVX2 code and the scalar code below give the same
// sums, except for the exponentials themselves.
double lane_total(const double l[4]) {
  return (l[0] + l[1]) + (l[2] + l[3]);
}

// The largest value (NaN skipped, as std::max(m, x) does; -inf for an empty or all-NaN row).
float row_max_scalar(const float* x, size_t i, size_t n, float m) {
  for (; i < n; ++i) m = std::max(m, x[i]);
  return m;
}

// out[i] = exp(double(x[i]) - shift), and their sum into the lanes.
void exp_sum_scalar(const float* x, double shift, double* out, size_t i, size_t n, double l[4]) {
  for (; i < n; ++i) {
    out[i] = std::exp(static_cast<double>(x[i]) - shift);
    l[i % 4] += out[i];
  }
}

// Σ e_i ((a_i - la) - (b_i - lb)) over the ids with e_i > 0, into the lanes.
void kl_sum_scalar(const double* e, const float* a, const float* b, double la, double lb, size_t i,
                   size_t n, double l[4]) {
  for (; i < n; ++i) {
    if (e[i] > 0) l[i % 4] += e[i] * ((a[i] - la) - (b[i] - lb));
  }
}

#if defined(__x86_64__)
// glibc's libmvec: exp of four doubles with AVX2 (error at most 1 ulp, glibc's manual, "Errors in
// Math Functions": exp_vlen4_avx2). A scalar exp took 70% of an exact KL.
extern "C" __attribute__((target("avx2"))) __m256d _ZGVdN4v_exp(__m256d x);

__attribute__((target("avx2"))) size_t row_max_avx2(const float* x, size_t n, float& m) {
  __m256 v = _mm256_set1_ps(m);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) v = _mm256_max_ps(_mm256_loadu_ps(x + i), v);  // NaN keeps v
  float l[8];
  _mm256_storeu_ps(l, v);
  for (float y : l) m = std::max(m, y);
  return i;
}

__attribute__((target("avx2"))) size_t exp_sum_avx2(const float* x, double shift, double* out,
                                                    size_t n, double l[4]) {
  const __m256d s = _mm256_set1_pd(shift);
  __m256d acc = _mm256_setzero_pd();
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const __m256d e = _ZGVdN4v_exp(_mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + i)), s));
    _mm256_storeu_pd(out + i, e);
    acc = _mm256_add_pd(acc, e);
  }
  _mm256_storeu_pd(l, acc);
  return i;
}

// A multiply then an add (no FMA); a term with e_i = 0 adds +0 where the scalar code skips it.
__attribute__((target("avx2"))) size_t kl_sum_avx2(const double* e, const float* a, const float* b,
                                                   double la, double lb, size_t n, double l[4]) {
  const __m256d vla = _mm256_set1_pd(la), vlb = _mm256_set1_pd(lb), zero = _mm256_setzero_pd();
  __m256d acc = zero;
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const __m256d ei = _mm256_loadu_pd(e + i);
    const __m256d da = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(a + i)), vla);
    const __m256d db = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(b + i)), vlb);
    const __m256d term = _mm256_mul_pd(ei, _mm256_sub_pd(da, db));
    acc = _mm256_add_pd(acc, _mm256_and_pd(_mm256_cmp_pd(ei, zero, _CMP_GT_OQ), term));
  }
  _mm256_storeu_pd(l, acc);
  return i;
}

bool has_avx2() {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  return avx2;
}
#else
bool has_avx2() {
  return false;
}
#endif

float row_max(const float* x, size_t n) {
  float m = -std::numeric_limits<float>::infinity();
  size_t i = 0;
#if defined(__x86_64__)
  if (has_avx2()) i = row_max_avx2(x, n, m);
#endif
  return row_max_scalar(x, i, n, m);
}

double exp_sum(const float* x, double shift, double* out, size_t n) {
  double l[4] = {0, 0, 0, 0};
  size_t i = 0;
#if defined(__x86_64__)
  if (has_avx2()) i = exp_sum_avx2(x, shift, out, n, l);
#endif
  exp_sum_scalar(x, shift, out, i, n, l);
  return lane_total(l);
}

double kl_sum(const double* e, const float* a, const float* b, double la, double lb, size_t n) {
  double l[4] = {0, 0, 0, 0};
  size_t i = 0;
#if defined(__x86_64__)
  if (has_avx2()) i = kl_sum_avx2(e, a, b, la, lb, n, l);
#endif
  kl_sum_scalar(e, a, b, la, lb, i, n, l);
  return lane_total(l);
}

Sums row_sums(const float* a, const float* b, size_t n) {
  Lanes l;
  size_t i = 0;
#if defined(__x86_64__)
  if (has_avx2()) i = add_avx2(a, b, n, l);
#endif
  add_scalar(a, b, i, n, l);
  return {lane_total(l.aa), lane_total(l.bb), lane_total(l.dd), lane_total(l.ab),
          std::max(std::max(l.mx[0], l.mx[1]), std::max(l.mx[2], l.mx[3]))};
}

}  // namespace

RowDrift row_drift(std::span<const float> a, std::span<const float> b) {
  RowDrift d;
  const size_t n = std::min(a.size(), b.size());
  const Sums s = row_sums(a.data(), b.data(), n);
  const double aa = s.aa, bb = s.bb, dd = s.dd, ab = s.ab, mx = s.mx;
  // An Inf or NaN on either side makes aa or bb non-finite (x * x of a finite float32 is at most
  // about 1.2e77); otherwise the rows are identical exactly when no difference is non-zero (-0
  // and +0 compare equal, as a_i != b_i says).
  d.non_finite = !std::isfinite(aa) || !std::isfinite(bb);
  d.identical = !d.non_finite && dd == 0;
  if (d.non_finite) {
    d.rel_l2 = d.cos = d.max_abs = kNaN;
    return d;
  }
  d.max_abs = mx;
  if (aa == 0) {
    d.rel_l2 = dd == 0 ? 0 : kInf;
  } else {
    d.rel_l2 = std::sqrt(dd) / std::sqrt(aa);
  }
  if (d.identical || (aa == 0 && bb == 0)) {
    d.cos = 1;  // exactly: the formula below rounds to 1 - 2^-52 for some equal vectors
  } else if (aa == 0 || bb == 0) {
    d.cos = 0;
  } else {
    d.cos = std::clamp(ab / (std::sqrt(aa) * std::sqrt(bb)), -1.0, 1.0);
  }
  return d;
}

bool LogitsRow::logprob(int32_t id, double& out) const {
  if (!full.empty()) {
    if (id < 0 || static_cast<size_t>(id) >= full.size()) return false;
    out = static_cast<double>(full[static_cast<size_t>(id)]) - lse;
    return true;
  }
  for (size_t k = 0; k < ids.size(); ++k) {
    if (ids[k] == id) {
      out = static_cast<double>(logits[k]) - lse;
      return true;
    }
  }
  return false;
}

double jaccard(std::span<const int32_t> a, std::span<const int32_t> b, int n) {
  const size_t na = std::min(a.size(), static_cast<size_t>(std::max(0, n)));
  const size_t nb = std::min(b.size(), static_cast<size_t>(std::max(0, n)));
  std::vector<int32_t> sa(a.begin(), a.begin() + na), sb(b.begin(), b.begin() + nb);
  std::sort(sa.begin(), sa.end());
  sa.erase(std::unique(sa.begin(), sa.end()), sa.end());
  std::sort(sb.begin(), sb.end());
  sb.erase(std::unique(sb.begin(), sb.end()), sb.end());
  std::vector<int32_t> inter;
  std::set_intersection(sa.begin(), sa.end(), sb.begin(), sb.end(), std::back_inserter(inter));
  const size_t uni = sa.size() + sb.size() - inter.size();
  return uni == 0 ? 1.0 : static_cast<double>(inter.size()) / static_cast<double>(uni);
}

Margin margin(const LogitsRow& r) {
  if (r.logits.size() < 2) return {kNaN, kNaN};
  const double l1 = r.logits[0], l2 = r.logits[1];
  return {l1 - l2, std::exp(l1 - r.lse) - std::exp(l2 - r.lse)};
}

double margin_change(const LogitsRow& a, const LogitsRow& b) {
  if (a.logits.size() < 2 || b.logits.size() < 2) return kNaN;
  auto logit_b = [&](int32_t id) {
    for (size_t k = 0; k < b.ids.size(); ++k) {
      if (b.ids[k] == id) return static_cast<double>(b.logits[k]);
    }
    if (id >= 0 && static_cast<size_t>(id) < b.full.size()) {
      return static_cast<double>(b.full[static_cast<size_t>(id)]);
    }
    return static_cast<double>(b.logits.back());  // ranks below B's K-th
  };
  const double ma = static_cast<double>(a.logits[0]) - static_cast<double>(a.logits[1]);
  return (logit_b(a.ids[0]) - logit_b(a.ids[1])) - ma;
}

double top1_logprob_delta(const LogitsRow& a, const LogitsRow& b, bool& bounded) {
  bounded = false;
  if (a.ids.empty()) return kNaN;
  const int32_t y = a.ids[0];
  const double lpa = static_cast<double>(a.logits[0]) - a.lse;
  double lpb = 0;
  if (!b.logprob(y, lpb)) {
    if (b.logits.empty()) return kNaN;
    lpb = static_cast<double>(b.logits.back()) - b.lse;  // y ranks below B's K-th: an upper bound
    bounded = true;
  }
  return lpb - lpa;
}

double kl_divergence(const LogitsRow& a, const LogitsRow& b, bool& exact) {
  exact = !a.full.empty() && !b.full.empty() && a.full.size() == b.full.size();
  if (exact) {
    // Exact: Σ_i p_A(i) (log p_A(i) − log p_B(i)) over the vocabulary, each lse recomputed from
    // the full row in double (an error ε in lse_B would shift the KL by exactly ε, and the stored
    // float32 lse carries ~1e-7·|lse|). p_A(i) = e_i / S_A reuses the exponentials of lse_A.
    const size_t n = a.full.size();
    static thread_local std::vector<double> e, eb;
    e.resize(n);
    eb.resize(n);
    const double ma = row_max(a.full.data(), n), mb = row_max(b.full.data(), n);
    const double sa = exp_sum(a.full.data(), ma, e.data(), n);
    const double sb = exp_sum(b.full.data(), mb, eb.data(), n);
    const double la = ma + std::log(sa), lb = mb + std::log(sb);
    double kl = kl_sum(e.data(), a.full.data(), b.full.data(), la, lb, n);
    kl /= sa;
    return std::isnan(kl) ? kl : std::max(0.0, kl);
  }
  // Approximate: buckets = ids of T_A ∪ T_B known on both sides, plus one lumped rest bucket.
  std::vector<int32_t> ids(a.ids.begin(), a.ids.end());
  ids.insert(ids.end(), b.ids.begin(), b.ids.end());
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  double kl = 0, pa_known = 0, pb_known = 0;
  for (int32_t id : ids) {
    double lpa = 0, lpb = 0;
    if (!a.logprob(id, lpa) || !b.logprob(id, lpb)) continue;
    if (std::isnan(lpa) || std::isnan(lpb)) return kNaN;
    const double p = std::exp(lpa);
    pa_known += p;
    pb_known += std::exp(lpb);
    if (p > 0) kl += p * (lpa - lpb);
  }
  const double ra = 1.0 - pa_known, rb = 1.0 - pb_known;
  if (ra > kRestMassFloor) kl += ra * std::log(ra / std::max(rb, kRestMassFloor));
  return std::isnan(kl) ? kl : std::max(0.0, kl);
}

double logit_drift(const LogitsRow& a, const LogitsRow& b, int n) {
  double d = 0;
  const size_t m = std::min(a.ids.size(), static_cast<size_t>(std::max(0, n)));
  for (size_t k = 0; k < m; ++k) {
    double lpa = 0, lpb = 0;
    if (!a.logprob(a.ids[k], lpa) || !b.logprob(a.ids[k], lpb)) continue;
    const double e = std::abs(lpb - lpa);
    if (std::isnan(e)) return kNaN;
    d = std::max(d, e);
  }
  return d;
}

double median_finite(std::vector<double>& v) {
  auto end = std::remove_if(v.begin(), v.end(), [](double x) { return std::isnan(x); });
  const size_t n = static_cast<size_t>(end - v.begin());
  if (n == 0) return kNaN;
  auto mid = v.begin() + static_cast<std::ptrdiff_t>(n / 2);
  std::nth_element(v.begin(), mid, end);
  double m = *mid;
  if (n % 2 == 0) {
    const double lo = *std::max_element(v.begin(), mid);
    m = 0.5 * (lo + m);
  }
  return m;
}

}  // namespace ds::diff
