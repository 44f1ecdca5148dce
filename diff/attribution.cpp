// Local versus inherited drift: accumulation, blocks, origins and the verdict.
#include "diff/attribution.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>

#include "diff/metrics.h"
#include "diff/tolerances.h"
#include "trace/schema.h"
#include "trace/topk.h"

namespace ds::diff {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// B's log-sum-exp as the trace writer stores A's: over the float32 row widened to double,
// rounded to float32 (so that identical rows give identical log-probabilities).
double lse_of(std::span<const float> row) {
  const std::vector<double> wide(row.begin(), row.end());
  return static_cast<float>(trace::log_sum_exp(wide));
}

// The verdict's blocks: attention and MLP per layer when split, else whole layers; and the
// final norm. Shares of their summed local error; ranked by local error.
void rank_blocks(AttributionReport& r, bool split) {
  double sum = 0;
  for (size_t i = 0; i < r.blocks.size(); ++i) {
    const BlockError& b = r.blocks[i];
    const bool counted =
        b.kind == kFinalNormBlock ||
        (split ? b.kind != kLayerBlock && b.kind != kLogitsBlock : b.kind == kLayerBlock);
    if (!counted) continue;
    r.ranking.push_back(static_cast<int>(i));
    if (std::isfinite(b.local)) sum += b.local;
  }
  for (int i : r.ranking) {
    BlockError& b = r.blocks[i];
    b.share = sum > 0 && std::isfinite(b.local) ? b.local / sum : 0;
  }
  std::stable_sort(r.ranking.begin(), r.ranking.end(), [&](int x, int y) {
    const double a = r.blocks[x].local, b = r.blocks[y].local;
    if (std::isnan(a) != std::isnan(b)) return std::isnan(a);  // NaN first: it always fails
    return a > b;
  });
}

// The verdict when there is no share of local error to tell (nothing compared, NaN, no local
// error), else empty.
std::string verdict_without_shares(const AttributionReport& r) {
  bool any_nan = false, any_local = false, any_total = false;
  for (int i : r.ranking) {
    const BlockError& b = r.blocks[i];
    any_nan |= b.nan;
    any_local |= b.local > 0;
    any_total |= b.total > 0;
  }
  if (r.ranking.empty()) return "nothing to attribute: no position was compared";
  if (any_nan) {
    for (int i : r.ranking) {
      if (std::isnan(r.blocks[i].local)) {
        return fmt::format("{} produces NaN/Inf on A's inputs (the first in the ranking)",
                           r.blocks[i].name);
      }
    }
    return "NaN/Inf in B's own run, but no block produces one on A's inputs: it is inherited";
  }
  if (!any_local) {
    return any_total ? "no layer adds error: on A's inputs B reproduces every layer of A bit for "
                       "bit (the drift measured is all inherited)"
                     : "no drift: B reproduces every layer of A bit for bit";
  }
  return {};
}

// Who adds the local error, by kind of block: "layers 0–2 add 90% of the local error,
// final_norm adds 10%", then the kinds that add none.
std::string shares_line(const AttributionReport& r) {
  struct Group {
    const char* kind;
    const char* one;   // "attention of layer", "MLP of layer"
    const char* many;  // "attention layers"
    const char* none;  // "attention adds none"
  };
  const Group groups[] = {
      {kAttentionBlock, "attention of layer", "attention layers", "attention adds none"},
      {kMlpBlock, "MLP of layer", "MLP layers", "MLPs add none"},
      {kLayerBlock, "layer", "layers", "layers add none"},
      {kFinalNormBlock, kFinalNormBlock, kFinalNormBlock, ""},
  };
  std::vector<std::string> parts, nones;
  bool first = true;
  for (const Group& g : groups) {
    std::vector<int> layers;
    double share = 0;
    bool present = false;
    for (int i : r.ranking) {
      const BlockError& b = r.blocks[i];
      if (b.kind != g.kind) continue;
      present = true;
      if (b.local > 0) {
        layers.push_back(b.layer);
        share += b.share;
      }
    }
    if (!present) continue;
    if (layers.empty()) {
      if (*g.none) nones.push_back(g.none);
      continue;
    }
    std::sort(layers.begin(), layers.end());
    std::string who;
    if (g.kind == kFinalNormBlock) {
      who = kFinalNormBlock;
    } else {
      who = layers.size() == 1 ? fmt::format("{} {}", g.one, layers[0])
                               : fmt::format("{} {}", g.many, layer_ranges(layers));
    }
    const bool one = layers.size() == 1;
    parts.push_back(fmt::format("{} add{} {}{}", who, one ? "s" : "", percent(share),
                                first ? " of the local error" : ""));
    first = false;
  }
  std::string line;
  for (size_t i = 0; i < parts.size(); ++i) line += (i ? ", " : "") + parts[i];
  for (const auto& n : nones) line += "; " + n;
  return line;
}

// The blocks above the noise floor (origins of drift), the first six named, in parentheses.
std::string origins_note(const AttributionReport& r) {
  std::vector<std::string> origins;
  for (int i : r.ranking) {
    if (r.blocks[i].origin) origins.push_back(r.blocks[i].name);
  }
  if (origins.empty()) {
    return fmt::format(" (none above the {} noise floor {:.2g})", r.storage, r.noise_floor);
  }
  std::string o;
  for (size_t i = 0; i < origins.size() && i < 6; ++i) o += (i ? ", " : "") + origins[i];
  if (origins.size() > 6) o += fmt::format(" and {} more", origins.size() - 6);
  return fmt::format(" (origin{} above the {} noise floor: {})", origins.size() > 1 ? "s" : "",
                     r.storage, o);
}

}  // namespace

std::string layer_ranges(const std::vector<int>& layers) {
  std::string out;
  for (size_t i = 0; i < layers.size();) {
    size_t j = i;
    while (j + 1 < layers.size() && layers[j + 1] == layers[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += j == i ? fmt::format("{}", layers[i]) : fmt::format("{}–{}", layers[i], layers[j]);
    i = j + 1;
  }
  return out;
}

std::string percent(double share) {
  const double p = 100 * share;
  if (p > 0 && p < 0.5) return "<1%";
  return fmt::format("{:.0f}%", p);
}

AttributionBuilder::AttributionBuilder(const trace::TraceReader& a, int n_layers, bool split,
                                       NumberFormat b_storage)
    : a_(a), n_layers_(n_layers), split_(split), b_storage_(b_storage) {}

void AttributionBuilder::add(TapOrigin origin, int seq, const std::string& site, int first_pos,
                             int rows, int width, const float* b, const float* a) {
  Acc acc;  // these rows, merged below into the totals and the sequence's
  const size_t w = static_cast<size_t>(width);
  if (a == nullptr) {  // logits: KL(A‖B) over A's recorded top-K, B's full row
    const trace::TopKRows top = a_.topk(seq, first_pos, rows);
    const std::vector<float> lse = a_.lse(seq, first_pos, rows);
    for (int r = 0; r < rows; ++r) {
      LogitsRow ra, rb;
      ra.ids = std::span<const int32_t>(top.ids).subspan(static_cast<size_t>(r) * top.k, top.k);
      ra.logits = std::span<const float>(top.logits).subspan(static_cast<size_t>(r) * top.k, top.k);
      ra.lse = lse[r];
      rb.full = std::span<const float>(b + r * w, w);
      rb.lse = lse_of(rb.full);
      bool exact = false;
      const double kl = kl_divergence(ra, rb, exact);
      if (std::isnan(kl)) acc.nan = true;
      acc.kl += kl;
      acc.max_rel = std::max(acc.max_rel, kl);
      ++acc.rows;
    }
  } else {
    for (int r = 0; r < rows; ++r) {
      const std::span<const float> ra(a + r * w, w), rb(b + r * w, w);
      const RowDrift d = row_drift(ra, rb);
      if (d.non_finite) {
        acc.nan = true;
      } else {
        for (size_t i = 0; i < w; ++i) {
          const double x = ra[i], e = static_cast<double>(rb[i]) - x;
          acc.aa += x * x;
          acc.dd += e * e;
        }
        acc.max_rel = std::max(acc.max_rel, d.rel_l2);
      }
      ++acc.rows;
    }
  }
  merge(acc_[{site, origin}], acc);
  merge(seq_acc_[{site, origin, seq}], acc);
  if (origin == TapOrigin::run && site == trace::kFinalNormSite) rows_[seq] += rows;
}

void AttributionBuilder::merge(Acc& into, const Acc& part) const {
  into.dd += part.dd;
  into.aa += part.aa;
  into.kl += part.kl;
  into.max_rel = std::max(into.max_rel, part.max_rel);
  into.rows += part.rows;
  into.nan |= part.nan;
}

// Pooled relative L2 (hidden sites) or mean KL (logits) of an accumulator; NaN when empty or
// when a non-finite value was seen.
double AttributionBuilder::value(const Acc& a, bool kl) {
  if (a.rows == 0 || a.nan) return kNaN;
  if (kl) return a.kl / static_cast<double>(a.rows);
  if (a.aa == 0) return a.dd == 0 ? 0.0 : std::numeric_limits<double>::infinity();
  return std::sqrt(a.dd) / std::sqrt(a.aa);
}

AttributionReport AttributionBuilder::finish(const std::string& a_dtype, const std::string& b_dtype,
                                             const std::string& b_config_json) const {
  AttributionReport r;
  r.a_path = a_.path().string();
  r.a_dtype = a_dtype;
  r.b_dtype = b_dtype;
  r.b_config_json = b_config_json;
  r.storage = coarser_storage(NumberFormat::f32, b_storage_);
  r.noise_floor = noise_floor(NumberFormat::f32, b_storage_);
  r.split = split_;
  r.n_layers = n_layers_;
  r.sequences = static_cast<int>(rows_.size());
  for (const auto& [seq, n] : rows_) {
    r.positions += n;
    r.sequence_ids.push_back(seq);
  }
  for (int l = 0; l < n_layers_; ++l) {
    const std::string out = trace::layer_site(l, trace::SiteKind::out);
    if (split_) {
      add_block(r, fmt::format("L{} {}", l, kAttentionBlock), kAttentionBlock, l,
                trace::layer_site(l, trace::SiteKind::resid_mid), TapOrigin::layer_shadow);
      add_block(r, fmt::format("L{} {}", l, kMlpBlock), kMlpBlock, l, out, TapOrigin::mlp_shadow);
    }
    add_block(r, fmt::format("L{}", l), kLayerBlock, l, out, TapOrigin::layer_shadow);
  }
  add_block(r, kFinalNormBlock, kFinalNormBlock, -1, trace::kFinalNormSite, TapOrigin::head_shadow);
  add_block(r, kLogitsBlock, kLogitsBlock, -1, trace::kLogitsSite, TapOrigin::head_shadow,
            /*kl=*/true);
  rank_blocks(r, split_);
  r.verdict = attribution_verdict(r);
  return r;
}

double AttributionBuilder::pooled(const std::string& site, TapOrigin o, bool kl,
                                  double& max) const {
  auto it = acc_.find({site, o});
  max = it == acc_.end() || it->second.rows == 0 ? kNaN : it->second.max_rel;
  return it == acc_.end() ? kNaN : value(it->second, kl);
}

double AttributionBuilder::of_seq(const std::string& site, TapOrigin o, bool kl, int seq) const {
  auto it = seq_acc_.find({site, o, seq});
  return it == seq_acc_.end() ? kNaN : value(it->second, kl);
}

void AttributionBuilder::add_block(AttributionReport& r, std::string name, std::string kind,
                                   int layer, const std::string& site, TapOrigin local_from,
                                   bool kl) const {
  BlockError e;
  e.name = std::move(name);
  e.kind = std::move(kind);
  e.layer = layer;
  e.site = site;
  double ignored = 0;
  e.local = pooled(site, local_from, kl, e.local_max);
  e.total = pooled(site, TapOrigin::run, kl, ignored);
  for (int seq : r.sequence_ids) {
    e.local_by_seq.push_back(of_seq(site, local_from, kl, seq));
    e.total_by_seq.push_back(of_seq(site, TapOrigin::run, kl, seq));
  }
  e.inherited = e.total - e.local;
  auto it = acc_.find({site, TapOrigin::run});
  e.positions = it == acc_.end() ? 0 : it->second.rows;
  e.nan = std::isnan(e.local) || std::isnan(e.total);
  e.origin = !kl && (std::isnan(e.local) || e.local > r.noise_floor);
  r.blocks.push_back(e);
}

std::string attribution_verdict(const AttributionReport& r) {
  if (std::string decided = verdict_without_shares(r); !decided.empty()) return decided;
  return shares_line(r) + origins_note(r);
}

}  // namespace ds::diff
