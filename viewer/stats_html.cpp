// The HTML page of the N-way statistics report (layout in viewer/stats_html.h).
#include "viewer/stats_html.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "viewer/html_escape.h"

namespace ds::viewer {
namespace {

using diff::GroupStats;
using diff::StatsReport;

// Constant, so the Content-Security-Policy can allow exactly it by hash (base64 of its SHA-256;
// the HTML test computes it and says the right value when this text changes). No script.
constexpr const char* kStyle = R"(
body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1000px;padding:8px 16px;color:#222}
h1{font-size:20px}h2{font-size:16px;margin:18px 0 4px}h3{font-size:14px;margin:10px 0 2px}
table{border-collapse:collapse;margin:4px 0}td,th{padding:1px 8px;text-align:left;vertical-align:top}
th{border-bottom:1px solid #bbb}td.num{text-align:right;font-variant-numeric:tabular-nums}
code{font-family:ui-monospace,monospace}.warn{color:#a66a00}.note{color:#666}
svg{display:block;max-width:100%;height:auto}text{font:10px system-ui,sans-serif;fill:#444}
.axis{stroke:#888}.bar{fill:#5a8fc8}.na{fill:#999}
.hists{display:flex;flex-wrap:wrap;gap:8px 24px}
table.matrix td.pd{text-align:right;font-variant-numeric:tabular-nums;min-width:2.5em;padding:1px 4px}
table.matrix th{font-weight:normal;font-size:12px}
.p0{background:#f4f8f4}.p1{background:#fde0c5}.p2{background:#f9b98a}.p3{background:#f08a5c}
.p4{background:#d9573a;color:#fff}.p5{background:#a8201f;color:#fff}
)";
constexpr const char* kStyleHash = "sha256-B3mbSV2y/OA71B/kuUqDnMoSMkosrjjiH+IpmHgRNAo=";

constexpr double kW = 300, kLeft = 34, kRight = 8, kTop = 18, kPlotH = 80;

std::string n2(double x) {
  return fmt::format("{:.1f}", x);
}

std::string cell(double v, const char* spec) {
  return std::isfinite(v) ? fmt::format(fmt::runtime(spec), v) : std::string("—");
}

std::string pct(double v) {
  return cell(v, "{:.1f} %");
}

std::string numeric(const std::string& text) {
  return "<td class=\"num\">" + text + "</td>";
}

std::string header(const StatsReport& r) {
  std::string h = "<header><h1>driftscope stats</h1>";
  h += fmt::format("<p>{} run{}", r.runs.size(), r.runs.size() == 1 ? "" : "s");
  if (!r.groups.empty()) h += fmt::format(", {} prompts", r.groups[0].prompts);
  if (!r.varying.empty()) {
    h += ", differing in";
    for (const auto& k : r.varying) h += " <code>" + html_escape(k) + "</code>";
  }
  if (!r.group_by.empty()) h += "; grouped by <code>" + html_escape(r.group_by) + "</code>";
  h += "</p>";
  if (!r.missing.empty()) {
    h +=
        fmt::format("<p class=\"warn missing\">missing ({}, no complete trace):", r.missing.size());
    for (const auto& m : r.missing) h += " <code>" + html_escape(m) + "</code>";
    h += "</p>";
  }
  return h + "</header>";
}

std::string median_div_index(const GroupStats& g) {
  auto d = g.div_index;
  if (d.empty()) return "—";
  std::sort(d.begin(), d.end());
  return std::to_string(d[d.size() / 2]);
}

std::string groups_table(const StatsReport& r) {
  std::string h =
      "<h2>statistics per group</h2><table class=\"groups\"><tr><th>group</th>"
      "<th>runs (N)</th><th>prompts</th><th>Div_Percent</th><th>median Div_Index</th>"
      "<th>Avg_Std@top1_prob</th><th>Avg_Std@Output_Length</th>"
      "<th>unique outputs (mean)</th><th>TARr@N</th>";
  const bool tara = !r.groups.empty() && r.groups[0].tara.has_value();
  const bool acc = !r.groups.empty() && r.groups[0].std_acc.has_value();
  if (tara) h += "<th>TARa@N</th>";
  if (acc) h += "<th>Std@Acc</th>";
  h += "</tr>";
  for (const auto& g : r.groups) {
    h += "<tr><td>" + html_escape(g.key) + "</td>" + numeric(std::to_string(g.runs.size())) +
         numeric(std::to_string(g.prompts)) + numeric(pct(g.div_percent)) +
         numeric(median_div_index(g)) + numeric(cell(g.avg_std_top1_prob, "{:.3e}")) +
         numeric(cell(g.avg_std_output_length, "{:.2f}")) +
         numeric(cell(g.unique_outputs_mean, "{:.2f}")) + numeric(pct(g.tarr));
    if (tara) h += numeric(pct(g.tara.value_or(NAN)));
    if (acc) h += numeric(cell(g.std_acc.value_or(NAN), "{:.2f}"));
    h += "</tr>";
  }
  return h + "</table>";
}

// One histogram of a group's Div_Index over [0, max_value], in bins of `per` values.
std::string div_histogram(const GroupStats& g, int max_value, int per) {
  const int bins = max_value / per + 1;
  std::vector<int> count(static_cast<size_t>(bins), 0);
  for (int d : g.div_index) ++count[static_cast<size_t>(std::clamp(d / per, 0, bins - 1))];
  const int most = std::max(1, *std::max_element(count.begin(), count.end()));
  const double plot_w = kW - kLeft - kRight, bw = plot_w / bins, bottom = kTop + kPlotH;
  std::string s = fmt::format(
      R"(<svg class="chart divindex" data-group="{}" viewBox="0 0 {} {}" width="{}" height="{}" )"
      R"(role="img"><title>Div_Index of {}</title>)",
      html_escape(g.key), kW, bottom + 30, kW, bottom + 30, html_escape(g.key));
  s += fmt::format(R"(<text x="{}" y="12">{} ({} prompts)</text>)", kLeft, html_escape(g.key),
                   g.div_index.size());
  for (int b = 0; b < bins; ++b) {
    const int c = count[static_cast<size_t>(b)];
    if (c == 0) continue;
    const double hgt = kPlotH * c / most;
    const int lo = b * per, hi = std::min(max_value, lo + per - 1);
    s += fmt::format(R"(<rect class="bar" x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}">)"
                     R"(<title>Div_Index {}: {} prompt{}</title></rect>)",
                     kLeft + b * bw + 0.5, bottom - hgt, std::max(1.0, bw - 1), hgt,
                     lo == hi ? std::to_string(lo) : fmt::format("{}–{}", lo, hi), c,
                     c == 1 ? "" : "s");
  }
  s += fmt::format(R"(<line class="axis" x1="{}" y1="{}" x2="{}" y2="{}"/>)", kLeft, bottom,
                   kW - kRight, bottom);
  s += fmt::format(R"(<line class="axis" x1="{}" y1="{}" x2="{}" y2="{}"/>)", kLeft, kTop, kLeft,
                   bottom);
  s += fmt::format(R"(<text x="{}" y="{}" text-anchor="end">{}</text>)", kLeft - 4, kTop + 8, most);
  s += fmt::format(R"(<text x="{}" y="{}" text-anchor="end">0</text>)", kLeft - 4, bottom);
  s += fmt::format(R"(<text x="{}" y="{}">0</text>)", kLeft, bottom + 12);
  s += fmt::format(R"(<text x="{}" y="{}" text-anchor="end">{}</text>)", kW - kRight, bottom + 12,
                   max_value);
  s += fmt::format(R"(<text x="{}" y="{}" text-anchor="middle">Div_Index (tokens)</text>)",
                   kLeft + plot_w / 2, bottom + 24);
  return s + "</svg>";
}

std::string div_histograms(const StatsReport& r, const StatsHtmlOptions& opt) {
  int max_value = 0;
  for (const auto& g : r.groups) {
    for (int d : g.div_index) max_value = std::max(max_value, d);
  }
  const int bins = std::max(1, opt.max_bins);
  const int per = std::max(1, (max_value + bins) / bins);  // ceil((max_value + 1) / bins)
  std::string h =
      "<h2>Div_Index per group</h2><p class=\"note\">per prompt, the first generated position "
      "where the group's outputs part (no divergence: the longest output's length); one scale "
      "for all groups</p><div class=\"hists\">";
  for (const auto& g : r.groups) h += div_histogram(g, max_value, per);
  return h + "</div>";
}

std::string top1_bars(const StatsReport& r) {
  double most = 0;
  for (const auto& g : r.groups) {
    if (std::isfinite(g.avg_std_top1_prob)) most = std::max(most, g.avg_std_top1_prob);
  }
  const double label_w = 160, bar_w = 420, row_h = 20;
  const double height = kTop + row_h * static_cast<double>(r.groups.size()) + 4;
  std::string s = fmt::format(
      R"(<h2>Avg_Std@top1_prob per group</h2><svg class="chart top1" viewBox="0 0 {} {}" )"
      R"(width="{}" height="{}" role="img"><title>Avg_Std@top1_prob per group</title>)",
      label_w + bar_w + 90, height, label_w + bar_w + 90, height);
  double y = kTop;
  for (const auto& g : r.groups) {
    s += fmt::format(R"(<text x="{}" y="{}" text-anchor="end">{}</text>)", label_w - 6, y + 13,
                     html_escape(g.key));
    const double v = g.avg_std_top1_prob;
    if (!std::isfinite(v)) {
      s += fmt::format(R"(<text class="na" x="{}" y="{}">— (no position before Div_Index)</text>)",
                       label_w, y + 13);
    } else {
      const double w = most > 0 ? bar_w * v / most : 0;
      s += fmt::format(
          R"(<rect class="bar" x="{}" y="{}" width="{:.1f}" height="{}"><title>{}: {:.3e} over )"
          R"({} prompt{}</title></rect><text x="{:.1f}" y="{}">{:.3e}</text>)",
          label_w, y + 3, std::max(w, 0.5), row_h - 6, html_escape(g.key), v, g.top1_prompts,
          g.top1_prompts == 1 ? "" : "s", label_w + std::max(w, 0.5) + 4, y + 13, v);
    }
    y += row_h;
  }
  return s + "</svg>";
}

int colour_class(double v) {
  if (!std::isfinite(v) || v <= 0) return 0;
  return std::clamp(static_cast<int>(std::ceil(v / 20)), 1, 5);
}

std::string matrix(const StatsReport& r, const StatsHtmlOptions& opt) {
  const size_t n = r.pairwise_differ.size();
  std::string h =
      "<h2>pairwise divergence</h2><p class=\"note\">the % of prompts whose two outputs "
      "differ, for each pair of runs (the two-run Div_Percent)</p>";
  if (n == 0) return h + "<p>no runs</p>";
  if (n > static_cast<size_t>(opt.max_matrix_runs)) {
    return h + fmt::format(
                   "<p class=\"note\">{} runs: the matrix is left out here (more than {}); the "
                   "JSON report (<code>--json</code>) has it as "
                   "<code>pairwise_differ_percent</code></p>",
                   n, opt.max_matrix_runs);
  }
  h += "<table class=\"matrix\"><tr><th></th>";
  for (size_t j = 0; j < n; ++j) {
    h += fmt::format("<th title=\"{}\">{}</th>", html_escape(r.runs[j]), j + 1);
  }
  h += "</tr>";
  for (size_t i = 0; i < n; ++i) {
    h += fmt::format("<tr><th>{} <code>{}</code></th>", i + 1, html_escape(r.runs[i]));
    for (size_t j = 0; j < n; ++j) {
      const double v = r.pairwise_differ[i][j];
      h += fmt::format("<td class=\"pd p{}\" title=\"{} vs {}: {}\">{}</td>", colour_class(v),
                       html_escape(r.runs[i]), html_escape(r.runs[j]), pct(v),
                       std::isfinite(v) ? n2(v) : "—");
    }
    h += "</tr>";
  }
  return h + "</table>";
}

std::string accuracy(const StatsReport& r) {
  if (r.groups.empty() || r.groups[0].accuracy.empty()) return {};
  std::string h =
      "<h2>accuracy per configuration (%)</h2><table class=\"accuracy\"><tr><th>configuration</th>"
      "<th>samples</th><th>accuracy</th><th>k</th><th>Pass@k</th><th>G-Pass@k 0.5 / 0.75 / 1.0"
      "</th><th>mG-Pass@k</th></tr>";
  for (const auto& c : r.groups[0].accuracy) {
    const std::string head = "<td>" + html_escape(c.label) + "</td>" +
                             numeric(std::to_string(c.samples)) +
                             numeric(cell(c.accuracy, "{:.2f}"));
    if (c.pass.empty()) h += "<tr>" + head + "<td></td><td></td><td></td><td></td></tr>";
    for (const auto& p : c.pass) {
      auto g = [&](const char* tau) {
        auto it = p.g_pass.find(tau);
        return it == p.g_pass.end() ? std::string("—") : cell(it->second, "{:.1f}");
      };
      h += "<tr>" + head + numeric(std::to_string(p.k)) + numeric(cell(p.pass, "{:.1f}")) +
           numeric(g("0.5") + " / " + g("0.75") + " / " + g("1.0")) +
           numeric(cell(p.mg_pass, "{:.1f}")) + "</tr>";
    }
  }
  return h + "</table>";
}

std::string attribution(const StatsReport& r) {
  if (r.attribution.empty()) return {};
  std::string h =
      "<h2>attribution per knob</h2><p class=\"note\">over the pairs of runs that differ in that "
      "knob alone</p><table class=\"attribution\"><tr><th>knob</th><th>pairs</th>"
      "<th>Div_Percent</th><th>Avg_Std@top1_prob</th></tr>";
  for (const auto& a : r.attribution) {
    h += "<tr><td><code>" + html_escape(a.knob) + "</code></td>" +
         numeric(std::to_string(a.pairs)) + numeric(pct(a.div_percent)) +
         numeric(cell(a.avg_std_top1_prob, "{:.3e}")) + "</tr>";
  }
  return h + "</table>";
}

}  // namespace

std::string render_stats_html(const StatsReport& r, const StatsHtmlOptions& opt) {
  std::string h = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src "
      "'{}'\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
      "<title>driftscope stats: {} runs</title><style>{}</style></head><body>\n",
      kStyleHash, r.runs.size(), kStyle);
  h += header(r);
  h += groups_table(r);
  h += div_histograms(r, opt);
  h += top1_bars(r);
  h += matrix(r, opt);
  h += accuracy(r);
  h += attribution(r);
  h += "<footer class=\"note\">driftscope stats</footer></body></html>\n";
  return h;
}

}  // namespace ds::viewer
