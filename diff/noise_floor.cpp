// The noise floor's statistics (noise_floor.h; formulas and assumptions in docs/metrics.md,
// "Noise floors").
#include "diff/noise_floor.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "common/error.h"
#include "common/number_format.h"
#include "diff/identity.h"
#include "diff/sequence_diff.h"

namespace ds::diff {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double median(std::vector<double> v) {
  if (v.empty()) return kNaN;
  const size_t m = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(m), v.end());
  const double hi = v[m];
  if (v.size() % 2 == 1) return hi;
  return (*std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(m)) + hi) / 2;
}

// The unit roundoff u = 2^-p of a storage's p-bit significand.
// `storage` is a trace's name of it (number_format.h trace_name); float32 when unknown.
double unit_roundoff(const std::string& storage) {
  const std::optional<NumberFormat> f =
      find_number_format(storage, &NumberFormatTraits::trace_name);
  const int p = f && is_float(*f) ? traits(*f).significand_bits : 24;
  return std::ldexp(1.0, -p);
}

// ---- the measures of one position bucket (docs/metrics.md, "Noise floors") ------------------

// A hidden site's four, each a number per member (the N replays and B):
//   rel  ln(1 + mean relative L2 / u)      a drift's size, on a log scale
//   frac elements that differ / elements   how much of the tensor moved
//   ulps log2(1 + the largest |b − a| in ulps)
//   bias (elements up − elements down) / elements, two-sided: a legal reordering has no
//        preferred direction; a wrong rounding mode or an added epsilon has one
// The logits' three: ln(1 + mean |Δm| / 1e-6), rows whose margin changed / rows, rows whose top-1
// differs / rows.
constexpr int kHiddenMeasures = 4, kMarginMeasures = 3;
constexpr const char* kHiddenNames[kHiddenMeasures] = {"relative L2", "elements that differ",
                                                       "largest ulps", "direction of ulps"};
constexpr const char* kMarginNames[kMarginMeasures] = {"margin change", "margins that change",
                                                       "top-1 changes"};

struct Measures {
  bool present = false;  // the bucket has rows in this member
  bool nan = false;      // a NaN or Inf in it
  double v[4] = {0, 0, 0, 0};
};

Measures hidden_measures(const trace::FloorBucket& k, double u) {
  Measures m;
  m.present = k.rows > 0 || k.nan > 0;
  m.nan = k.nan > 0;
  if (k.rows == 0 || k.elements == 0) return m;
  const double e = static_cast<double>(k.elements);
  m.v[0] = std::log1p(k.rel_l2 / static_cast<double>(k.rows) / u);
  m.v[1] = static_cast<double>(k.differ) / e;
  m.v[2] = std::log2(1 + k.max_ulps);
  m.v[3] = static_cast<double>(2 * k.up - k.differ) / e;
  return m;
}

Measures margin_measures(const trace::FloorMargins& k) {
  Measures m;
  m.present = k.rows > 0;
  if (!m.present) return m;
  const double r = static_cast<double>(k.rows);
  m.v[0] = std::log1p(k.abs_change / r / 1e-6);
  m.v[1] = static_cast<double>(k.changed) / r;
  m.v[2] = static_cast<double>(k.top1) / r;
  return m;
}

trace::FloorBucket to_floor(const BucketSums& b) {
  return {b.rows, b.elements, b.differ, b.up, b.nan, b.rel_l2, b.max_ulps};
}
trace::FloorMargins to_floor(const MarginSums& m) {
  return {m.rows, m.changed, m.top1, m.abs_change};
}

// Robust z-scores of one component over the N + 1 members (B last): (v − median) / scale, scale
// = max(1.4826 · MAD, min_scale), |v − median| when two-sided. A member that alone differs from
// all the others, which are all equal, is +Inf: N + 1 − 1 members that agree exactly make any
// departure as extreme as can be (the rule is the same for every member, so the members stay
// exchangeable).
std::vector<double> robust_z(const std::vector<double>& v, bool two_sided, double min_scale) {
  const double med = median(v);
  std::vector<double> dev(v.size());
  for (size_t k = 0; k < v.size(); ++k) dev[k] = std::abs(v[k] - med);
  const double scale = std::max(1.4826 * median(dev), min_scale);
  std::vector<double> z(v.size());
  for (size_t k = 0; k < v.size(); ++k) z[k] = two_sided ? dev[k] / scale : (v[k] - med) / scale;
  std::map<double, int> count;
  for (double x : v) ++count[x];
  if (count.size() == 2 && v.size() > 2) {
    for (size_t k = 0; k < v.size(); ++k) {
      if (count[v[k]] == 1 && (two_sided || v[k] > med)) z[k] = kInf;
    }
  }
  return z;
}

// The site statistic of every member: the max over components of the robust z; which component
// gave B's.
struct SiteStat {
  std::vector<double> of;  // per member, B last
  std::string driver;
};

// Folds one component (values per member, or NaN members: +Inf) into the statistic.
void fold(SiteStat& s, const std::vector<double>& z, const std::string& what) {
  const size_t b = z.size() - 1;
  if (s.of.empty()) s.of.assign(z.size(), -kInf);
  if (z[b] > s.of[b]) s.driver = what;
  for (size_t k = 0; k < z.size(); ++k) s.of[k] = std::max(s.of[k], z[k]);
}

std::string rows_text(int bucket) {
  const int64_t first = bucket_first_row(bucket), last = bucket_first_row(bucket + 1) - 1;
  return first == last ? fmt::format("row {}", first) : fmt::format("rows {}-{}", first, last);
}

// B's sums of one hidden site over the floor's sequences, by bucket (empty: the site is not in B).
std::vector<trace::FloorBucket> observed_site(const std::vector<const NoiseSums*>& seqs,
                                              const std::string& site, int buckets, bool& found) {
  std::vector<BucketSums> sum(static_cast<size_t>(buckets));
  found = false;
  for (const NoiseSums* n : seqs) {
    for (const SiteSums& s : n->sites) {
      if (s.site != site) continue;
      found = true;
      for (size_t b = 0; b < s.buckets.size() && b < sum.size(); ++b)
        add_bucket(sum[b], s.buckets[b]);
    }
  }
  std::vector<trace::FloorBucket> out;
  for (const auto& b : sum) out.push_back(to_floor(b));
  return out;
}

// The statistic of one hidden site over its buckets and measures.
SiteStat hidden_stat(const trace::FloorFile& f, size_t site,
                     const std::vector<trace::FloorBucket>& obs) {
  const size_t N = f.seeds.size();
  const double u = unit_roundoff(f.storages[site]);
  SiteStat s;
  for (size_t b = 0; b < static_cast<size_t>(f.buckets); ++b) {
    std::vector<Measures> m(N + 1);
    for (size_t i = 0; i < N; ++i) m[i] = hidden_measures(f.at(site, i, b), u);
    m[N] = hidden_measures(obs[b], u);
    if (!m[N].present) continue;
    const double rows = static_cast<double>(std::max<int64_t>(1, obs[b].rows));
    const double elems = static_cast<double>(std::max<int64_t>(1, obs[b].elements));
    const double width = elems / rows;
    // resolution floors: one element one ulp off in one row of the bucket
    const double min_scale[kHiddenMeasures] = {1 / (std::sqrt(width) * rows), 1 / elems, 0.25,
                                               1 / elems};
    for (int q = 0; q < kHiddenMeasures; ++q) {
      std::vector<double> v(N + 1);
      for (size_t k = 0; k <= N; ++k) v[k] = m[k].present ? m[k].v[q] : 0;
      std::vector<double> z = robust_z(v, q == 3, min_scale[q]);
      for (size_t k = 0; k <= N; ++k) {
        if (m[k].nan) z[k] = kInf;  // NaN always fails
        if (!m[k].present) z[k] = -kInf;
      }
      fold(s, z, fmt::format("{}, {}", m[N].nan ? "NaN/Inf" : kHiddenNames[q], rows_text(b)));
    }
  }
  return s;
}

// The statistic of the logits' margins.
SiteStat margin_stat(const trace::FloorFile& f, const std::vector<trace::FloorMargins>& obs) {
  const size_t N = f.seeds.size();
  SiteStat s;
  for (size_t b = 0; b < static_cast<size_t>(f.buckets); ++b) {
    std::vector<Measures> m(N + 1);
    for (size_t i = 0; i < N; ++i) m[i] = margin_measures(f.margin(i, b));
    m[N] = margin_measures(obs[b]);
    if (!m[N].present) continue;
    const double rows = static_cast<double>(obs[b].rows);
    const double min_scale[kMarginMeasures] = {0.05, 1 / rows, 1 / rows};
    for (int q = 0; q < kMarginMeasures; ++q) {
      std::vector<double> v(N + 1);
      for (size_t k = 0; k <= N; ++k) v[k] = m[k].present ? m[k].v[q] : 0;
      std::vector<double> z = robust_z(v, false, min_scale[q]);
      for (size_t k = 0; k <= N; ++k) {
        if (!m[k].present) z[k] = -kInf;
      }
      fold(s, z, fmt::format("{}, {}", kMarginNames[q], rows_text(b)));
    }
  }
  return s;
}

// (count of members whose value >= x) / members: B is one of them, so at least 1 / (N + 1).
double upper_p(const std::vector<double>& of, double x) {
  size_t n = 0;
  for (double v : of) n += v >= x;
  return static_cast<double>(n) / static_cast<double>(of.size());
}

std::string p_text(double p) {
  return p < 0.001 ? "p < 0.001" : fmt::format("p = {:.2g}", p);
}

std::string class_text(const std::string& perturbation) {
  if (perturbation == "sr") return "rounding";
  if (perturbation == "reorder+sr") return "reordering and rounding";
  return "reordering";
}

// The mean relative L2 of a site over every bucket of one member (replay i, or obs).
double mean_rel(const std::vector<trace::FloorBucket>& buckets) {
  double sum = 0;
  int64_t rows = 0;
  for (const auto& k : buckets) {
    sum += k.rel_l2;
    rows += k.rows;
  }
  return rows > 0 ? sum / static_cast<double>(rows) : 0;
}

// The flips: per calibrated sequence the hazard over its choice rows, against B's flips.
void evaluate_flips(const trace::FloorFile& f, const std::map<int, const NoiseSums*>& b,
                    NoiseReport& out) {
  std::map<int, std::vector<const trace::FloorRow*>> rows;
  for (const auto& r : f.rows) rows[r.seq].push_back(&r);
  const size_t N = f.seeds.size();
  std::vector<double> probs;
  std::vector<int> replay_counts(N, 0);
  for (size_t q = 0; q < f.sequences.size(); ++q) {
    NoiseSequence s;
    s.seq = f.sequences[q].index;
    double survive = 1;
    for (const trace::FloorRow* r : rows[s.seq]) {
      const double m = r->margin, mu = r->change_mean, sd = r->change_sd;
      double p = 0;
      if (std::isnan(m)) {
        p = 0;
      } else if (sd > 0) {
        p = normal_cdf(-(m + mu) / sd);
      } else {
        p = N > 0 ? static_cast<double>(r->flips) / static_cast<double>(N) : 0;
      }
      survive *= 1 - p;
      ++s.rows;
    }
    s.p_flip = 1 - survive;
    const auto it = b.find(s.seq);
    s.compared = it != b.end();
    s.flipped = s.compared && it->second->flipped;
    if (s.compared) {
      probs.push_back(s.p_flip);
      out.expected_flips += s.p_flip;
      out.observed_flips += s.flipped;
      ++out.sequences;
      for (size_t i = 0; i < N; ++i) replay_counts[i] += f.flipped[i * f.sequences.size() + q];
    }
    out.per_sequence.push_back(s);
  }
  out.p_flips = at_least(probs, out.observed_flips);
  if (N > 0) {
    double sum = 0;
    int ge = 0;
    for (int c : replay_counts) {
      sum += c;
      out.replay_max_flips = std::max(out.replay_max_flips, c);
      ge += c >= out.observed_flips;
    }
    out.replay_mean_flips = sum / static_cast<double>(N);
    out.p_flips_empirical = (1.0 + ge) / static_cast<double>(N + 1);
  }
}

void write_headline(NoiseReport& r) {
  const std::string cls = class_text(r.perturbation);
  std::string flips = fmt::format(
      "{} flipped sequence{} observed, {:.1f} expected from {} alone ({})", r.observed_flips,
      r.observed_flips == 1 ? "" : "s", r.expected_flips, cls, p_text(r.p_flips));
  std::string drift;
  if (r.sites.empty()) {
    drift = "no site to compare with the floor";
  } else if (r.onset) {
    double p = 1;
    for (const auto& s : r.sites) {
      if (s.site == *r.onset) p = s.p_family;
    }
    drift = fmt::format("drift beyond the floor from {} on (family-wise {})", *r.onset, p_text(p));
  } else {
    drift = fmt::format("drift within the floor at every site (smallest family-wise p = {:.2g})",
                        r.p_family_min);
  }
  double p = 1;
  if (r.drift_beyond) p = std::min(p, r.p_family_min);
  if (r.flips_beyond) p = std::min(p, r.p_flips);
  r.headline = fmt::format("{}; {}: {}", flips, drift,
                           r.beyond ? fmt::format("beyond noise ({})", p_text(p)) : "within noise");
}

}  // namespace

double normal_cdf(double x) {
  return 0.5 * std::erfc(-x / std::sqrt(2.0));
}

double at_least(const std::vector<double>& p, int k) {
  if (k <= 0) return 1;
  // dist[j] = P(exactly j so far) for j < k; mass at k or more is what is left
  std::vector<double> dist(static_cast<size_t>(k), 0.0);
  dist[0] = 1;
  for (double x : p) {
    x = std::clamp(x, 0.0, 1.0);
    for (size_t j = dist.size(); j-- > 0;) {
      dist[j] = dist[j] * (1 - x) + (j > 0 ? dist[j - 1] * x : 0.0);
    }
  }
  double below = 0;
  for (double d : dist) below += d;
  return std::clamp(1 - below, 0.0, 1.0);
}

ReplayMeasure replay_measure(const Report& r, const std::vector<int32_t>& sequences, int64_t seed) {
  std::map<int, const SequenceReport*> by_index;
  for (const auto& s : r.sequences) by_index[s.index] = &s;
  ReplayMeasure m;
  m.seed = seed;
  for (int32_t q : sequences) {
    const auto it = by_index.find(q);
    if (it == by_index.end() || !it->second->noise) {
      throw Error(fmt::format("the replay of seed {} holds no sequence {} to measure", seed, q),
                  "run the calibration again: its replay is incomplete");
    }
    const NoiseSums& n = *it->second->noise;
    for (const SiteSums& s : n.sites) {
      auto at = std::find_if(m.sites.begin(), m.sites.end(),
                             [&](const SiteSums& x) { return x.site == s.site; });
      if (at == m.sites.end()) {
        m.sites.push_back({s.site, s.storage, {}});
        at = m.sites.end() - 1;
      }
      if (at->buckets.size() < s.buckets.size()) at->buckets.resize(s.buckets.size());
      for (size_t b = 0; b < s.buckets.size(); ++b) add_bucket(at->buckets[b], s.buckets[b]);
    }
    if (m.margins.size() < n.margins.size()) m.margins.resize(n.margins.size());
    for (size_t b = 0; b < n.margins.size(); ++b) add_margin(m.margins[b], n.margins[b]);
    m.sequences.push_back({n.flipped, n.first_choice, n.margin_a, n.margin_change});
  }
  return m;
}

std::string floor_config_json(const std::string& config_json) {
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(config_json, nullptr, false);
  if (!j.is_object()) return "{}";
  for (const char* k : {"trace", "plan", "test_perturb", "test_intrusive_tap"}) j.erase(k);
  return j.dump();
}

trace::FloorFile build_floor(const FloorSource& src, const std::vector<ReplayMeasure>& replays) {
  trace::FloorFile f;
  f.tool_version = src.tool_version;
  f.source = src.source;
  f.config_json = src.config_json;
  f.model_json = src.model_json;
  f.config_digest = src.config_digest;
  f.model_digest = src.model_digest;
  f.perturbation = src.perturbation;
  f.sequences = src.sequences;
  const size_t N = replays.size(), Q = src.sequences.size();
  // sites in forward order (the replays'), buckets as many as any replay reached
  bool logits = false;
  for (const auto& r : replays) {
    for (const SiteSums& s : r.sites) {
      if (std::find(f.sites.begin(), f.sites.end(), s.site) == f.sites.end()) {
        f.sites.push_back(s.site);
        f.storages.push_back(s.storage);
      }
      f.buckets = std::max(f.buckets, static_cast<int>(s.buckets.size()));
    }
    logits |= !r.margins.empty();
    f.buckets = std::max(f.buckets, static_cast<int>(r.margins.size()));
  }
  const size_t S = f.sites.size(), B = static_cast<size_t>(f.buckets);
  f.hidden.assign(S * N * B, {});
  if (logits) f.margins.assign(N * B, {});
  f.flipped.assign(N * Q, 0);
  for (size_t i = 0; i < N; ++i) {
    const ReplayMeasure& r = replays[i];
    f.seeds.push_back(r.seed);
    for (const SiteSums& s : r.sites) {
      const size_t site =
          static_cast<size_t>(std::find(f.sites.begin(), f.sites.end(), s.site) - f.sites.begin());
      for (size_t b = 0; b < s.buckets.size(); ++b) {
        f.hidden[(site * N + i) * B + b] = to_floor(s.buckets[b]);
      }
    }
    for (size_t b = 0; logits && b < r.margins.size(); ++b) {
      f.margins[i * B + b] = to_floor(r.margins[b]);
    }
    for (size_t q = 0; q < Q && q < r.sequences.size(); ++q) {
      f.flipped[i * Q + q] = r.sequences[q].flipped ? 1 : 0;
    }
  }
  // per choice row: A's margin, the mean and spread of the change over the replays, their flips
  for (size_t q = 0; q < Q && N > 0 && q < replays[0].sequences.size(); ++q) {
    const ReplayMeasure::Sequence& first = replays[0].sequences[q];
    for (size_t t = 0; t < first.margin_a.size(); ++t) {
      trace::FloorRow row;
      row.seq = src.sequences[q].index;
      row.row = static_cast<int32_t>(first.first_choice + static_cast<int64_t>(t));
      row.margin = first.margin_a[t];
      std::vector<double> d;
      for (const auto& r : replays) {
        if (q >= r.sequences.size()) continue;
        const ReplayMeasure::Sequence& x = r.sequences[q];
        if (t >= x.margin_change.size() || std::isnan(x.margin_change[t])) continue;
        d.push_back(x.margin_change[t]);
        // the replay's top-1 is another token here when the change closes A's margin
        row.flips += static_cast<double>(x.margin_a[t]) + d.back() < 0;
      }
      double mean = 0, ss = 0;
      for (double x : d) mean += x;
      mean = d.empty() ? 0 : mean / static_cast<double>(d.size());
      for (double x : d) ss += (x - mean) * (x - mean);
      row.change_mean = mean;
      row.change_sd = d.size() > 1 ? std::sqrt(ss / static_cast<double>(d.size() - 1)) : 0;
      f.rows.push_back(row);
    }
  }
  return f;
}

void check_floor(const trace::FloorFile& f, const std::string& path, const trace::TraceReader& a) {
  const std::string again =
      fmt::format("a floor is A's own: calibrate this trace (driftscope calibrate {} -o FLOOR)",
                  a.path().string());
  const ModelIdentity fm = model_identity(f.model_json), am = model_identity(a.model_json());
  if (!fm.known || !am.known || fm.hashes != am.hashes) {
    throw Error(fmt::format("floor '{}' is of another model than A '{}' (its model files differ)",
                            path, a.path().string()),
                again);
  }
  const auto diffs = config_differences(f.config_json, floor_config_json(a.config_json()));
  if (!diffs.empty()) {
    const auto& d = diffs.front();
    throw Error(fmt::format("floor '{}' is of another configuration: {} is {} in the floor, {} in "
                            "A '{}'",
                            path, d.field, d.a.empty() ? "absent" : d.a,
                            d.b.empty() ? "absent" : d.b, a.path().string()),
                again);
  }
  const std::vector<int> idx = a.sequence_indices();
  for (const trace::FloorSequence& q : f.sequences) {
    if (!std::binary_search(idx.begin(), idx.end(), q.index) ||
        a.sequence(q.index).tokens != q.tokens) {
      throw Error(
          fmt::format("floor '{}' was calibrated on other tokens: A '{}' sequence {} is not "
                      "the one its replays were forced on",
                      path, a.path().string(), q.index),
          again);
    }
  }
  if (f.runs() < kMinFloorRuns) {
    throw Error(fmt::format("floor '{}' holds {} replays: its p-values cannot go below 1/{} = "
                            "{:.2g}, so no drift can be told from the floor",
                            path, f.runs(), f.runs() + 1, 1.0 / (f.runs() + 1)),
                fmt::format("calibrate with --runs {} or more (N >= 1/alpha - 1: 99 for the "
                            "default alpha 0.01)",
                            99));
  }
}

FloorSummary summarize_floor(const trace::FloorFile& f) {
  FloorSummary out;
  const size_t N = f.seeds.size();
  for (size_t s = 0; s < f.sites.size(); ++s) {
    FloorSiteSummary x;
    x.site = f.sites[s];
    x.storage = f.storages[s];
    std::vector<double> rel, differ;
    for (size_t i = 0; i < N; ++i) {
      std::vector<trace::FloorBucket> ks;
      int64_t d = 0, e = 0;
      for (size_t b = 0; b < static_cast<size_t>(f.buckets); ++b) {
        ks.push_back(f.at(s, i, b));
        d += ks.back().differ;
        e += ks.back().elements;
      }
      rel.push_back(mean_rel(ks));
      differ.push_back(e > 0 ? static_cast<double>(d) / static_cast<double>(e) : 0);
    }
    x.rel_l2_median = median(rel);
    x.rel_l2_max = rel.empty() ? kNaN : *std::max_element(rel.begin(), rel.end());
    x.differ_median = median(differ);
    out.sites.push_back(x);
  }
  // the hazard of every calibrated sequence, as a diff against a B that flips none would see it
  NoiseReport n;
  std::map<int, const NoiseSums*> none;
  evaluate_flips(f, none, n);
  for (const auto& q : n.per_sequence) out.expected_flips += q.p_flip;
  out.choice_rows = static_cast<int>(f.rows.size());
  const size_t Q = f.sequences.size();
  double sum = 0;
  for (size_t i = 0; i < N; ++i) {
    int c = 0;
    for (size_t q = 0; q < Q; ++q) c += f.flipped[i * Q + q];
    sum += c;
    out.replay_max_flips = std::max(out.replay_max_flips, c);
  }
  out.replay_mean_flips = N > 0 ? sum / static_cast<double>(N) : 0;
  return out;
}

NoiseReport evaluate_floor(const Report& r, const trace::FloorFile& f, const std::string& path,
                           double alpha) {
  NoiseReport out;
  out.floor = path;
  out.perturbation = f.perturbation;
  out.runs = f.runs();
  out.alpha = alpha;
  const int n_layers = std::max(0, model_identity(f.model_json).n_layers);
  for (int b = 0; b < f.buckets; ++b) out.bucket_starts.push_back(bucket_first_row(b));
  if (1.0 / (out.runs + 1) > alpha) {
    out.notes.push_back(fmt::format(
        "with N = {} replays no p-value can reach alpha = {:g} (the smallest is 1/(N+1) = "
        "{:.2g}): calibrate with --runs {} or more",
        out.runs, alpha, 1.0 / (out.runs + 1), static_cast<int>(std::ceil(1 / alpha - 1))));
  }
  // B's sums of the floor's sequences
  std::map<int, const NoiseSums*> b_seqs;
  std::vector<const NoiseSums*> seqs;
  std::map<int, const SequenceReport*> reports;
  for (const auto& s : r.sequences) reports[s.index] = &s;
  bool fewer_rows = false;
  for (const auto& q : f.sequences) {
    const auto it = reports.find(q.index);
    if (it == reports.end() || !it->second->noise) {
      out.notes.push_back(
          fmt::format("sequence {} of the floor is not compared: left out", q.index));
      continue;
    }
    b_seqs[q.index] = &*it->second->noise;
    seqs.push_back(&*it->second->noise);
    fewer_rows |= it->second->compared < static_cast<int64_t>(q.tokens.size()) - 1;
  }
  if (fewer_rows) {
    out.notes.push_back(
        "B ran on its own tokens: rows after its first flip are not compared, so its drift is "
        "measured over fewer rows than the replays' (teacher-force B on A's tokens, run "
        "--force-tokens A.h5, for the exact test)");
  }
  // every site's statistic
  std::vector<SiteStat> stats;
  std::vector<std::string> missing;
  for (size_t s = 0; s < f.sites.size(); ++s) {
    bool found = false;
    const auto obs = observed_site(seqs, f.sites[s], f.buckets, found);
    if (!found) {
      missing.push_back(f.sites[s]);
      continue;
    }
    NoiseSite ns;
    ns.site = f.sites[s];
    ns.layer = site_layer(ns.site, n_layers);
    ns.storage = f.storages[s];
    std::vector<double> replay_rel;
    for (size_t i = 0; i < f.seeds.size(); ++i) {
      std::vector<trace::FloorBucket> ks;
      for (size_t b = 0; b < static_cast<size_t>(f.buckets); ++b) ks.push_back(f.at(s, i, b));
      replay_rel.push_back(mean_rel(ks));
    }
    for (size_t b = 0; b < static_cast<size_t>(f.buckets); ++b) {
      std::vector<double> v;
      for (size_t i = 0; i < f.seeds.size(); ++i) {
        const auto& k = f.at(s, i, b);
        if (k.rows > 0) v.push_back(k.rel_l2 / static_cast<double>(k.rows));
      }
      ns.floor_by_bucket.push_back(v.empty() ? kNaN : median(v));
    }
    ns.drift = mean_rel(obs);
    ns.floor = median(replay_rel);
    ns.floor_units = ns.floor > 0 ? ns.drift / ns.floor : kNaN;
    stats.push_back(hidden_stat(f, s, obs));
    out.sites.push_back(ns);
  }
  if (!missing.empty()) {
    out.notes.push_back(
        fmt::format("{} site{} of the floor not in both traces (recorded with fewer probes): {}",
                    missing.size(), missing.size() == 1 ? "" : "s", fmt::join(missing, ", ")));
  }
  if (!f.margins.empty()) {
    std::vector<MarginSums> sum(static_cast<size_t>(f.buckets));
    bool any = false;
    for (const NoiseSums* n : seqs) {
      for (size_t b = 0; b < n->margins.size() && b < sum.size(); ++b) {
        add_margin(sum[b], n->margins[b]);
        any = true;
      }
    }
    if (any) {
      std::vector<trace::FloorMargins> obs;
      for (const auto& m : sum) obs.push_back(to_floor(m));
      NoiseSite ns;
      ns.site = "logits";
      ns.layer = n_layers;
      ns.storage = "logits";
      std::vector<double> replay;
      for (size_t i = 0; i < f.seeds.size(); ++i) {
        double a = 0;
        int64_t rows = 0;
        for (size_t b = 0; b < static_cast<size_t>(f.buckets); ++b) {
          a += f.margin(i, b).abs_change;
          rows += f.margin(i, b).rows;
        }
        replay.push_back(rows > 0 ? a / static_cast<double>(rows) : 0);
      }
      double a = 0;
      int64_t rows = 0;
      for (const auto& m : obs) {
        a += m.abs_change;
        rows += m.rows;
      }
      ns.drift = rows > 0 ? a / static_cast<double>(rows) : 0;
      ns.floor = median(replay);
      ns.floor_units = ns.floor > 0 ? ns.drift / ns.floor : kNaN;
      stats.push_back(margin_stat(f, obs));
      out.sites.push_back(ns);
    }
  }
  // per-site and family-wise p-values: the max statistic over sites, member by member
  const size_t members = f.seeds.size() + 1;
  std::vector<double> family(members, -kInf);
  for (const SiteStat& s : stats) {
    if (s.of.empty()) continue;
    for (size_t k = 0; k < members; ++k) family[k] = std::max(family[k], s.of[k]);
  }
  for (size_t i = 0; i < out.sites.size(); ++i) {
    NoiseSite& ns = out.sites[i];
    const SiteStat& s = stats[i];
    if (s.of.empty()) continue;  // no bucket of B to compare
    ns.stat = s.of.back();
    ns.driver = s.driver;
    ns.p = upper_p(s.of, ns.stat);
    ns.p_family = upper_p(family, ns.stat);
    ns.significant = ns.p_family <= alpha;
    out.p_family_min = std::min(out.p_family_min, ns.p_family);
    if (ns.significant && !out.onset) out.onset = ns.site;
  }
  evaluate_flips(f, b_seqs, out);
  out.drift_beyond = out.onset.has_value();
  out.flips_beyond = out.p_flips <= alpha;
  out.beyond = out.drift_beyond || out.flips_beyond;
  write_headline(out);
  return out;
}

}  // namespace ds::diff
