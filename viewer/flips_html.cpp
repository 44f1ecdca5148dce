// The HTML page of the flips' aggregate (layout in viewer/flips_html.h): the diff report's page
// shell, stylesheet and escaping; the terminal view's content.
#include "viewer/flips_html.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "viewer/explain_html.h"
#include "viewer/html_charts.h"
#include "viewer/html_escape.h"
#include "viewer/html_parts.h"

namespace ds::viewer {
namespace {

using diff::FlipAggregate;
using diff::PlaceHistogram;
using diff::Spread;

constexpr int kBarWidth = 240;  // pixels of a full count bar

std::string share(int count, int of) {
  return of > 0 ? diff::percent(1.0 * count / of) : "–";
}

// A count as a bar scaled to the largest count of its table (the diff page's .bar colour).
std::string count_bar(int count, int most) {
  const int w = most > 0 ? (count * kBarWidth + most - 1) / most : 0;
  return fmt::format(
      "<svg class=\"cbar\" width=\"{}\" height=\"12\" viewBox=\"0 0 {} 12\"><rect class=\"hf\" "
      "x=\"0\" y=\"0\" width=\"{}\" height=\"12\"/><rect class=\"bar\" x=\"0\" y=\"1\" "
      "width=\"{}\" height=\"10\"/></svg>",
      kBarWidth, kBarWidth, kBarWidth, w);
}

// One row of a count table: label, bar, count, share of the flips.
std::string count_row(const std::string& attrs, const std::string& label, int count, int most,
                      int flips) {
  return fmt::format(
      "<tr{}><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>", attrs,
      html_escape(label), count_bar(count, most), count, share(count, flips));
}

std::string spread_text(const Spread& s) {
  if (s.n == 0) return "none";
  return fmt::format("min {} · q1 {} · median {} · q3 {} · max {}", html::sci(s.min),
                     html::sci(s.q1), html::sci(s.median), html::sci(s.q3), html::sci(s.max));
}

std::string header(const FlipAggregate& a) {
  std::string h = "<header><h1>driftscope flips</h1>";
  h += fmt::format(
      "<p>{} zoomed sequence{}, {} with a flip; near-tie threshold {:g} logit; local error against "
      "the attribution's noise floor {} ({})</p>",
      a.pairs, a.pairs == 1 ? "" : "s", a.flips, a.near_tie_logit, html::sci(a.noise_floor),
      html_escape(a.storage.empty() ? "–" : a.storage));
  h += fmt::format("<p class=\"verdict\"><b>summary:</b> {}</p>", html_escape(a.summary));
  for (const auto& n : a.notes) h += "<p class=\"warn\">" + html_escape(n) + "</p>";
  return h + "</header>\n";
}

std::string steps_section(const FlipAggregate& a) {
  const auto& s = a.steps;
  return fmt::format(
      "<h3>first-flip step</h3><p class=\"spread steps\">min {:g} · q1 {:g} · "
      "median {:g} · q3 {:g} · max {:g}</p>{}",
      s.spread.min, s.spread.q1, s.spread.median, s.spread.q3, s.spread.max,
      svg_flip_histogram(s.steps, s.steps.back()));
}

std::string margins_section(const FlipAggregate& a) {
  const auto& m = a.margins;
  const double t = a.near_tie_logit;
  const int most = std::max({m.decades[0], m.decades[1], m.decades[2], m.decades[3], m.unknown});
  std::string h = fmt::format(
      "<h3>margin at the flip (A's top-1 − top-2 logit)</h3><p>near-ties {} ({}), accumulated "
      "drift {} ({}); margin {}; logit drift at the flip row {}</p><table class=\"margins\">"
      "<tr><th>margin</th><th></th><th>flips</th><th>share</th></tr>",
      m.near_tie, share(m.near_tie, a.flips), m.accumulated, share(m.accumulated, a.flips),
      spread_text(m.margin_logit_a), spread_text(m.logit_drift));
  const std::string labels[] = {
      fmt::format("near-tie < {:g}", t), fmt::format("drift {:g} – {:g}", t, 10 * t),
      fmt::format("drift {:g} – {:g}", 10 * t, 100 * t), fmt::format("drift ≥ {:g}", 100 * t)};
  for (int k = 0; k < 4; ++k) {
    h += count_row(fmt::format(" data-decade=\"{}\"", k), labels[k], m.decades[k], most, a.flips);
  }
  if (m.unknown > 0)
    h += count_row(" data-decade=\"unknown\"", "unknown", m.unknown, most, a.flips);
  return h + "</table>";
}

std::string places_section(const std::string& key, const std::string& title,
                           const PlaceHistogram& p, const FlipAggregate& a, const char* none) {
  int most = p.none;
  for (const auto& c : p.cells) most = std::max(most, c.count);
  int most_kind = 0;
  for (const auto& k : p.kinds) most_kind = std::max(most_kind, k.count);
  std::string h = fmt::format(
      "<h3>{}</h3><div class=\"pair\"><table class=\"kinds\" data-histogram=\"{}\"><tr>"
      "<th>kind</th><th></th><th>flips</th><th>share</th></tr>",
      html_escape(title), key);
  for (const auto& k : p.kinds) {
    h += count_row(fmt::format(" data-kind=\"{}\"", html_escape(k.kind)), k.kind, k.count,
                   most_kind, a.flips);
  }
  h += fmt::format(
      "</table><table class=\"places\" data-histogram=\"{}\"><tr><th>place</th><th></th>"
      "<th>flips</th><th>share</th></tr>",
      key);
  for (const auto& c : p.cells) {
    const std::string label =
        c.place.layer >= 0 ? fmt::format("L{} {}", c.place.layer, c.place.kind) : c.place.kind;
    h += count_row(fmt::format(" data-kind=\"{}\" data-layer=\"{}\"", html_escape(c.place.kind),
                               c.place.layer),
                   label, c.count, most, a.flips);
  }
  if (p.none > 0) h += count_row(" data-none=\"1\"", none, p.none, most, a.flips);
  return h + "</table></div>";
}

std::string layers_section(const FlipAggregate& a) {
  if (a.layers.empty()) return {};
  std::string h = fmt::format(
      "<h3>drift per layer at the flip row (relative L2 across the flips)</h3><p>above floor: "
      "flips above the site floor, the diff's own noise floor of <code>L&lt;l&gt;/out</code> "
      "(the rounding of its {}storage, as for the onset), not the attribution's</p>"
      "<table class=\"layers\"><tr><th>layer</th><th>median</th><th>q1</th><th>q3</th>"
      "<th>max</th><th>growth</th><th>above floor</th><th>site floor</th><th>local (median)</th>"
      "</tr>",
      a.site_storage.empty() ? "" : html_escape(a.site_storage) + " ");
  for (const auto& l : a.layers) {
    h += fmt::format(
        "<tr data-layer=\"{}\"><td class=\"num\">{}</td><td class=\"num\">{}</td>"
        "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
        "<td class=\"num\">{}</td><td class=\"num\">{}/{}</td><td class=\"num\">{}</td>"
        "<td class=\"num\">{}</td></tr>",
        l.layer, l.layer, html::sci(l.rel_l2.median), html::sci(l.rel_l2.q1),
        html::sci(l.rel_l2.q3), html::sci(l.rel_l2.max),
        std::isnan(l.growth_median) ? "" : fmt::format("×{:.2f}", l.growth_median), l.above_floor,
        l.rel_l2.n, std::isnan(l.site_floor) ? "mixed" : html::sci(l.site_floor),
        html::sci(l.local.median));
  }
  return h + "</table>";
}

std::string cases_section(const FlipAggregate& a, const diff::ExplainReport* explained) {
  std::string h =
      "<h3>sequences</h3><table class=\"summary\"><tr><th>seq</th><th>step</th><th>margin</th>"
      "<th>class</th><th>onset</th><th>born in</th><th>most local error</th></tr>";
  for (const auto& c : a.cases) {
    if (!c.flipped) continue;
    h += fmt::format(
        "<tr data-seq=\"{}\"><td class=\"num\">{}</td><td class=\"num\">{}</td>"
        "<td class=\"num\">{}</td><td>{}</td><td><code>{}</code></td><td>{}</td><td>{}</td></tr>",
        c.seq, c.seq, c.step, html::sci(c.margin_logit_a), diff::margin_class_name(c.margin),
        html_escape(diff::onset_column(c, explained)),
        html_escape(c.has_birth ? c.birth_block : "–"),
        c.has_top ? html_escape(c.top_block) + " (" + diff::percent(c.top_share) + ")" : "–");
  }
  return h + "</table>";
}

}  // namespace

std::string flips_html(const FlipAggregate& a, const diff::ExplainReport* explained) {
  std::string h = html::page_open("driftscope flips");
  h += header(a);
  if (a.flips > 0) {
    h += steps_section(a);
    h += margins_section(a);
    h += places_section("onset", "where the drift sets in (the diff's onset site)", a.onset, a,
                        "no onset");
    h += places_section("birth",
                        "where the local error is born (first block above the attribution's "
                        "noise floor)",
                        a.birth, a, "none above the floor");
    h += places_section("top", "where the most local error is added (largest block)", a.top, a,
                        "no local error");
    h += layers_section(a);
    h += cases_section(a, explained);
  }
  if (explained != nullptr) h += explain_html_section(*explained);
  h += html::page_close("driftscope flips");
  return h;
}

}  // namespace ds::viewer
