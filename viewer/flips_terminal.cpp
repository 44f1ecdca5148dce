// Terminal rendering of the flips' aggregate (layout in viewer/flips_terminal.h).
#include "viewer/flips_terminal.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "viewer/explain_terminal.h"
#include "viewer/position_bins.h"
#include "viewer/text_layout.h"

namespace ds::viewer {
namespace {

using diff::FlipAggregate;
using diff::PlaceHistogram;
using diff::Spread;

constexpr int kBarCells = 30;  // a full histogram bar
constexpr int kStepRows = 10;  // rows of the first-flip step histogram at most

std::string share(int count, int of) {
  return of > 0 ? diff::percent(1.0 * count / of) : "–";
}

std::string spread_line(const Spread& s, bool whole) {
  if (s.n == 0) return "none";
  auto v = [&](double x) { return whole ? fmt::format("{:g}", x) : sci(x); };
  return fmt::format("min {} · q1 {} · median {} · q3 {} · max {}", v(s.min), v(s.q1), v(s.median),
                     v(s.q3), v(s.max));
}

// One histogram row: label, bar scaled to the largest count, count and share of the flips.
std::string count_row(const std::string& label, int count, int most, int flips) {
  const int cells = most > 0 ? (count * kBarCells + most - 1) / most : 0;
  return fmt::format("  {} {} {:>4}  {:>4}", pad(label, 22), bar(cells, kBarCells, "▇"), count,
                     share(count, flips));
}

void steps_section(TerminalText& o, const FlipAggregate& a, int width) {
  o.line(rule("first-flip step", width));
  o.line("  " + spread_line(a.steps.spread, true));
  if (a.steps.steps.empty()) return;
  const Binning bins(a.steps.steps.back() + 1, kStepRows);
  std::vector<int> count(static_cast<size_t>(bins.n), 0);
  for (int s : a.steps.steps) ++count[static_cast<size_t>(s / bins.per)];
  const int most = *std::max_element(count.begin(), count.end());
  for (int k = 0; k < bins.n; ++k) {
    const int64_t lo = bins.begin(k), hi = bins.end(k) - 1;
    const std::string label =
        lo == hi ? fmt::format("step {}", lo) : fmt::format("steps {}–{}", lo, hi);
    o.line(count_row(label, count[static_cast<size_t>(k)], most, a.flips));
  }
}

void margins_section(TerminalText& o, const FlipAggregate& a, int width) {
  const auto& m = a.margins;
  const double t = a.near_tie_logit;
  o.line(rule("margin at the flip (A's top-1 − top-2 logit)", width));
  const int most = std::max({m.decades[0], m.decades[1], m.decades[2], m.decades[3], m.unknown});
  o.line(count_row(fmt::format("near-tie  < {:g}", t), m.decades[0], most, a.flips));
  o.line(count_row(fmt::format("drift  {:g} – {:g}", t, 10 * t), m.decades[1], most, a.flips));
  o.line(
      count_row(fmt::format("drift  {:g} – {:g}", 10 * t, 100 * t), m.decades[2], most, a.flips));
  o.line(count_row(fmt::format("drift  ≥ {:g}", 100 * t), m.decades[3], most, a.flips));
  if (m.unknown > 0) o.line(count_row("margin unknown", m.unknown, most, a.flips));
  o.line(fmt::format("  near-ties {} ({}), accumulated drift {} ({}); margin {}", m.near_tie,
                     share(m.near_tie, a.flips), m.accumulated, share(m.accumulated, a.flips),
                     spread_line(m.margin_logit_a, false)));
  o.line("  logit drift at the flip row: " + spread_line(m.logit_drift, false));
}

void places_section(TerminalText& o, const std::string& title, const PlaceHistogram& h,
                    const FlipAggregate& a, int width, const char* none) {
  o.line(rule(title, width));
  int most = h.none;
  for (const auto& c : h.cells) most = std::max(most, c.count);
  std::string kinds;
  for (const auto& k : h.kinds) {
    kinds += fmt::format("{}{} {} ({})", kinds.empty() ? "" : " · ", k.kind, k.count,
                         share(k.count, a.flips));
  }
  if (!kinds.empty()) o.line("  by kind: " + kinds);
  for (const auto& c : h.cells) {
    const std::string label =
        c.place.layer >= 0 ? fmt::format("L{} {}", c.place.layer, c.place.kind) : c.place.kind;
    o.line(count_row(label, c.count, most, a.flips));
  }
  if (h.none > 0) o.line(count_row(none, h.none, most, a.flips));
}

void layers_section(TerminalText& o, const FlipAggregate& a, int width) {
  if (a.layers.empty()) return;
  o.line(rule("drift per layer at the flip row (relative L2 of L<l>/out across the flips)", width));
  o.line("  above floor: flips above the site floor, the diff's own noise floor of L<l>/out (the");
  o.line(fmt::format("  rounding of its {}storage, as for the onset), not the attribution's",
                     a.site_storage.empty() ? "" : a.site_storage + " "));
  o.line(fmt::format("  {:>5}  {:>9}  {:>19}  {:>9}  {:>7}  {:>11}  {:>10}  {:>9}", "layer",
                     "median", "q1 .. q3", "max", "growth", "above floor", "site floor", "local"));
  for (const auto& l : a.layers) {
    o.line(fmt::format(
        "  {:>5}  {:>9}  {:>19}  {:>9}  {:>7}  {:>11}  {:>10}  {:>9}", l.layer,
        sci(l.rel_l2.median), l.rel_l2.n ? sci(l.rel_l2.q1) + " .. " + sci(l.rel_l2.q3) : "",
        sci(l.rel_l2.max),
        std::isnan(l.growth_median) ? "" : fmt::format("×{:.2f}", l.growth_median),
        fmt::format("{}/{}", l.above_floor, l.rel_l2.n),
        std::isnan(l.site_floor) ? "mixed" : sci(l.site_floor), sci(l.local.median)));
  }
}

void cases_section(TerminalText& o, const FlipAggregate& a, int width,
                   const diff::ExplainReport* explained) {
  o.line(rule("sequences", width));
  o.line(fmt::format("  {:>5}  {:>5}  {:>9}  {:<11}  {:<15}  {:<15}  {}", "seq", "step", "margin",
                     "class", "onset", "born in", "most local"));
  for (const auto& c : a.cases) {
    if (!c.flipped) continue;
    o.line(fmt::format(
        "  {:>5}  {:>5}  {:>9}  {:<11}  {:<15}  {:<15}  {}", c.seq, c.step, sci(c.margin_logit_a),
        diff::margin_class_name(c.margin), diff::onset_column(c, explained),
        c.has_birth ? c.birth_block : "–",
        c.has_top ? fmt::format("{} ({})", c.top_block, diff::percent(c.top_share)) : "–"));
  }
}

}  // namespace

std::string render_flips_terminal(const FlipAggregate& a, int width,
                                  const diff::ExplainReport* explained) {
  TerminalText o(false, width);
  o.line(fmt::format("driftscope flips: {} sequence{} zoomed, {} flip{}", a.pairs,
                     a.pairs == 1 ? "" : "s", a.flips, a.flips == 1 ? "" : "s"));
  o.line(fmt::format(
      "near-tie threshold {:g} logit; local error against the attribution's noise floor {} ({})",
      a.near_tie_logit, sci(a.noise_floor), a.storage.empty() ? "–" : a.storage));
  o.line();
  o.line(a.summary);
  if (a.flips > 0) {
    o.line();
    steps_section(o, a, width);
    margins_section(o, a, width);
    places_section(o, "where the drift sets in (the diff's onset site)", a.onset, a, width,
                   "no onset");
    places_section(o,
                   "where the local error is born (first block above the attribution's noise "
                   "floor)",
                   a.birth, a, width, "none above the floor");
    places_section(o, "where the most local error is added (largest block)", a.top, a, width,
                   "no local error");
    layers_section(o, a, width);
    cases_section(o, a, width, explained);
  }
  if (!a.notes.empty()) {
    o.line(rule("notes", width));
    for (const auto& n : a.notes) o.line("  " + n);
  }
  std::string text = std::move(o).str();
  if (explained != nullptr) text += render_explain_sections(*explained, width);
  return text;
}

void print_flips_terminal(std::FILE* out, const FlipAggregate& a, int width) {
  const std::string s = render_flips_terminal(a, width);
  std::fwrite(s.data(), 1, s.size(), out);
}

}  // namespace ds::viewer
