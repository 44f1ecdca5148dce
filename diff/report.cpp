// The report's verdict texts, summary ordering and invariants.
#include "diff/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

#include "trace/schema.h"

namespace ds::diff {

std::string verdict_text(const SequenceReport& s) {
  switch (s.verdict) {
    case Verdict::identical:
      return "identical";
    case Verdict::drift:
      return "drift without flip";
    case Verdict::flip:
      return fmt::format("flip at step {}", s.first_flip ? s.first_flip->step : -1);
    case Verdict::prompts_differ:
      return fmt::format("prompts differ at position {}",
                         s.prompt_diff ? s.prompt_diff->first_index : 0);
    case Verdict::empty:
      return "nothing to compare";
  }
  return "?";
}

const char* kernel_tables_name(KernelTables t) {
  switch (t) {
    case KernelTables::neither:
      return "neither";
    case KernelTables::only_a:
      return "only_a";
    case KernelTables::only_b:
      return "only_b";
    case KernelTables::both:
      return "both";
  }
  return "?";
}

namespace {

bool same_configs(const std::vector<KernelLaunch>& a, const std::vector<KernelLaunch>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](const KernelLaunch& x, const KernelLaunch& y) {
                      return x.grid == y.grid && x.block == y.block && x.launches == y.launches;
                    });
}

void check_kernels(const KernelReport& k, const std::function<void(const std::string&)>& fail) {
  if (k.tables != KernelTables::both && (!k.sites.empty() || k.passes_compared != 0)) {
    fail("kernels compared without both tables");
  }
  if (static_cast<int>(k.sites.size()) > k.sites_compared) fail("more kernel sites than compared");
  int64_t dur_a = 0, dur_b = 0;
  for (size_t i = 0; i < k.sites.size(); ++i) {
    const SiteKernels& s = k.sites[i];
    const std::string& prev = i > 0 ? k.sites[i - 1].site : std::string();
    if (i > 0 && !(std::pair(trace::site_order(prev), prev) <
                   std::pair(trace::site_order(s.site), s.site))) {
      fail("kernel sites out of forward order at " + s.site);
    }
    if (s.only_a.empty() && s.only_b.empty() && s.changed.empty()) {
      fail("kernel site without a difference: " + s.site);
    }
    dur_a += s.duration_ns_a;
    dur_b += s.duration_ns_b;
    int64_t la = 0, lb = 0;
    auto use = [&](const KernelUse& u) {
      int64_t n = 0;
      for (const auto& c : u.configs) n += c.launches;
      if (u.launches <= 0 || n != u.launches) fail("kernel launch counts disagree at " + s.site);
    };
    for (const auto& u : s.only_a) use(u), la += u.launches;
    for (const auto& u : s.only_b) use(u), lb += u.launches;
    for (const auto& c : s.changed) {
      use(c.a);
      use(c.b);
      la += c.a.launches;
      lb += c.b.launches;
      if (c.a.op != c.b.op || c.a.name != c.b.name)
        fail("changed kernel of two names at " + s.site);
      if (same_configs(c.a.configs, c.b.configs))
        fail("changed kernel without change at " + s.site);
    }
    if (la > s.launches_a || lb > s.launches_b) fail("more listed launches than at site " + s.site);
  }
  if (dur_a > k.duration_ns_a || dur_b > k.duration_ns_b) fail("site device time > total");
}

}  // namespace

std::vector<const SequenceReport*> by_first_flip(const Report& r) {
  std::vector<const SequenceReport*> out;
  for (const auto& s : r.sequences) out.push_back(&s);
  auto key = [](const SequenceReport* s) {
    const int group = s->first_flip ? 0 : !s->prompt_equal ? 1 : 2;
    const int step = s->first_flip ? s->first_flip->step : 0;
    return std::tuple(group, step, s->index);
  };
  std::stable_sort(out.begin(), out.end(), [&](const SequenceReport* a, const SequenceReport* b) {
    return key(a) < key(b);
  });
  return out;
}

std::vector<std::string> check_consistency(const Report& r) {
  std::vector<std::string> bad;
  auto fail = [&](int seq, const std::string& what) {
    bad.push_back(seq < 0 ? what : fmt::format("seq {}: {}", seq, what));
  };
  int diverged = 0, prompts = 0;
  for (const auto& s : r.sequences) {
    const int i = s.index;
    diverged += s.first_flip.has_value();
    prompts += !s.prompt_equal;
    if (s.first_flip) {
      const auto& f = *s.first_flip;
      if (f.position != s.prompt_len_a + f.step) fail(i, "flip position != prompt_len + step");
      if (f.row != f.position - 1) fail(i, "flip row != position - 1");
      if (f.token_a == f.token_b) fail(i, "flip with equal tokens");
      if (s.verdict != Verdict::flip) fail(i, "flip without flip verdict");
      if (s.compared > f.position) fail(i, "compared past the flip");
      if (!s.prompt_equal) fail(i, "flip reported with different prompts");
    } else if (s.verdict == Verdict::flip) {
      fail(i, "flip verdict without a flip");
    }
    if (s.prompt_equal == s.prompt_diff.has_value())
      fail(i, "prompt_equal disagrees with prompt_diff");
    if (s.compared > std::min(s.rows_a, s.rows_b)) fail(i, "compared more rows than held");
    if (s.has_logits) {
      const auto& L = s.logits;
      if (L.positions != s.compared) fail(i, "logits positions != compared");
      if (static_cast<int64_t>(s.positions.size()) != s.compared)
        fail(i, "per-position rows != compared");
      auto in01 = [](double x) { return x >= 0 && x <= 1; };
      if (s.compared > 0 && !(in01(L.top5_jaccard_mean) && in01(L.top5_jaccard_min) &&
                              L.top5_jaccard_min <= L.top5_jaccard_mean + 1e-12)) {
        fail(i, "top-5 Jaccard outside [0,1] or min > mean");
      }
      for (const auto& p : s.positions) {
        if (!in01(p.jaccard)) fail(i, "a position's Jaccard is outside [0,1]");
        if (p.kl < 0) fail(i, "negative KL");
      }
      if (L.at_risk > L.choice_rows) fail(i, "more at-risk rows than choice rows");
      if (!std::isnan(L.kl_max) && L.kl_mean > L.kl_max + 1e-12) fail(i, "KL mean > max");
    } else if (!s.positions.empty()) {
      fail(i, "per-position rows without logits");
    }
    std::set<std::string> sites;
    for (const auto& d : s.drift) {
      if (!sites.insert(d.site).second) fail(i, "two drift rows for site " + d.site);
      if (!std::isnan(d.rel_l2_max) && d.rel_l2_median > d.rel_l2_max) {
        fail(i, "median > max at site " + d.site);
      }
      if (d.rel_l2_max_position >= s.compared)
        fail(i, "max position outside the compared rows at " + d.site);
    }
    for (const auto& site : s.sites_only_a) {
      if (sites.count(site)) fail(i, "site " + site + " both common and only in A");
    }
    if (s.onset) {
      if (!sites.count(s.onset->site)) fail(i, "onset at a site without a drift row");
      if (s.onset->position >= s.compared) fail(i, "onset outside the compared rows");
    }
    for (const auto& l : s.layers) {
      if (static_cast<int64_t>(l.rel_l2.size()) != s.compared)
        fail(i, "layer row length != compared");
      if (!sites.count(l.site)) fail(i, "layer row for a site without a drift row");
    }
    if (s.verdict == Verdict::identical && (s.onset || !s.hidden_identical)) {
      fail(i, "identical verdict with drift");
    }
  }
  if (r.summary.sequences != static_cast<int>(r.sequences.size())) fail(-1, "summary.sequences");
  if (r.summary.diverged != diverged) fail(-1, "summary.diverged != flips");
  if (r.summary.prompts_differ != prompts) fail(-1, "summary.prompts_differ");
  const double pct = r.summary.sequences ? 100.0 * diverged / r.summary.sequences : 0.0;
  if (std::abs(r.summary.div_percent - pct) > 1e-9) fail(-1, "summary.div_percent");
  check_kernels(r.kernels, [&](const std::string& what) { fail(-1, what); });
  return bad;
}

}  // namespace ds::diff
