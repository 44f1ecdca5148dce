// The explain report's aggregate (explain_report.h): causes with their counts, knob effects, the
// summary line.
#include "diff/explain_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace ds::diff {

std::string knob_set_text(const std::vector<std::string>& knobs) {
  return fmt::format("{{{}}}", fmt::join(knobs, ", "));
}

std::string onset_column(const FlipCase& c, const ExplainReport* explained) {
  if (explained != nullptr) {
    for (const FlipExplanation& f : explained->flips) {
      if (f.seq == c.seq && !f.place.empty()) return f.place;
    }
  }
  return c.has_onset ? c.onset_site : "–";
}

void explain_aggregate(ExplainReport& r) {
  r.explained = r.no_cause = r.unresolved = 0;
  r.causes.clear();
  std::map<std::vector<std::string>, size_t> cause_at;
  std::vector<std::map<std::string, int>> op_counts;
  for (const FlipExplanation& f : r.flips) {
    if (f.verdict == "explained") {
      ++r.explained;
    } else if (f.verdict == "no_cause") {
      ++r.no_cause;
    } else {
      ++r.unresolved;
    }
    for (const auto& set : f.knob_sets) {
      auto [it, added] = cause_at.emplace(set, r.causes.size());
      if (added) {
        r.causes.push_back({set, {}, {}});
        op_counts.emplace_back();
      }
      r.causes[it->second].seqs.push_back(f.seq);
      if (f.ops.status == "found" && f.ops.knobs == set && !f.ops.ops.empty()) {
        ++op_counts[it->second][f.ops.ops.front()];
      }
    }
  }
  for (size_t c = 0; c < r.causes.size(); ++c) {
    for (const auto& [op, n] : op_counts[c]) r.causes[c].ops.push_back({op, n});
    std::stable_sort(r.causes[c].ops.begin(), r.causes[c].ops.end(),
                     [](const auto& x, const auto& y) { return x.flips > y.flips; });
  }
  std::stable_sort(r.causes.begin(), r.causes.end(),
                   [](const auto& x, const auto& y) { return x.seqs.size() > y.seqs.size(); });
  r.effects.clear();
  for (size_t k = 0; k < r.knobs.size(); ++k) {
    KnobEffect e;
    e.knob = r.knobs[k].name;
    double main = 0, share = 0;
    int shares = 0;
    for (const FlipExplanation& f : r.flips) {
      for (const auto& set : f.knob_sets) {
        e.in_sets += std::find(set.begin(), set.end(), e.knob) != set.end() ? 1 : 0;
      }
      if (k < f.main_effect.size() && std::isfinite(f.main_effect[k])) {
        ++e.measured;
        main += f.main_effect[k];
        if (k < f.share.size() && std::isfinite(f.share[k])) {
          share += f.share[k];
          ++shares;
        }
      }
    }
    e.main_mean = e.measured > 0 ? main / e.measured : NAN;
    e.share_mean = shares > 0 ? share / shares : NAN;
    r.effects.push_back(e);
  }
  std::map<std::vector<std::string>, std::pair<double, int>> inter;
  for (const FlipExplanation& f : r.flips) {
    for (const auto& [knobs, value] : f.interactions) {
      auto& [sum, count] = inter[knobs];
      sum += value;
      ++count;
    }
  }
  r.interactions.clear();
  for (const auto& [knobs, sc] : inter) r.interactions.push_back({knobs, sc.first / sc.second});
  std::stable_sort(r.interactions.begin(), r.interactions.end(), [](const auto& x, const auto& y) {
    return std::fabs(x.second) > std::fabs(y.second);
  });
  const int n = static_cast<int>(r.flips.size());
  std::string s = fmt::format("{} flip{}: ", n, n == 1 ? "" : "s");
  std::vector<std::string> parts;
  for (const CauseCount& c : r.causes) {
    std::string part = fmt::format("{} {} of {}", knob_set_text(c.knobs), c.seqs.size(), n);
    if (!c.ops.empty()) part += fmt::format(" (first op {} in {})", c.ops[0].op, c.ops[0].flips);
    parts.push_back(part);
  }
  if (r.no_cause > 0) parts.push_back(fmt::format("no cause among the knobs {}", r.no_cause));
  if (r.unresolved > 0) parts.push_back(fmt::format("unresolved {}", r.unresolved));
  r.summary =
      s + (parts.empty() ? "nothing to explain" : fmt::format("{}", fmt::join(parts, ", ")));
}

}  // namespace ds::diff
