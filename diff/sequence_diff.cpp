// The diff of one sequence of two traces: alignment, the logits metrics streamed over row blocks,
// and each common hidden site's drift (docs/metrics.md).
#include "diff/sequence_diff.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <span>
#include <thread>

#include "common/float_formats.h"
#include "common/work_pool.h"
#include "diff/metrics.h"
#include "diff/tolerances.h"
#include "trace/schema.h"

namespace ds::diff {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string safe_decode(const DiffOptions& opt, const std::vector<int32_t>& ids) {
  if (!opt.decode || ids.empty()) return {};
  try {
    return opt.decode(ids);
  } catch (const std::exception&) {
    return {};
  }
}

std::vector<int32_t> slice(const std::vector<int32_t>& v, int64_t begin, int64_t end) {
  begin = std::clamp<int64_t>(begin, 0, static_cast<int64_t>(v.size()));
  end = std::clamp<int64_t>(end, begin, static_cast<int64_t>(v.size()));
  return {v.begin() + begin, v.begin() + end};
}

// The text `ids` add after `context`: decode(context + ids) minus decode(context). Decoding ids
// alone loses what depends on what precedes them (SentencePiece drops the leading space of the
// first piece, byte-fallback pieces need their neighbours).
std::string decode_after(const DiffOptions& opt, const std::vector<int32_t>& context,
                         const std::vector<int32_t>& ids) {
  if (!opt.decode || ids.empty()) return {};
  std::vector<int32_t> all = context;
  all.insert(all.end(), ids.begin(), ids.end());
  const std::string head = safe_decode(opt, context), whole = safe_decode(opt, all);
  if (!context.empty() && whole.size() >= head.size() && whole.compare(0, head.size(), head) == 0) {
    return whole.substr(head.size());
  }
  return safe_decode(opt, ids);
}

// max that lets a NaN win (NaN always fails); also reports where the maximum was.
void track_max(double v, int64_t at, double& best, int64_t& best_at) {
  if (std::isnan(best)) return;
  if (std::isnan(v) || best_at < 0 || v > best) {
    best = v;
    best_at = at;
  }
}

std::vector<TokenProb> top5(const trace::TopKRows& t, double lse, const DiffOptions& opt,
                            const std::vector<int32_t>& context) {
  std::vector<TokenProb> out;
  for (int k = 0; k < std::min(5, t.k); ++k) {
    TokenProb p;
    p.id = t.ids[static_cast<size_t>(k)];
    p.logit = t.logits[static_cast<size_t>(k)];
    p.prob = std::exp(p.logit - lse);
    p.text = decode_after(opt, context, {p.id});
    out.push_back(p);
  }
  return out;
}

// Rows read at once from a dataset of `width` floats: the largest power of two within
// block_bytes, so a block covers whole chunks of the writer's power-of-two chunk shapes.
int64_t block_rows(int64_t block_bytes, int64_t width) {
  const int64_t fit = block_bytes / (4 * std::max<int64_t>(1, width));
  int64_t rows = 1;
  while (rows * 2 <= fit) rows *= 2;
  return rows;
}

bool same_bits(const void* a, const void* b, size_t bytes) {
  return std::memcmp(a, b, bytes) == 0;
}

// Row r of one trace's block of logits rows (full: the block's full rows of width v, or empty).
LogitsRow logits_row(const trace::TopKRows& t, const std::vector<float>& lse,
                     std::span<const float> full, size_t v, int64_t r) {
  const size_t k = static_cast<size_t>(t.k);
  return LogitsRow{{t.ids.data() + r * k, k},
                   {t.logits.data() + r * k, k},
                   lse[static_cast<size_t>(r)],
                   full.empty() ? full : full.subspan(static_cast<size_t>(r) * v, v)};
}

// The storage whose ulps the noise sums count in: the coarser of the two sides'.
Storage noise_storage(NumberFormat a, NumberFormat b) {
  if (a == NumberFormat::bf16 || b == NumberFormat::bf16) return Storage::bf16;
  if (a == NumberFormat::f16 || b == NumberFormat::f16) return Storage::f16;
  return Storage::native;
}

// One row of a site into its bucket of the noise sums: the elements that differ, in which
// direction, and by how many ulps of `storage` (a finer side's values rounded to it first).
void add_noise_row(std::span<const float> a, std::span<const float> b, int64_t row,
                   const RowDrift& rd, Storage storage, SiteSums& sums) {
  const size_t bucket = static_cast<size_t>(position_bucket(row));
  if (sums.buckets.size() <= bucket) sums.buckets.resize(bucket + 1);
  BucketSums& k = sums.buckets[bucket];
  if (rd.non_finite) {
    ++k.nan;
    return;
  }
  ++k.rows;
  k.rel_l2 += std::isinf(rd.rel_l2) ? 1.0 : rd.rel_l2;  // ‖a‖ = 0, ‖b‖ > 0: all of b
  k.elements += static_cast<int64_t>(a.size());
  if (rd.identical) return;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] == b[i]) continue;
    const int64_t d = int64_t{ordinal(round_to(b[i], storage), storage)} -
                      int64_t{ordinal(round_to(a[i], storage), storage)};
    if (d == 0) continue;
    ++k.differ;
    k.up += d > 0;
    k.max_ulps = std::max(k.max_ulps, static_cast<double>(d < 0 ? -d : d));
  }
}

}  // namespace

// -1 for embed, l for "L<l>/...", n_layers for final_norm and any other name (the schema's
int site_layer(const std::string& site, int n_layers) {
  const int layer = trace::site_order(site).layer;  // INT_MAX / 2 and up: not a layer's site
  return layer < INT_MAX / 2 ? layer : n_layers;
}

SequenceDiff::SequenceDiff(const trace::TraceReader& a, const trace::TraceReader& b, int index,
                           const DiffOptions& opt, int n_layers)
    : A_(a),
      B_(b),
      idx_(index),
      opt_(opt),
      n_layers_(n_layers),
      sa_(a.sequence(index)),
      sb_(b.sequence(index)) {}

void SequenceDiff::prepare() {
  s_.index = idx_;
  s_.prompt_len_a = sa_.prompt_len;
  s_.prompt_len_b = sb_.prompt_len;
  s_.gen_len_a = sa_.gen_len;
  s_.gen_len_b = sb_.gen_len;
  s_.rows_a = sa_.rows;
  s_.rows_b = sb_.rows;
  s_.stop_reason_a = sa_.stop_reason;
  s_.stop_reason_b = sb_.stop_reason;
  if (opt_.noise_sums) {
    s_.noise.emplace();
    s_.noise->first_choice = std::max(0, sa_.prompt_len - 1);
  }
  align();
  compare_logits();
  select_sites();
}

void SequenceDiff::compare_hidden() {
  for (const auto& site : common_) {
    try {
      compare_site(site);
    } catch (const Error& e) {
      skip(trace::hidden_path(site.a->name), e);
    }
  }
  for (size_t i = 1; i < s_.layers.size(); ++i) {
    const double prev = s_.layers[i - 1].rel_l2_median, cur = s_.layers[i].rel_l2_median;
    if (prev > 0 && std::isfinite(prev) && !std::isnan(cur)) s_.layers[i].growth = cur / prev;
  }
}

SequenceReport SequenceDiff::finish(std::vector<Skipped>& skipped) {
  classify();
  skipped.insert(skipped.end(), skipped_.begin(), skipped_.end());
  return std::move(s_);
}

// Tokens, prompts, first flip and the compared range: rows whose inputs are identical.
void SequenceDiff::align() {
  const auto& ta = sa_.tokens;
  const auto& tb = sb_.tokens;
  const size_t common = std::min(ta.size(), tb.size());
  size_t d = 0;
  while (d < common && ta[d] == tb[d]) ++d;
  const int64_t min_prompt = std::min(sa_.prompt_len, sb_.prompt_len);
  s_.prompt_equal = sa_.prompt_len == sb_.prompt_len && static_cast<int64_t>(d) >= min_prompt;
  if (!s_.prompt_equal) {
    PromptDiff p;
    p.first_index = std::min<int64_t>(static_cast<int64_t>(d), min_prompt);
    p.prompt_a = slice(ta, 0, sa_.prompt_len);
    p.prompt_b = slice(tb, 0, sb_.prompt_len);
    p.text_a = safe_decode(opt_, p.prompt_a);
    p.text_b = safe_decode(opt_, p.prompt_b);
    s_.prompt_diff = std::move(p);
  }
  s_.compared = std::min<int64_t>(static_cast<int64_t>(d), std::min(sa_.rows, sb_.rows));
  if (s_.prompt_equal && d < common) {
    FirstFlip f;
    f.position = static_cast<int64_t>(d);
    f.step = static_cast<int>(f.position - sa_.prompt_len);
    f.row = f.position - 1;
    f.token_a = ta[d];
    f.token_b = tb[d];
    const auto before = slice(ta, f.position - opt_.context_tokens, f.position);
    f.text_a = decode_after(opt_, before, {f.token_a});
    f.text_b = decode_after(opt_, before, {f.token_b});
    f.context = safe_decode(opt_, before);
    f.continuation_a =
        decode_after(opt_, before, slice(ta, f.position, f.position + opt_.context_tokens));
    f.continuation_b =
        decode_after(opt_, before, slice(tb, f.position, f.position + opt_.context_tokens));
    if (sa_.topk > 0 && sb_.topk > 0 && f.row < sa_.rows && f.row < sb_.rows) try {
        const auto ka = A_.topk(idx_, f.row, 1), kb = B_.topk(idx_, f.row, 1);
        const double la = A_.lse(idx_, f.row, 1)[0], lb = B_.lse(idx_, f.row, 1)[0];
        f.top5_a = top5(ka, la, opt_, before);
        f.top5_b = top5(kb, lb, opt_, before);
        auto m = [](const std::vector<TokenProb>& t, bool logit) {
          if (t.size() < 2) return kNaN;
          return logit ? t[0].logit - t[1].logit : t[0].prob - t[1].prob;
        };
        f.margin_a = m(f.top5_a, false);
        f.margin_b = m(f.top5_b, false);
        f.margin_logit_a = m(f.top5_a, true);
        f.margin_logit_b = m(f.top5_b, true);
      } catch (const Error& e) {
        skip("logits at the flip", e);
      }
    s_.first_flip = std::move(f);
  } else if (ta.size() != tb.size() && s_.prompt_equal) {
    s_.notes.push_back(fmt::format(
        "no token differs, but A holds {} generated tokens (stop: {}) and B {} (stop: {})",
        sa_.gen_len, sa_.stop_reason, sb_.gen_len, sb_.stop_reason));
  }
  if (sa_.rows != sb_.rows && !s_.first_flip && s_.prompt_equal) {
    s_.notes.push_back(fmt::format("A holds {} positions and B {}: compared over the first {}",
                                   sa_.rows, sb_.rows, s_.compared));
  }
  if (!s_.prompt_equal) {
    s_.notes.push_back(fmt::format(
        "prompts differ: only the {} positions before the first differing token are compared",
        s_.compared));
  }
}

void SequenceDiff::skip(const std::string& what, const Error& e) {
  skipped_.push_back({idx_, what, e.what()});
}

// A dataset that cannot be read leaves the logits metrics out, named, not the whole sequence.
void SequenceDiff::compare_logits() {
  try {
    compare_logits_rows();
  } catch (const Error& e) {
    s_.has_logits = false;
    s_.logits = LogitsStats{};
    s_.positions.clear();
    skip("logits", e);
  }
}

// One block of logits rows of both traces: the top-K, lse and, where recorded, the full rows
// (these in the hidden rows' buffers, free until compare_hidden()).
struct SequenceDiff::LogitsBlock {
  int64_t begin = 0, rows = 0;
  trace::TopKRows ta, tb;
  std::vector<float> la, lb;
  std::span<const float> fa, fb;
  size_t va = 0, vb = 0;  // width of a full row (0 without full rows)

  LogitsRow row_a(int64_t r) const { return logits_row(ta, la, fa, va, r); }
  LogitsRow row_b(int64_t r) const { return logits_row(tb, lb, fb, vb, r); }

  // Whether every value of the block is bit-identical in A and B.
  bool identical() const {
    return ta.k == tb.k && ta.ids == tb.ids &&
           same_bits(ta.logits.data(), tb.logits.data(), ta.logits.size() * 4) &&
           same_bits(la.data(), lb.data(), la.size() * 4) &&
           (fa.empty() || fb.empty() ||
            (fa.size() == fb.size() && same_bits(fa.data(), fb.data(), fa.size() * 4)));
  }

  // KL over full rows is an exponential per logit: the rows of the block on every core (each
  // row's value is computed alone, so which thread computes it does not change it).
  std::vector<double> kl(bool kl_exact) const {
    std::vector<double> out(static_cast<size_t>(rows));
    const size_t threads =
        kl_exact ? std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 8) : 1;
    WorkPool::instance().run(threads, static_cast<size_t>(rows), threads, [&](size_t b, size_t e) {
      for (size_t r = b; r < e; ++r) {
        bool exact = false;
        out[r] =
            kl_divergence(row_a(static_cast<int64_t>(r)), row_b(static_cast<int64_t>(r)), exact);
      }
    });
    return out;
  }
};

// The logits statistics and per-position rows over the compared rows, read block by block.
void SequenceDiff::compare_logits_rows() {
  const int64_t n = s_.compared;
  if (sa_.topk == 0 || sb_.topk == 0) {
    if (sa_.topk != sb_.topk) {
      s_.notes.push_back(
          fmt::format("only {} recorded logits: no logits metrics", sa_.topk ? "A" : "B"));
    }
    return;
  }
  s_.has_logits = true;
  LogitsStats& L = s_.logits;
  L.topk_a = sa_.topk;
  L.topk_b = sb_.topk;
  L.top5_size = std::min({5, sa_.topk, sb_.topk});
  L.positions = n;
  L.kl_exact = sa_.has_full_logits && sb_.has_full_logits;
  if (n == 0) return;
  const int64_t block = block_rows(opt_.block_bytes, logits_width());
  LogitsSums sums;
  L.top5_jaccard_min = 1;
  L.kl_max = 0;
  L.margin_logit_min = kNaN;
  s_.positions.reserve(static_cast<size_t>(n));
  for (int64_t begin = 0; begin < n; begin += block) {
    const LogitsBlock k = read_logits_block(begin, std::min(block, n - begin));
    if (L.identical) L.identical = k.identical();
    const std::vector<double> kl = k.kl(L.kl_exact);
    for (int64_t r = 0; r < k.rows; ++r) measure_logits_row(k, r, kl[static_cast<size_t>(r)], sums);
  }
  L.logprob_rmse = std::sqrt(sums.sum_sq / static_cast<double>(n));
  L.top5_jaccard_mean = sums.sum_j / static_cast<double>(n);
  L.kl_mean = sums.sum_kl / static_cast<double>(n);
}

// The widest logits dataset read at once: the full row (V floats) or the top-K.
int64_t SequenceDiff::logits_width() {
  int64_t width = std::max(sa_.topk, sb_.topk);
  if (sa_.has_full_logits)
    width = std::max<int64_t>(width, A_.full_logits(idx_, 0, 1, buf_a_).size());
  if (sb_.has_full_logits)
    width = std::max<int64_t>(width, B_.full_logits(idx_, 0, 1, buf_b_).size());
  return width;
}

// Rows begin.. of both traces' logits datasets, in the order A's and B's top-K, lse, full.
SequenceDiff::LogitsBlock SequenceDiff::read_logits_block(int64_t begin, int64_t rows) {
  LogitsBlock k;
  k.begin = begin;
  k.rows = rows;
  k.ta = A_.topk(idx_, begin, rows);
  k.tb = B_.topk(idx_, begin, rows);
  k.la = A_.lse(idx_, begin, rows);
  k.lb = B_.lse(idx_, begin, rows);
  if (sa_.has_full_logits) k.fa = A_.full_logits(idx_, begin, rows, buf_a_);
  if (sb_.has_full_logits) k.fb = B_.full_logits(idx_, begin, rows, buf_b_);
  k.va = k.fa.size() / static_cast<size_t>(rows);
  k.vb = k.fb.size() / static_cast<size_t>(rows);
  return k;
}

// Row r of a block: its position's metrics into s_.positions, and into the sequence's logits
// statistics and sums.
void SequenceDiff::measure_logits_row(const LogitsBlock& k, int64_t r, double kl,
                                      LogitsSums& sums) {
  LogitsStats& L = s_.logits;
  const int64_t first_choice = std::max(0, sa_.prompt_len - 1);
  const int64_t row = k.begin + r;
  const LogitsRow ra = k.row_a(r), rb = k.row_b(r);
  PositionRow p;
  p.jaccard = jaccard(ra.ids, rb.ids, L.top5_size);
  const Margin ma = margin(ra), mb = margin(rb);
  p.margin_logit_a = ma.logit;
  p.margin_logit_b = mb.logit;
  p.margin_prob_a = ma.prob;
  p.margin_prob_b = mb.prob;
  bool bounded = false;
  const double dl = top1_logprob_delta(ra, rb, bounded);
  sums.sum_sq += dl * dl;
  L.logprob_bounded += bounded;
  p.kl = kl;
  p.logit_drift = logit_drift(ra, rb, L.top5_size);
  p.top1_differs = ra.ids[0] != rb.ids[0];
  L.top1_mismatch += p.top1_differs;
  if (row >= first_choice) {
    ++L.choice_rows;
    // At risk: a perturbation of the observed size acting in opposite directions on the two
    // leading tokens (2·drift) would close A's top-1/top-2 logit margin. NaN counts.
    p.at_risk = !(p.margin_logit_a >= 2 * p.logit_drift);
    L.at_risk += p.at_risk;
    if (!std::isnan(ma.logit) &&
        (std::isnan(L.margin_logit_min) || ma.logit < L.margin_logit_min)) {
      L.margin_logit_min = ma.logit;
      L.margin_logit_min_position = row;
    }
  }
  sums.sum_j += p.jaccard;
  L.top5_jaccard_min = std::min(L.top5_jaccard_min, p.jaccard);
  sums.sum_kl += p.kl;
  track_max(p.kl, row, L.kl_max, L.kl_max_position);
  s_.positions.push_back(p);
  if (s_.noise) add_margin_row(ra, rb, row, row >= first_choice, p);
}

// A logits row's part of the noise sums: its bucket's margin change and, for a choice row, A's
// margin and the change.
void SequenceDiff::add_margin_row(const LogitsRow& ra, const LogitsRow& rb, int64_t row,
                                  bool choice, const PositionRow& p) {
  NoiseSums& n = *s_.noise;
  const int b = position_bucket(row);
  if (n.margins.size() <= static_cast<size_t>(b)) n.margins.resize(static_cast<size_t>(b) + 1);
  MarginSums& m = n.margins[static_cast<size_t>(b)];
  const double dm = margin_change(ra, rb);
  if (!std::isnan(dm)) {
    ++m.rows;
    m.abs_change += std::abs(dm);
    m.changed += dm != 0;
  }
  m.top1 += p.top1_differs;
  if (choice) {
    n.margin_a.push_back(static_cast<float>(p.margin_logit_a));
    n.margin_change.push_back(static_cast<float>(dm));
    n.flipped |= p.top1_differs;
  }
}

// The sites both traces hold at the same width, in A's (forward) order; the others are named.
void SequenceDiff::select_sites() {
  std::map<std::string, const trace::SiteInfo*> in_b;
  for (const auto& site : sb_.sites) in_b[site.name] = &site;
  std::set<std::string> seen;
  for (const auto& site : sa_.sites) {
    seen.insert(site.name);
    auto it = in_b.find(site.name);
    if (it == in_b.end()) {
      s_.sites_only_a.push_back(site.name);
    } else if (site.shape.size() != 2 || it->second->shape.size() != 2 ||
               site.shape[1] != it->second->shape[1]) {
      s_.notes.push_back(fmt::format("site {} has width {} in A and {} in B: not compared",
                                     site.name, site.shape.size() > 1 ? site.shape[1] : 0,
                                     it->second->shape.size() > 1 ? it->second->shape[1] : 0));
    } else {
      common_.push_back({&site, it->second, std::nullopt, std::nullopt});
    }
  }
  for (const auto& site : sb_.sites) {
    if (!seen.count(site.name)) s_.sites_only_b.push_back(site.name);
  }
  // The layer view uses each layer's residual output, or its last recorded site.
  for (const auto& c : common_) {
    const int l = site_layer(c.a->name, n_layers_);
    if (l < 0 || l >= n_layers_) continue;
    auto& cur = layer_site_[l];
    if (cur.size() < 4 || cur.substr(cur.size() - 4) != "/out") cur = c.a->name;
  }
  // Located all or none: a site that cannot be (a filtered trace, a damaged chunk, a dataset
  // that does not open) sends the whole comparison through the readers, where its error is
  // named in site order.
  located_ = true;
  for (auto& c : common_) {
    try {
      c.plain_a = A_.plain_hidden(idx_, c.a->name, s_.compared);
      c.plain_b = B_.plain_hidden(idx_, c.b->name, s_.compared);
    } catch (const Error&) {
      located_ = false;
    }
    if (!c.plain_a || !c.plain_b) located_ = false;
    if (!located_) break;
  }
  if (!located_) {
    for (auto& c : common_) c.plain_a = c.plain_b = std::nullopt;
  }
}

// One common site: every compared row read and measured before anything reaches the report, so
// a site whose data cannot be read leaves no partial trace in it.
void SequenceDiff::compare_site(const CommonSite& site) {
  const int64_t n = s_.compared;
  const trace::SiteInfo* sa = site.a;
  const trace::SiteInfo* sb = site.b;
  std::optional<Onset> onset;
  bool identical = true;
  {
    SiteDrift d;
    d.site = sa->name;
    d.layer = site_layer(sa->name, n_layers_);
    d.dtype = coarser_storage(sa->elem, sb->elem);
    d.noise_floor = noise_floor(sa->elem, sb->elem);
    const int64_t width = sa->shape[1];
    const int64_t block = block_rows(opt_.block_bytes, width);
    std::vector<double> rel(static_cast<size_t>(n)), cos(static_cast<size_t>(n)),
        mabs(static_cast<size_t>(n));
    d.rel_l2_max = 0;
    d.max_abs = 0;
    d.cos_min = 1;
    int64_t cos_at = -1, abs_at = -1;
    SiteSums sums;
    const Storage storage = noise_storage(sa->elem, sb->elem);
    if (s_.noise) {
      sums.site = d.site;
      sums.storage = d.dtype;
    }
    for (int64_t begin = 0; begin < n; begin += block) {
      const int64_t cnt = std::min(block, n - begin);
      const auto va = site.plain_a ? site.plain_a->read(begin, cnt, buf_a_)
                                   : A_.hidden(idx_, d.site, begin, cnt, buf_a_);
      const auto vb = site.plain_b ? site.plain_b->read(begin, cnt, buf_b_)
                                   : B_.hidden(idx_, d.site, begin, cnt, buf_b_);
      for (int64_t r = 0; r < cnt; ++r) {
        const size_t off = static_cast<size_t>(r * width), w = static_cast<size_t>(width);
        const RowDrift rd = row_drift({va.data() + off, w}, {vb.data() + off, w});
        const int64_t row = begin + r;
        rel[static_cast<size_t>(row)] = rd.rel_l2;
        cos[static_cast<size_t>(row)] = rd.cos;
        mabs[static_cast<size_t>(row)] = rd.max_abs;
        identical &= rd.identical;
        d.nan_positions += rd.non_finite;
        const bool above = rd.non_finite || rd.rel_l2 > d.noise_floor;
        d.above_floor += above;
        if (above && !onset) onset = Onset{d.site, row, rd.rel_l2, d.noise_floor};
        track_max(rd.rel_l2, row, d.rel_l2_max, d.rel_l2_max_position);
        track_max(rd.max_abs, row, d.max_abs, abs_at);
        track_max(-rd.cos, row, d.cos_min, cos_at);  // the minimum, as the max of −cos
        if (s_.noise) {
          add_noise_row({va.data() + off, w}, {vb.data() + off, w}, row, rd, storage, sums);
        }
      }
    }
    s_.hidden_identical &= identical;
    if (!s_.onset) s_.onset = onset;
    if (cos_at >= 0) d.cos_min = -d.cos_min;
    if (n == 0) d.rel_l2_max_position = -1;
    const int layer = d.layer;
    auto ls = layer_site_.find(layer);
    if (ls != layer_site_.end() && ls->second == d.site) {
      LayerDrift ld;
      ld.layer = layer;
      ld.site = d.site;
      ld.rel_l2.assign(rel.begin(), rel.end());
      s_.layers.push_back(std::move(ld));
    }
    d.rel_l2_median = n ? median_finite(rel) : 0;
    d.cos_median = n ? median_finite(cos) : 1;
    d.max_abs_median = n ? median_finite(mabs) : 0;
    if (!s_.layers.empty() && s_.layers.back().site == d.site) {
      s_.layers.back().rel_l2_median = d.rel_l2_median;
    }
    s_.drift.push_back(std::move(d));
    if (s_.noise) s_.noise->sites.push_back(std::move(sums));
  }
}

void SequenceDiff::classify() {
  if (s_.noise && s_.first_flip) s_.noise->flipped = true;
  if (!s_.prompt_equal) {
    s_.verdict = Verdict::prompts_differ;
  } else if (s_.first_flip) {
    s_.verdict = Verdict::flip;
  } else if (s_.compared == 0) {
    s_.verdict = Verdict::empty;
  } else if (s_.hidden_identical && (!s_.has_logits || s_.logits.identical)) {
    s_.verdict = Verdict::identical;
  } else {
    s_.verdict = Verdict::drift;
  }
}

}  // namespace ds::diff
