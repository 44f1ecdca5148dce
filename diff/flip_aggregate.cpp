// The flips explained in aggregate (see diff/flip_aggregate.h; definitions in docs/metrics.md §12).
#include "diff/flip_aggregate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

#include "trace/schema.h"

namespace ds::diff {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The kinds in forward order (a histogram's order, within a layer for the per-layer ones).
constexpr const char* kKinds[] = {kEmbedBlock, kAttentionBlock, kMlpBlock,
                                  kLayerBlock, kFinalNormBlock, kLogitsBlock};

int kind_rank(const std::string& kind) {
  for (int i = 0; i < static_cast<int>(std::size(kKinds)); ++i) {
    if (kind == kKinds[i]) return i;
  }
  return static_cast<int>(std::size(kKinds));
}

// Forward order of places: embed, then layer by layer (attention, mlp, layer), then the head.
std::tuple<int, int, int> place_key(const Place& p) {
  const int k = kind_rank(p.kind);
  const int group = k == 0 ? 0 : p.layer >= 0 ? 1 : 2;
  return {group, p.layer, k};
}

const SequenceReport* find_sequence(const Report& r, int seq) {
  for (const auto& s : r.sequences) {
    if (s.index == seq) return &s;
  }
  return r.sequences.size() == 1 ? &r.sequences[0] : nullptr;
}

// The index of `seq` in the attribution's per-sequence vectors, or -1.
int find_attribution_index(const AttributionReport& r, int seq) {
  for (size_t i = 0; i < r.sequence_ids.size(); ++i) {
    if (r.sequence_ids[i] == seq) return static_cast<int>(i);
  }
  return r.sequence_ids.size() == 1 ? 0 : -1;
}

MarginClass classify(double margin, double near_tie) {
  if (std::isnan(margin)) return MarginClass::unknown;
  return margin < near_tie ? MarginClass::near_tie : MarginClass::accumulated;
}

// The row of the flip: the diff's first flip, else (B teacher-forced on A's tokens, as zoom runs
// it) the first choice row whose top-1 ids differ; -1 when neither.
int64_t flip_row(const SequenceReport& s) {
  if (s.first_flip) return s.first_flip->row;
  const int64_t first_choice = std::max(0, s.prompt_len_a - 1);
  for (size_t r = static_cast<size_t>(first_choice); r < s.positions.size(); ++r) {
    if (s.positions[r].top1_differs) return static_cast<int64_t>(r);
  }
  return -1;
}

// The flip, its margin and the layer view at the flip row `row`, from the diff.
void read_diff(const SequenceReport& s, int64_t row, int n_layers, double near_tie, FlipCase& c) {
  const bool row_in = static_cast<size_t>(row) < s.positions.size();
  const PositionRow* p = row_in ? &s.positions[static_cast<size_t>(row)] : nullptr;
  c.forced = !s.first_flip.has_value();
  c.row = row;
  c.step = static_cast<int>(row - (s.prompt_len_a - 1));
  c.margin_logit_a = s.first_flip ? s.first_flip->margin_logit_a : p->margin_logit_a;
  c.margin_logit_b = s.first_flip ? s.first_flip->margin_logit_b : p->margin_logit_b;
  c.margin = classify(c.margin_logit_a, near_tie);
  c.logit_drift = p ? p->logit_drift : kNaN;
  if (s.onset) {
    c.has_onset = true;
    c.onset_site = s.onset->site;
    c.onset = site_place(s.onset->site);
    c.onset_position = s.onset->position;
  }
  c.layer_rel_l2.assign(static_cast<size_t>(n_layers), kNaN);
  c.layer_floor.assign(static_cast<size_t>(n_layers), kNaN);
  c.layer_storage.assign(static_cast<size_t>(n_layers), "");
  for (const auto& l : s.layers) {
    if (l.layer < 0 || l.layer >= n_layers) continue;
    if (static_cast<size_t>(row) < l.rel_l2.size()) {
      c.layer_rel_l2[static_cast<size_t>(l.layer)] = l.rel_l2[static_cast<size_t>(row)];
    }
    for (const auto& d : s.drift) {
      if (d.site != l.site) continue;
      c.layer_floor[static_cast<size_t>(l.layer)] = d.noise_floor;
      c.layer_storage[static_cast<size_t>(l.layer)] = d.dtype;
    }
  }
}

// Where this sequence's local error is born and where most of it is added, from the attribution.
void read_attribution(const AttributionReport& r, int k, FlipCase& c) {
  std::vector<int> verdict = r.ranking;
  std::sort(verdict.begin(), verdict.end());  // forward order
  double sum = 0, top = -1;
  for (int i : verdict) {
    const BlockError& b = r.blocks[static_cast<size_t>(i)];
    if (static_cast<size_t>(k) >= b.local_by_seq.size()) continue;
    const double v = b.local_by_seq[static_cast<size_t>(k)];
    const Place place{b.kind, b.kind == kFinalNormBlock ? -1 : b.layer};
    if (!c.has_birth && (std::isnan(v) || v > r.noise_floor)) {
      c.has_birth = true;
      c.birth_block = b.name;
      c.birth = place;
      c.birth_local = v;
    }
    if (std::isfinite(v)) sum += v;
    // NaN ranks first, as in the attribution's ranking: it always fails
    const double key = std::isnan(v) ? std::numeric_limits<double>::infinity() : v;
    if (key > 0 && key > top) {
      top = key;
      c.has_top = true;
      c.top_block = b.name;
      c.top = place;
      c.top_share = v;
    }
  }
  if (c.has_top) c.top_share = sum > 0 && std::isfinite(c.top_share) ? c.top_share / sum : kNaN;
}

PlaceHistogram histogram(const std::vector<Place>& places, int none, int n_layers) {
  PlaceHistogram h;
  h.none = none;
  h.by_layer.assign(static_cast<size_t>(n_layers), 0);
  std::map<std::tuple<int, int, int>, PlaceCount> cells;
  std::map<int, KindCount> kinds;
  for (const Place& p : places) {
    auto& cell = cells[place_key(p)];
    cell.place = p;
    ++cell.count;
    auto& kind = kinds[kind_rank(p.kind)];
    kind.kind = p.kind;
    ++kind.count;
    if (p.layer >= 0 && p.layer < n_layers) ++h.by_layer[static_cast<size_t>(p.layer)];
  }
  for (auto& [key, cell] : cells) h.cells.push_back(cell);
  for (auto& [key, kind] : kinds) h.kinds.push_back(kind);
  return h;
}

void summarize_margins(FlipAggregate& a) {
  MarginSummary& m = a.margins;
  std::vector<double> margins, drifts;
  for (const auto& c : a.cases) {
    if (!c.flipped) continue;
    m.near_tie += c.margin == MarginClass::near_tie;
    m.accumulated += c.margin == MarginClass::accumulated;
    m.unknown += c.margin == MarginClass::unknown;
    drifts.push_back(c.logit_drift);
    if (c.margin == MarginClass::unknown) continue;
    margins.push_back(c.margin_logit_a);
    const double t = a.near_tie_logit;
    ++m.decades[c.margin_logit_a < t         ? 0
                : c.margin_logit_a < 10 * t  ? 1
                : c.margin_logit_a < 100 * t ? 2
                                             : 3];
  }
  m.margin_logit_a = spread_of(margins);
  m.logit_drift = spread_of(drifts);
}

void summarize_layers(FlipAggregate& a, const std::vector<std::vector<double>>& local) {
  for (int l = 0; l < a.n_layers; ++l) {
    LayerGrowth g;
    g.layer = l;
    g.site_floor = kNaN;
    std::vector<double> rel, growth;
    bool first = true;
    for (const auto& c : a.cases) {
      if (!c.flipped) continue;
      const double v = c.layer_rel_l2[static_cast<size_t>(l)];
      const double floor = c.layer_floor[static_cast<size_t>(l)];
      const std::string& storage = c.layer_storage[static_cast<size_t>(l)];
      rel.push_back(v);
      g.above_floor += v > floor || std::isinf(v);
      if (first) {
        g.site_floor = floor;
        g.site_storage = storage;
        first = false;
      } else if (!(g.site_floor == floor) || g.site_storage != storage) {
        g.site_floor = kNaN;  // the flips' sites were stored differently
        g.site_storage.clear();
      }
      if (l > 0) {
        const double prev = c.layer_rel_l2[static_cast<size_t>(l - 1)];
        if (prev > 0 && std::isfinite(prev) && std::isfinite(v)) growth.push_back(v / prev);
      }
    }
    g.rel_l2 = spread_of(rel);
    g.growth_median = spread_of(growth).median;
    g.local = spread_of(local[static_cast<size_t>(l)]);
    a.layers.push_back(g);
  }
  a.site_storage = a.layers.empty() ? "" : a.layers.front().site_storage;
  for (const auto& g : a.layers) {
    if (g.site_storage != a.site_storage) a.site_storage.clear();
  }
}

// "82% of the 28 flips were near-ties under 0.05 logit; error is born in attention of layers
// 0–4 (53%)".
std::string summary_line(const FlipAggregate& a) {
  if (a.flips == 0) {
    return fmt::format("no flips among the {} zoomed sequence{}", a.pairs, a.pairs == 1 ? "" : "s");
  }
  const bool one = a.flips == 1;
  std::string line = fmt::format(
      "{} of the {} flip{} {} under {:g} logit", percent(1.0 * a.margins.near_tie / a.flips),
      a.flips, one ? "" : "s", one ? "was a near-tie" : "were near-ties", a.near_tie_logit);
  const KindCount* most = nullptr;
  for (const auto& k : a.birth.kinds) {
    if (most == nullptr || k.count > most->count) most = &k;
  }
  if (most == nullptr) {
    return line + fmt::format("; no block's local error exceeds the {} noise floor {:.2g}",
                              a.storage, a.noise_floor);
  }
  std::vector<int> layers;
  for (const auto& c : a.birth.cells) {
    if (c.place.kind == most->kind && c.place.layer >= 0) layers.push_back(c.place.layer);
  }
  return line + fmt::format("; error is born in {} ({})", place_text(most->kind, layers),
                            percent(1.0 * most->count / a.flips));
}

}  // namespace

const char* margin_class_name(MarginClass c) {
  switch (c) {
    case MarginClass::near_tie:
      return "near_tie";
    case MarginClass::accumulated:
      return "accumulated";
    default:
      return "unknown";
  }
}

Spread spread_of(std::vector<double> v) {
  v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return std::isnan(x); }), v.end());
  Spread s;
  s.n = static_cast<int>(v.size());
  if (v.empty()) {
    s.min = s.q1 = s.median = s.q3 = s.max = kNaN;
    return s;
  }
  std::sort(v.begin(), v.end());
  auto q = [&](double p) {
    const double rank = p * static_cast<double>(v.size() - 1);
    const size_t lo = static_cast<size_t>(std::floor(rank));
    const size_t hi = std::min(lo + 1, v.size() - 1);
    const double f = rank - static_cast<double>(lo);
    return f == 0 ? v[lo] : v[lo] + f * (v[hi] - v[lo]);
  };
  s.min = v.front();
  s.q1 = q(0.25);
  s.median = q(0.5);
  s.q3 = q(0.75);
  s.max = v.back();
  return s;
}

Place site_place(const std::string& site) {
  const trace::SiteOrder o = trace::site_order(site);
  if (site == trace::kEmbedSite || site == trace::kFinalNormSite || site == trace::kLogitsSite) {
    return {site, -1};
  }
  if (site.empty() || site[0] != 'L' || o.layer < 0) return {site, -1};
  // L<l>/attn_norm, attn_out, resid_mid: the attention half; mlp_norm, mlp_out, out: the MLP's
  const int resid_mid = trace::layer_site_index(trace::SiteKind::resid_mid);
  return {o.kind <= resid_mid ? kAttentionBlock : kMlpBlock, o.layer};
}

std::string place_text(const std::string& kind, const std::vector<int>& layers) {
  if (layers.empty()) return kind;
  const std::string who = kind == kLayerBlock ? "" : kind + " of ";
  return fmt::format("{}layer{} {}", who, layers.size() == 1 ? "" : "s", layer_ranges(layers));
}

FlipAggregate aggregate_flips(const std::vector<ZoomedPair>& pairs, double near_tie_logit) {
  FlipAggregate a;
  a.near_tie_logit = near_tie_logit;
  a.pairs = static_cast<int>(pairs.size());
  for (const auto& p : pairs) {
    if (p.attribution != nullptr) a.n_layers = std::max(a.n_layers, p.attribution->n_layers);
  }
  std::vector<std::vector<double>> local(static_cast<size_t>(a.n_layers));
  std::vector<Place> onsets, births, tops;
  for (const auto& p : pairs) {
    FlipCase c;
    c.seq = p.seq;
    const SequenceReport* s = p.diff ? find_sequence(*p.diff, p.seq) : nullptr;
    const int k = p.attribution ? find_attribution_index(*p.attribution, p.seq) : -1;
    if (s == nullptr || k < 0) {
      a.notes.push_back(fmt::format("sequence {} left out: not in its {}", p.seq,
                                    s == nullptr ? "diff" : "attribution"));
    } else if (const int64_t row = flip_row(*s); row < 0) {
      a.notes.push_back(fmt::format("sequence {} left out: no flip ({})", p.seq, verdict_text(*s)));
    } else {
      c.flipped = true;
      ++a.flips;
      read_diff(*s, row, a.n_layers, near_tie_logit, c);
      read_attribution(*p.attribution, k, c);
      if (c.has_onset) onsets.push_back(c.onset);
      if (c.has_birth) births.push_back(c.birth);
      if (c.has_top) tops.push_back(c.top);
      a.steps.steps.push_back(c.step);
      for (const auto& b : p.attribution->blocks) {
        if (b.kind == kLayerBlock && b.layer >= 0 && b.layer < a.n_layers &&
            static_cast<size_t>(k) < b.local_by_seq.size()) {
          local[static_cast<size_t>(b.layer)].push_back(b.local_by_seq[static_cast<size_t>(k)]);
        }
      }
      if (a.storage.empty()) {
        a.storage = p.attribution->storage;
        a.noise_floor = p.attribution->noise_floor;
      } else if (a.noise_floor != p.attribution->noise_floor) {
        a.notes.push_back(fmt::format("sequence {}: noise floor {:.2g} ({}), not {:.2g} ({})",
                                      p.seq, p.attribution->noise_floor, p.attribution->storage,
                                      a.noise_floor, a.storage));
      }
    }
    a.cases.push_back(std::move(c));
  }
  std::sort(a.steps.steps.begin(), a.steps.steps.end());
  a.steps.spread = spread_of({a.steps.steps.begin(), a.steps.steps.end()});
  summarize_margins(a);
  a.onset = histogram(onsets, a.flips - static_cast<int>(onsets.size()), a.n_layers);
  a.birth = histogram(births, a.flips - static_cast<int>(births.size()), a.n_layers);
  a.top = histogram(tops, a.flips - static_cast<int>(tops.size()), a.n_layers);
  summarize_layers(a, local);
  a.summary = summary_line(a);
  return a;
}

}  // namespace ds::diff
