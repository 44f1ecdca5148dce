// The noise floor's section of the terminal diff report (noise_terminal.h).
#include "viewer/noise_terminal.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace ds::viewer {
namespace {

std::string p_cell(double p) {
  return p < 0.001 ? "<0.001" : fmt::format("{:.3f}", p);
}

std::string perturbation_text(const std::string& p) {
  if (p == "sr") return "+-1 ulp stochastic rounding of op outputs";
  if (p == "reorder+sr") return "valid reduction orders and +-1 ulp stochastic rounding";
  return "valid reduction orders";
}

}  // namespace

std::string floor_units_text(double drift, double floor_units) {
  if (std::isnan(floor_units)) {
    return drift == 0 ? "0 (replays: 0)" : fmt::format("{} (replays: 0)", sci(drift));
  }
  return fmt::format("{} ({:.2g} × floor)", sci(drift), floor_units);
}

void noise_terminal(TerminalText& o, const diff::NoiseReport& n, int width, bool all_sites) {
  o.line();
  o.line(o.bold(rule("against the noise floor", width)));
  o.line(fmt::format("floor     {} · {} replays of A under {} · alpha {:g}", n.floor, n.runs,
                     perturbation_text(n.perturbation), n.alpha));
  o.line("verdict   " + (n.beyond ? o.red(n.headline) : o.green(n.headline)));
  // the sites: significant ones and the largest in floor units (or all)
  std::vector<const diff::NoiseSite*> shown;
  for (const auto& s : n.sites) shown.push_back(&s);
  if (!all_sites && shown.size() > 8) {
    std::vector<const diff::NoiseSite*> by_stat = shown;
    std::stable_sort(by_stat.begin(), by_stat.end(),
                     [](const auto* a, const auto* b) { return a->stat > b->stat; });
    std::vector<const diff::NoiseSite*> keep;
    for (const auto* s : shown) {
      const bool top = std::find(by_stat.begin(), by_stat.begin() + 5, s) != by_stat.begin() + 5;
      if (s->significant || top) keep.push_back(s);
    }
    shown = keep;
  }
  o.line(fmt::format("  {:<16}  {:<26}  {:>7}  {:>7}  {}", "site", "drift (in floor units)", "p",
                     "p (fw)", "largest departure"));
  for (const auto* s : shown) {
    const std::string row = fmt::format("  {:<16}  {:<26}  {:>7}  {:>7}  {}", clip(s->site, 16),
                                        floor_units_text(s->drift, s->floor_units), p_cell(s->p),
                                        p_cell(s->p_family), s->driver.empty() ? "-" : s->driver);
    o.line(s->significant ? o.red(row) : row);
  }
  if (shown.size() < n.sites.size()) {
    o.line(o.dim(fmt::format("  … {} more sites within the floor (--sites lists every one)",
                             n.sites.size() - shown.size())));
  }
  o.line(
      fmt::format("flips     {} of {} sequences flipped; {:.2f} expected from the floor "
                  "(P(at least {}) = {}); the replays flipped {:.2f} on average (at most {})",
                  n.observed_flips, n.sequences, n.expected_flips, n.observed_flips,
                  p_cell(n.p_flips), n.replay_mean_flips, n.replay_max_flips));
  for (const auto& q : n.per_sequence) {
    if (!q.flipped && q.p_flip < 0.05) continue;
    o.line(fmt::format("          seq {:>4}  P(flip) {:.3f}  {}", q.seq, q.p_flip,
                       !q.compared ? "not compared" : (q.flipped ? "flipped" : "-")));
  }
  for (const auto& note : n.notes) o.line(o.yellow("note") + "      " + note);
}

}  // namespace ds::viewer
