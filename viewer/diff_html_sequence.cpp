// One sequence's section of the HTML report: prompt, flip with both continuations, top-5s side
// by side, logits and onset lines, the drift heat map and the per-position charts.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "viewer/html_charts.h"
#include "viewer/html_escape.h"
#include "viewer/html_parts.h"
#include "viewer/noise_html.h"

namespace ds::viewer::html {
namespace {

using diff::SequenceReport;

std::string token(int32_t id, const std::string& text) {
  return text.empty()
             ? fmt::format("<code>{}</code>", id)
             : fmt::format("<code>{}</code> <q class=\"tok\">{}</q>", id, html_quote(text));
}

std::string prompt_part(const SequenceReport& s) {
  if (s.prompt_equal) return fmt::format("<p>prompt equal ({} tokens)</p>", s.prompt_len_a);
  const auto& p = *s.prompt_diff;
  std::string h = fmt::format(
      "<p class=\"bad\">prompts differ at position {} (A {} tokens, B {})</p><table class=\"ids\">",
      p.first_index, p.prompt_a.size(), p.prompt_b.size());
  auto row = [&](const char* tag, const std::vector<int32_t>& ids, const std::string& text) {
    std::string cells;
    for (size_t i = 0; i < ids.size(); ++i) {
      cells += static_cast<int64_t>(i) == p.first_index ? fmt::format(" <mark>{}</mark>", ids[i])
                                                        : fmt::format(" {}", ids[i]);
    }
    h += fmt::format("<tr><th>{}</th><td><code>{}</code></td><td class=\"text\">{}</td></tr>", tag,
                     cells, html_escape(text));
  };
  row("A", p.prompt_a, p.text_a);
  row("B", p.prompt_b, p.text_b);
  return h + "</table>";
}

std::string top5_table(const char* side, const std::vector<diff::TokenProb>& t, int32_t chosen,
                       double margin, double margin_logit) {
  std::string h = fmt::format(
      "<table class=\"top5\"><caption>{}</caption><tr><th>#</th><th>id</th><th>token</th>"
      "<th>prob</th><th></th></tr>",
      side);
  for (size_t k = 0; k < t.size(); ++k) {
    const auto& p = t[k];
    const double w = std::isfinite(p.prob) ? std::clamp(p.prob, 0.0, 1.0) * 100 : 0;
    h += fmt::format(
        "<tr{}><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td>"
        "<svg class=\"pbar\" viewBox=\"0 0 100 10\" width=\"100\" height=\"10\">"
        "<rect class=\"bg\" width=\"100\" height=\"10\"/><rect width=\"{:.1f}\" height=\"10\"/>"
        "</svg></td></tr>",
        p.id == chosen ? " class=\"chosen\"" : "", k + 1, p.id,
        p.text.empty() ? "" : "<q class=\"tok\">" + html_quote(p.text) + "</q>", fix(p.prob), w);
  }
  return h + fmt::format("<tr><td colspan=\"5\">margin p {} (logit {})</td></tr></table>",
                         fix(margin), fix(margin_logit));
}

std::string flip_part(const SequenceReport& s) {
  const auto& f = *s.first_flip;
  std::string h =
      fmt::format("<div class=\"flip\"><p><b>flip</b> at step {}, position {}: A {} | B {}</p>",
                  f.step, f.position, token(f.token_a, f.text_a), token(f.token_b, f.text_b));
  if (!f.context.empty() || !f.continuation_a.empty() || !f.continuation_b.empty()) {
    h += fmt::format(
        "<div class=\"text\"><span class=\"side\">A</span><span class=\"ctx\">…{}</span>"
        "<span class=\"cont a\">{}</span></div>"
        "<div class=\"text\"><span class=\"side\">B</span><span class=\"ctx\">…{}</span>"
        "<span class=\"cont b\">{}</span></div>",
        html_escape(f.context), html_escape(f.continuation_a), html_escape(f.context),
        html_escape(f.continuation_b));
  }
  if (!f.top5_a.empty() || !f.top5_b.empty()) {
    h += fmt::format(
        "<p>top-5 at row {} (the distribution that chose position {})</p><div class=\"pair\">{}{}"
        "</div>",
        f.row, f.position, top5_table("A", f.top5_a, f.token_a, f.margin_a, f.margin_logit_a),
        top5_table("B", f.top5_b, f.token_b, f.margin_b, f.margin_logit_b));
  }
  return h + "</div>";
}

std::string logits_part(const SequenceReport& s) {
  if (!s.has_logits) return "<p>logits not recorded in both traces</p>";
  const auto& L = s.logits;
  return fmt::format(
      "<p>logits: {} positions · logp RMSE {}{} · top-5 Jaccard mean {} min {} · KL(A‖B) mean {} "
      "max {}{} {} · at risk {} of {} choice rows · min margin {} logit{}</p>",
      L.positions, sci(L.logprob_rmse),
      L.logprob_bounded ? fmt::format(" ({} bounded)", L.logprob_bounded) : "",
      fix(L.top5_jaccard_mean, 3), fix(L.top5_jaccard_min, 3), sci(L.kl_mean), sci(L.kl_max),
      L.kl_max_position >= 0 ? fmt::format(" @{}", L.kl_max_position) : "",
      L.kl_exact ? "(exact)" : fmt::format("(approx.: top-{}/{} union)", L.topk_a, L.topk_b),
      L.at_risk, L.choice_rows, fix(L.margin_logit_min),
      L.margin_logit_min_position >= 0 ? fmt::format(" @{}", L.margin_logit_min_position) : "");
}

std::string onset_part(const SequenceReport& s) {
  if (s.drift.empty()) return "<p>no hidden site in common</p>";
  if (!s.onset) {
    return fmt::format("<p>onset: none (no site drifts above its noise floor{})</p>",
                       s.hidden_identical ? ", bit-identical" : "");
  }
  const auto& on = *s.onset;
  return fmt::format("<p>onset: <b>{}</b> at position {} (relative L2 {} &gt; noise floor {})</p>",
                     html_escape(on.site), on.position, sci(on.rel_l2), sci(on.noise_floor));
}

std::string sites_table(const SequenceReport& s) {
  if (s.drift.empty()) return {};
  std::string h =
      "<details><summary>per-site drift</summary><table class=\"sites\"><tr><th>site</th>"
      "<th>dtype</th><th>rel med</th><th>rel max</th><th>@pos</th><th>1-cos max</th>"
      "<th>max|a-b|</th><th>&gt;floor</th></tr>";
  for (const auto& d : s.drift) {
    h += fmt::format(
        "<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
        "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
        "<td class=\"num\">{}</td></tr>",
        html_escape(d.site), html_escape(d.dtype), sci(d.rel_l2_median), sci(d.rel_l2_max),
        d.rel_l2_max_position, sci(1 - d.cos_min), sci(d.max_abs), d.above_floor);
  }
  return h + "</table></details>";
}

// Per-column reduction of a per-position quantity.
template <class F>
std::vector<double> per_column(const SequenceReport& s, const Binning& b, F get, bool take_min) {
  std::vector<double> out(static_cast<size_t>(b.n), NAN);
  for (int c = 0; c < b.n; ++c) {
    double v = take_min ? INFINITY : -INFINITY;
    bool nan = false;
    for (int64_t p = b.begin(c); p < b.end(c) && p < static_cast<int64_t>(s.positions.size());
         ++p) {
      const double x = get(s.positions[static_cast<size_t>(p)]);
      nan |= std::isnan(x);
      v = take_min ? std::min(v, x) : std::max(v, x);
    }
    out[static_cast<size_t>(c)] = nan || std::isinf(v) ? NAN : v;
  }
  return out;
}

std::string charts_part(const SequenceReport& s, const HtmlOptions& opt) {
  if (s.compared == 0) return {};
  const Binning b(s.compared, opt.max_columns);
  std::optional<int64_t> flip;
  if (s.first_flip && s.first_flip->row < s.compared) flip = s.first_flip->row;
  std::string h;
  if (!s.layers.empty()) {
    double floor = 0;
    for (const auto& d : s.drift) {
      for (const auto& l : s.layers) {
        if (l.site == d.site) floor = std::max(floor, d.noise_floor);
      }
    }
    h += fmt::format("<h3>drift: relative L2 of each layer's output{}</h3>",
                     b.per > 1 ? fmt::format(" ({} positions per column, maximum)", b.per) : "");
    h += svg_heat_map(s.layers, floor, b, flip);
    if (opt.noise != nullptr) {  // diff --floor: the same drift in floor units
      const auto units = in_floor_units(s.layers, *opt.noise);
      if (!units.empty()) {
        h += "<h3>drift in floor units: relative L2 ÷ the replays' median at the site and "
             "position bucket (1: a typical benign reordering)</h3>";
        h += svg_heat_map(units, 1.0, b, flip, "× floor", "≤ 1 × floor");
      }
    }
  }
  if (!s.has_logits || s.positions.empty()) return h;
  LineChart m;
  m.css = "margin";
  m.y_label = "top-1 − top-2 logit margin";
  m.series = {{per_column(
                   s, b, [](const auto& p) { return p.margin_logit_a; }, true),
               "a", "A"},
              {per_column(
                   s, b, [](const auto& p) { return p.margin_logit_b; }, true),
               "b", "B"}};
  double top = 1;
  for (const auto& ser : m.series) {
    for (double v : ser.y) {
      if (std::isfinite(v)) top = std::max(top, v);
    }
  }
  m.y_max = std::ceil(top);
  m.highlight.assign(static_cast<size_t>(b.n), false);
  for (int c = 0; c < b.n; ++c) {
    for (int64_t p = b.begin(c); p < b.end(c) && p < static_cast<int64_t>(s.positions.size()); ++p)
      if (s.positions[static_cast<size_t>(p)].at_risk) m.highlight[static_cast<size_t>(c)] = true;
  }
  m.highlight_name = "at risk (margin < 2 × logit drift)";
  m.flip_row = flip;
  h += "<h3>top-1 − top-2 margin (A's logits; red: rows at risk)</h3>" + svg_line_chart(m, b);

  LineChart kl;
  kl.css = "kl";
  kl.y_label = "KL(A‖B), nats";
  kl.series = {{per_column(
                    s, b, [](const auto& p) { return p.kl; }, false),
                "a", "KL"}};
  double lo = INFINITY, hi = 0;
  for (double v : kl.series[0].y) {
    if (v > 0 && std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  }
  if (hi > 0) {
    kl.log_y = true;
    kl.y_min = std::pow(10, std::floor(std::log10(lo)));
    kl.y_max = std::pow(10, std::ceil(std::log10(hi)));
    if (kl.y_max <= kl.y_min) kl.y_max = kl.y_min * 10;
  }
  kl.flip_row = flip;
  h += "<h3>KL divergence per position</h3>" + svg_line_chart(kl, b);

  LineChart j;
  j.css = "jaccard";
  j.y_label = "top-5 Jaccard";
  j.series = {{per_column(
                   s, b, [](const auto& p) { return p.jaccard; }, true),
               "a", "Jaccard"}};
  j.flip_row = flip;
  h += "<h3>top-5 Jaccard per position</h3>" + svg_line_chart(j, b);
  return h;
}

}  // namespace

std::string sequence_section(const SequenceReport& s, const HtmlOptions& opt, bool open) {
  const char* tone = s.verdict == diff::Verdict::identical ? "ok"
                     : s.verdict == diff::Verdict::drift   ? "warn"
                                                           : "bad";
  std::string h = fmt::format(
      "<section class=\"seq\" id=\"seq-{}\"><details class=\"seq\"{}><summary><h2>seq {} · "
      "<span class=\"{}\">{}</span></h2></summary>",
      s.index, open ? " open" : "", s.index, tone, html_escape(diff::verdict_text(s)));
  h += prompt_part(s);
  h += fmt::format(
      "<p>tokens: A {} generated (stop: {}) · B {} (stop: {}) · {} positions compared</p>",
      s.gen_len_a, html_escape(s.stop_reason_a), s.gen_len_b, html_escape(s.stop_reason_b),
      s.compared);
  if (s.first_flip) h += flip_part(s);
  h += logits_part(s);
  h += onset_part(s);
  h += charts_part(s, opt);
  h += sites_table(s);
  for (const auto& n : s.notes) h += "<p class=\"note\">note: " + html_escape(n) + "</p>";
  return h + "</details></section>\n";
}

}  // namespace ds::viewer::html
