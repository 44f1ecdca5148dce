// One sequence's page of the terminal diff report: its rule, the prompt, the tokens compared,
// the flip with its text and top-5 tables, the logits and onset lines, the layers × positions heat
// map with per-layer growth bars and the margin row, and the per-site table.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "viewer/diff_terminal_parts.h"
#include "viewer/position_bins.h"

namespace ds::viewer {
namespace {

using diff::SequenceReport;

// Decades of relative L2 from 1e-7 up, one character each (legend in the report).
constexpr const char* kHeatRamp = ":-=+*#%@";
constexpr int kHeatLowestDecade = -7;
// 256-colour foregrounds for the same decades: cool to hot.
constexpr int kHeatColors[] = {24, 31, 37, 71, 178, 208, 202, 196};

std::string token_cell(int32_t id, const std::string& text) {
  return text.empty() ? fmt::format("{}", id) : fmt::format("{} {}", id, quote(text));
}

void prompt_section(TerminalText& o, const SequenceReport& s) {
  if (s.prompt_equal) {
    o.line(fmt::format("prompt    equal ({} tokens)", s.prompt_len_a));
    return;
  }
  const auto& p = *s.prompt_diff;
  o.line(fmt::format("prompt    {} at position {} (A {} tokens, B {})", o.red("DIFFERENT"),
                     p.first_index, p.prompt_a.size(), p.prompt_b.size()));
  auto show = [&](const char* tag, const std::vector<int32_t>& ids, const std::string& text) {
    std::vector<std::string> cells;
    const size_t from = p.first_index > 3 ? static_cast<size_t>(p.first_index) - 3 : 0;
    for (size_t i = from; i < ids.size() && i < from + 12; ++i) {
      cells.push_back(static_cast<int64_t>(i) == p.first_index ? fmt::format("[{}]", ids[i])
                                                               : fmt::format("{}", ids[i]));
    }
    o.line(fmt::format("          {} ids {}{}{}{}", tag, from ? "… " : "", fmt::join(cells, " "),
                       from + 12 < ids.size() ? " …" : "", text.empty() ? "" : "  " + quote(text)));
  };
  show("A", p.prompt_a, p.text_a);
  show("B", p.prompt_b, p.text_b);
  if (p.first_index == 0 &&
      (p.prompt_a.size() + 1 == p.prompt_b.size() || p.prompt_b.size() + 1 == p.prompt_a.size())) {
    o.line("          (one prompt has one extra token at the start: a hidden BOS?)");
  }
}

void flip_section(TerminalText& o, const SequenceReport& s, int width) {
  const auto& f = *s.first_flip;
  o.line(fmt::format("flip      step {}, position {}: A {} | B {}", f.step, f.position,
                     o.bold(token_cell(f.token_a, f.text_a)),
                     o.bold(token_cell(f.token_b, f.text_b))));
  if (!f.context.empty() || !f.continuation_a.empty()) {
    const size_t room = static_cast<size_t>(std::max(20, width - 14));
    o.line("text      …" + clip(quote(f.context), room));
    o.line("       A  → " + clip(quote(f.continuation_a), room));
    o.line("       B  → " + clip(quote(f.continuation_b), room));
  }
  if (f.top5_a.empty() && f.top5_b.empty()) return;
  o.line(
      fmt::format("top-5 at row {} (the distribution that chose position {})", f.row, f.position));
  // Each half: rank, id, token, probability; the chosen token in bold.
  const size_t tok_w = static_cast<size_t>(std::clamp((width - 13) / 2 - 16, 8, 24));
  const size_t half = 16 + tok_w;
  auto cell = [&](const std::vector<diff::TokenProb>& t, size_t k, int32_t chosen) -> std::string {
    if (k >= t.size()) return std::string(half, ' ');
    const auto& p = t[k];
    const std::string tok = clip(p.text.empty() ? std::string() : quote(p.text), tok_w);
    const std::string c =
        fmt::format("{} {:>6} {} {:>7}", k + 1, p.id, pad(tok, tok_w), fix(p.prob));
    return p.id == chosen ? o.bold(c) : c;
  };
  auto head = [&](const char* side) {
    return fmt::format("{} {:>6} {} {:>7}", side, "id", pad("token", tok_w), "prob");
  };
  o.line("          " + head("A") + " │ " + head("B"));
  for (size_t k = 0; k < 5; ++k) {
    if (k >= f.top5_a.size() && k >= f.top5_b.size()) break;
    o.line("          " + cell(f.top5_a, k, f.token_a) + " │ " + cell(f.top5_b, k, f.token_b));
  }
  o.line("          " +
         pad(fmt::format("margin p {} (logit {})", fix(f.margin_a), fix(f.margin_logit_a)), half) +
         " │ " + fmt::format("margin p {} (logit {})", fix(f.margin_b), fix(f.margin_logit_b)));
}

void logits_section(TerminalText& o, const SequenceReport& s) {
  if (!s.has_logits) {
    o.line("logits    not recorded in both traces");
    return;
  }
  const auto& L = s.logits;
  o.line(fmt::format("logits    {} positions · logp RMSE {}{} · top-5 Jaccard mean {} min {}",
                     L.positions, sci(L.logprob_rmse),
                     L.logprob_bounded ? fmt::format(" ({} bounded)", L.logprob_bounded) : "",
                     fix(L.top5_jaccard_mean, 3), fix(L.top5_jaccard_min, 3)));
  o.line(fmt::format(
      "          KL(A‖B) mean {} max {}{} {}", sci(L.kl_mean), sci(L.kl_max),
      L.kl_max_position >= 0 ? fmt::format(" @{}", L.kl_max_position) : "",
      L.kl_exact ? "(exact, full logits)"
                 : fmt::format("(approx.: top-{}/{} union, rest lumped)", L.topk_a, L.topk_b)));
  o.line(fmt::format(
      "          at risk {} of {} choice rows · min margin {} logit{}", L.at_risk, L.choice_rows,
      fix(L.margin_logit_min),
      L.margin_logit_min_position >= 0 ? fmt::format(" @{}", L.margin_logit_min_position) : ""));
}

char margin_char(double m, bool risk) {
  if (risk) return '!';
  if (std::isnan(m)) return '?';
  if (m >= 10) return ' ';
  if (m >= 1) return '.';
  if (m >= 0.1) return '-';
  if (m >= 0.01) return '=';
  if (m >= 1e-3) return '#';
  return '@';
}

// Width of the bar of each layer's median drift.
constexpr int kMedianBarWidth = 10;

// The heat map's geometry: the label column, and the positions binned into the columns left
// beside it and the median, bar and growth columns.
struct HeatLayout {
  size_t label_w;
  Binning bins;
};

HeatLayout heat_layout(const SequenceReport& s, int width) {
  size_t label_w = 7;  // "margin "
  for (const auto& l : s.layers) label_w = std::max(label_w, display_columns(l.site) + 1);
  label_w = std::min<size_t>(label_w, 14);
  const int right_w = 1 + 9 + 1 + kMedianBarWidth + 8;  // "│" median bar growth
  const int heat_w = std::max(10, width - static_cast<int>(label_w) - right_w - 2);
  return {label_w, Binning(s.compared, heat_w)};
}

// The heat map's title line, then its axis: a tick label every 10 columns.
void heat_title_and_axis(TerminalText& o, const SequenceReport& s, const HeatLayout& h) {
  const Binning& c = h.bins;
  if (s.layers.empty()) {
    o.line(fmt::format("positions 0..{}{}", s.compared - 1,
                       c.per > 1 ? fmt::format(" ({} per column)", c.per) : ""));
  } else {
    o.line(
        fmt::format("drift     log10 rel. L2 of each layer's output at positions 0..{}{}; median, "
                    "growth",
                    s.compared - 1, c.per > 1 ? fmt::format(" ({} per column, max)", c.per) : ""));
  }
  std::string axis(static_cast<size_t>(c.n), ' ');
  for (int col = 0; col < c.n; col += 10) {
    const std::string lab = fmt::format("{}", col * c.per);
    for (size_t k = 0; k < lab.size() && col + static_cast<int>(k) < c.n; ++k)
      axis[col + k] = lab[k];
  }
  o.line(std::string(h.label_w, ' ') + " " + axis);
}

// The noise floor of the heat map: the highest of the layer sites' floors.
double heat_noise_floor(const SequenceReport& s) {
  double floor = 0;
  for (const auto& d : s.drift) {
    for (const auto& l : s.layers) {
      if (l.site == d.site) floor = std::max(floor, d.noise_floor);
    }
  }
  return floor;
}

// The scale of the median bars, in log10: from the decade below the smallest median to the
// decade above the largest.
std::pair<double, double> median_bar_decades(const SequenceReport& s) {
  double lo = INFINITY, hi = -INFINITY;
  for (const auto& l : s.layers) {
    if (l.rel_l2_median > 0 && std::isfinite(l.rel_l2_median)) {
      lo = std::min(lo, std::floor(std::log10(l.rel_l2_median)));
      hi = std::max(hi, std::ceil(std::log10(l.rel_l2_median)));
    }
  }
  if (hi <= lo) hi = lo + 1;
  return {lo, hi};
}

// One layer's heat cells: the maximum of each column's positions (NaN wins), one character per
// decade in its colour.
std::string heat_cells(const TerminalText& o, const diff::LayerDrift& l, const Binning& c,
                       double floor) {
  std::string cells;
  for (int col = 0; col < c.n; ++col) {
    double v = 0;
    for (int64_t p = c.begin(col); p < c.end(col); ++p) {
      const double x = l.rel_l2[static_cast<size_t>(p)];
      if (std::isnan(x) || std::isnan(v)) {
        v = NAN;
      } else {
        v = std::max(v, x);
      }
    }
    const char ch = heat_char(v, floor);
    int colour = -1;
    if (ch != ' ' && ch != '.' && ch != '!') {
      colour = kHeatColors[std::strchr(kHeatRamp, ch) - kHeatRamp];
    }
    cells += colour >= 0 ? o.fg256(ch, colour) : ch == '!' ? o.red("!") : std::string(1, ch);
  }
  return cells;
}

// One layer's row: its label, heat cells, median with its bar, and growth.
void layer_row(TerminalText& o, const diff::LayerDrift& l, const HeatLayout& h, double floor,
               std::pair<double, double> decades) {
  const auto [lo, hi] = decades;
  int cells = 0;
  if (l.rel_l2_median > 0 && std::isfinite(l.rel_l2_median)) {
    cells = std::clamp(static_cast<int>(std::lround((std::log10(l.rel_l2_median) - lo) / (hi - lo) *
                                                    kMedianBarWidth)),
                       1, kMedianBarWidth);
  }
  const std::string growth = l.growth ? fmt::format("x{:.3g}", *l.growth) : "";
  o.line(fmt::format("{} {} {:>9} {}{}", pad(clip(l.site, h.label_w - 1), h.label_w),
                     heat_cells(o, l, h.bins, floor), sci(l.rel_l2_median),
                     bar(cells, kMedianBarWidth, "#"), growth.empty() ? "" : " " + growth));
}

// The row marking the column of the first flip's row.
void flip_row(TerminalText& o, const SequenceReport& s, const HeatLayout& h) {
  if (!s.first_flip || s.first_flip->row >= s.compared) return;
  std::string mark(static_cast<size_t>(h.bins.n), ' ');
  mark[static_cast<size_t>(s.first_flip->row / h.bins.per)] = '^';
  o.line(pad("flip", h.label_w) + " " + o.red(mark) +
         fmt::format(" row {} chose position {}", s.first_flip->row, s.first_flip->position));
}

// The row of A's smallest top-1 margin per column, '!' where a row is at risk.
void margin_row(TerminalText& o, const SequenceReport& s, const HeatLayout& h) {
  if (!s.has_logits || s.positions.empty()) return;
  const Binning& c = h.bins;
  std::string m;
  for (int col = 0; col < c.n; ++col) {
    double v = INFINITY;
    bool risk = false;
    for (int64_t p = c.begin(col); p < c.end(col); ++p) {
      const auto& row = s.positions[static_cast<size_t>(p)];
      risk |= row.at_risk;
      v = std::isnan(row.margin_logit_a) ? NAN : std::min(v, row.margin_logit_a);
    }
    const char ch = margin_char(v, risk);
    m += ch == '!' ? o.red("!") : std::string(1, ch);
  }
  o.line(pad("margin", h.label_w) + " " + m);
}

// The legends of the heat and margin characters.
void heat_legend(TerminalText& o, const SequenceReport& s, double floor) {
  if (!s.layers.empty())
    o.line(
        o.dim(fmt::format("          heat   ' '=0 .=floor({}) :=1e-7 -=1e-6 ==1e-5 +=1e-4 *=1e-3 "
                          "#=1e-2 %=0.1 @=1 !=NaN",
                          sci(floor))));
  if (s.has_logits) {
    o.line(
        o.dim("          margin (A top-1 minus top-2 logit) ' '>=10 .>=1 ->=0.1 =>=0.01 #>=1e-3 "
              "@ less !=at risk"));
  }
}

// The layers × positions heat map with the median bars, the flip and margin rows, and legends.
void heat_section(TerminalText& o, const SequenceReport& s, int width) {
  if (s.compared == 0 || (s.layers.empty() && !s.has_logits)) return;
  const HeatLayout h = heat_layout(s, width);
  heat_title_and_axis(o, s, h);
  const double floor = heat_noise_floor(s);
  const auto decades = median_bar_decades(s);
  for (const auto& l : s.layers) layer_row(o, l, h, floor, decades);
  flip_row(o, s, h);
  margin_row(o, s, h);
  heat_legend(o, s, floor);
}

void onset_section(TerminalText& o, const SequenceReport& s) {
  if (s.drift.empty()) {
    o.line("hidden    no hidden site in common");
    return;
  }
  if (s.onset) {
    const auto& on = *s.onset;
    std::string dtype;
    for (const auto& d : s.drift) {
      if (d.site == on.site) dtype = d.dtype;
    }
    o.line(fmt::format("onset     {} at position {} (relative L2 {} > noise floor {}, {})",
                       o.bold(on.site), on.position, sci(on.rel_l2), sci(on.noise_floor), dtype));
  } else {
    o.line(fmt::format(
        "onset     none: no site drifts above its noise floor ({} site{}, {} positions{})",
        s.drift.size(), s.drift.size() == 1 ? "" : "s", s.compared,
        s.hidden_identical ? ", bit-identical" : ""));
  }
  const diff::SiteDrift* worst = nullptr;
  for (const auto& d : s.drift) {
    if (!worst || std::isnan(d.rel_l2_max) || d.rel_l2_max > worst->rel_l2_max) worst = &d;
    if (std::isnan(worst->rel_l2_max)) break;
  }
  if (worst && (worst->rel_l2_max != 0 || std::isnan(worst->rel_l2_max))) {
    o.line(fmt::format("worst     {}  rel. L2 median {} max {} @{} · 1-cos {} · max|a-b| {}",
                       worst->site, sci(worst->rel_l2_median), sci(worst->rel_l2_max),
                       worst->rel_l2_max_position, sci(1 - worst->cos_min), sci(worst->max_abs)));
  }
  if (!s.sites_only_a.empty() || !s.sites_only_b.empty()) {
    o.line(fmt::format(
        "sites     only in A: {} · only in B: {}",
        s.sites_only_a.empty() ? "-" : fmt::format("{}", fmt::join(s.sites_only_a, " ")),
        s.sites_only_b.empty() ? "-" : fmt::format("{}", fmt::join(s.sites_only_b, " "))));
  }
}

void sites_table(TerminalText& o, const SequenceReport& s) {
  if (s.drift.empty()) return;
  size_t w = 4;
  for (const auto& d : s.drift) w = std::max(w, display_columns(d.site));
  o.line(fmt::format("          {}  {:<7}  {:>9}  {:>9}  {:>5}  {:>9}  {:>9}  {:>6}",
                     pad("site", w), "dtype", "rel med", "rel max", "@pos", "1-cos max", "max|a-b|",
                     ">floor"));
  for (const auto& d : s.drift) {
    o.line(fmt::format("          {}  {:<7}  {:>9}  {:>9}  {:>5}  {:>9}  {:>9}  {:>6}",
                       pad(d.site, w), d.dtype, sci(d.rel_l2_median), sci(d.rel_l2_max),
                       d.rel_l2_max_position, sci(1 - d.cos_min), sci(d.max_abs), d.above_floor));
  }
}

}  // namespace

char heat_char(double rel_l2, double noise_floor) {
  if (std::isnan(rel_l2)) return '!';
  if (rel_l2 == 0) return ' ';
  if (rel_l2 <= noise_floor) return '.';
  const int decade = std::isinf(rel_l2) ? 0 : static_cast<int>(std::floor(std::log10(rel_l2)));
  const int k = std::clamp(decade - kHeatLowestDecade, 0, 7);
  return kHeatRamp[k];
}

namespace terminal {

void sequence_page(TerminalText& o, const SequenceReport& s, const TerminalOptions& opt) {
  o.line();
  const std::string title = fmt::format("seq {} · {}", s.index, diff::verdict_text(s));
  o.line(verdict_colored(o, s, o.bold(rule(title, opt.width))));
  prompt_section(o, s);
  o.line(
      fmt::format("tokens    A {} generated (stop: {}) · B {} (stop: {}) · {} positions compared",
                  s.gen_len_a, s.stop_reason_a, s.gen_len_b, s.stop_reason_b, s.compared));
  if (s.first_flip) flip_section(o, s, opt.width);
  logits_section(o, s);
  onset_section(o, s);
  heat_section(o, s, opt.width);
  if (opt.sites) sites_table(o, s);
  for (const auto& n : s.notes) o.line("note      " + n);
}

}  // namespace terminal
}  // namespace ds::viewer
