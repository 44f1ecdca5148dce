// The noise floor's section of the HTML diff report (noise_html.h).
#include "viewer/noise_html.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "diff/noise_sums.h"
#include "viewer/html_escape.h"
#include "viewer/html_parts.h"

namespace ds::viewer {
namespace {

std::string p_cell(double p) {
  return p < 0.001 ? "&lt;0.001" : fmt::format("{:.3f}", p);
}

}  // namespace

std::string noise_html(const diff::NoiseReport& n) {
  std::string h = fmt::format(
      "<section class=\"noise\"><h2>against the noise floor</h2><p>floor <code>{}</code>: {} "
      "replays of A under {} · alpha {:g}</p>",
      html_escape(n.floor), n.runs, html_escape(n.perturbation), n.alpha);
  h += fmt::format("<p class=\"verdict\"><b>verdict:</b> <span class=\"{}\">{}</span></p>",
                   n.beyond ? "bad" : "ok", html_escape(n.headline));
  h += "<table class=\"summary\"><tr><th>site</th><th>drift</th><th>× floor</th><th>p</th>"
       "<th>p (family-wise)</th><th>largest departure</th></tr>";
  for (const auto& s : n.sites) {
    h += fmt::format(
        "<tr{}><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
        "<td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
        s.significant ? " class=\"bad\"" : "", html_escape(s.site), html::sci(s.drift),
        std::isnan(s.floor_units) ? std::string("replays: 0")
                                  : fmt::format("{:.3g}", s.floor_units),
        p_cell(s.p), p_cell(s.p_family), html_escape(s.driver));
  }
  h += "</table>";
  h += fmt::format(
      "<p>flips: {} of {} sequences flipped; {:.2f} expected from the floor (P(at least {}) = "
      "{}); the replays flipped {:.2f} on average (at most {})</p>",
      n.observed_flips, n.sequences, n.expected_flips, n.observed_flips, p_cell(n.p_flips),
      n.replay_mean_flips, n.replay_max_flips);
  for (const auto& note : n.notes) h += "<p class=\"note\">note: " + html_escape(note) + "</p>";
  return h + "</section>\n";
}

std::vector<diff::LayerDrift> in_floor_units(const std::vector<diff::LayerDrift>& layers,
                                             const diff::NoiseReport& n) {
  std::vector<diff::LayerDrift> out;
  for (const auto& l : layers) {
    const diff::NoiseSite* site = nullptr;
    for (const auto& s : n.sites) {
      if (s.site == l.site) site = &s;
    }
    if (site == nullptr) continue;
    diff::LayerDrift u = l;
    for (size_t p = 0; p < u.rel_l2.size(); ++p) {
      const size_t b = static_cast<size_t>(diff::position_bucket(static_cast<int64_t>(p)));
      const double f = b < site->floor_by_bucket.size() ? site->floor_by_bucket[b]
                                                        : std::numeric_limits<double>::quiet_NaN();
      const double x = l.rel_l2[p];
      double v = std::numeric_limits<double>::quiet_NaN();
      if (std::isnan(x) || std::isnan(f)) {
        v = std::numeric_limits<double>::quiet_NaN();
      } else if (f > 0) {
        v = x / f;
      } else {
        v = x == 0 ? 0.0 : std::numeric_limits<double>::infinity();
      }
      u.rel_l2[p] = static_cast<float>(v);
    }
    u.site = l.site + " ×floor";
    out.push_back(std::move(u));
  }
  return out;
}

}  // namespace ds::viewer
