// Terminal rendering of a diff report (the layout is described in viewer/diff_terminal.h).
#include "viewer/diff_terminal.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>

namespace ds::viewer {
namespace {

using diff::Report;
using diff::SequenceReport;

// Decades of relative L2 from 1e-7 up, one character each (legend in the report).
constexpr const char* kHeatRamp = ":-=+*#%@";
constexpr int kHeatLowestDecade = -7;
// 256-colour foregrounds for the same decades: cool to hot.
constexpr int kHeatColors[] = {24, 31, 37, 71, 178, 208, 202, 196};

// Display columns of s: code points, not counting ANSI escape sequences (wide characters are
// counted as one).
size_t cols(const std::string& s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\x1b') {
      while (i < s.size() && s[i] != 'm') ++i;
      continue;
    }
    n += (static_cast<unsigned char>(s[i]) & 0xC0) != 0x80;
  }
  return n;
}

class Out {
 public:
  Out(bool color, int width) : color_(color), width_(static_cast<size_t>(width)) {}
  // Appends a line; a line wider than the report is wrapped at spaces, continuing indented.
  void line(const std::string& s = {}) {
    std::string rest = s;
    while (cols(rest) > width_) {
      // The last space at which the head still fits.
      size_t cut = std::string::npos, c = 0;
      for (size_t i = 0; i < rest.size(); ++i) {
        if (rest[i] == '\x1b') {
          while (i < rest.size() && rest[i] != 'm') ++i;
          continue;
        }
        if ((static_cast<unsigned char>(rest[i]) & 0xC0) == 0x80) continue;
        if (c >= width_) break;
        if (rest[i] == ' ' && i > kIndent) cut = i;
        ++c;
      }
      if (cut == std::string::npos) break;
      emit(rest.substr(0, cut));
      const size_t next = rest.find_first_not_of(' ', cut);
      rest = std::string(kIndent, ' ') + (next == std::string::npos ? "" : rest.substr(next));
    }
    emit(rest);
  }
  std::string paint(const std::string& s, const char* code) const {
    return color_ ? fmt::format("\x1b[{}m{}\x1b[0m", code, s) : s;
  }
  std::string bold(const std::string& s) const { return paint(s, "1"); }
  std::string dim(const std::string& s) const { return paint(s, "2"); }
  std::string red(const std::string& s) const { return paint(s, "31"); }
  std::string green(const std::string& s) const { return paint(s, "32"); }
  std::string yellow(const std::string& s) const { return paint(s, "33"); }
  std::string fg256(char c, int colour) const {
    return color_ ? fmt::format("\x1b[38;5;{}m{}\x1b[0m", colour, c) : std::string(1, c);
  }
  bool color() const { return color_; }
  std::string str() && { return std::move(text_); }

 private:
  void emit(std::string s) {  // without trailing blanks
    s.erase(s.find_last_not_of(' ') + 1);
    text_ += s + "\n";
  }
  static constexpr size_t kIndent = 10;  // the column where every section's text starts
  bool color_;
  size_t width_;
  std::string text_;
};

// The first `n` code points of s, with "…" when cut.
std::string clip(const std::string& s, size_t n) {
  if (cols(s) <= n) return s;
  if (n == 0) return {};
  size_t seen = 0, i = 0;
  for (; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) {
      if (seen == n - 1) break;
      ++seen;
    }
  }
  return s.substr(0, i) + "…";
}

// A quoted, escaped string (newlines as \n), invalid UTF-8 replaced.
std::string quote(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string pad(const std::string& s, size_t n) {
  const size_t c = cols(s);
  return c >= n ? s : s + std::string(n - c, ' ');
}

std::string sci(double x) {
  if (std::isnan(x)) return "NaN";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  if (x == 0) return "0";
  return fmt::format("{:.2e}", x);
}

std::string fix(double x, int digits = 4) {
  if (std::isnan(x)) return "NaN";
  return fmt::format("{:.{}f}", x, digits);
}

std::string rule(const std::string& title, int width) {
  const int rest = std::max(3, width - static_cast<int>(cols(title)) - 4);
  std::string r = "── " + title + " ";
  for (int i = 0; i < rest; ++i) r += "─";
  return r;
}

std::string token_cell(int32_t id, const std::string& text) {
  return text.empty() ? fmt::format("{}", id) : fmt::format("{} {}", id, quote(text));
}

// Positions binned into at most `width` columns.
struct Columns {
  int64_t per = 1;  // positions per column
  int n = 0;        // columns
  Columns(int64_t positions, int width) {
    if (positions <= 0) return;
    per = std::max<int64_t>(1, (positions + width - 1) / std::max(1, width));
    n = static_cast<int>((positions + per - 1) / per);
  }
};

void header(Out& o, const Report& r, int width) {
  o.line(o.bold("driftscope diff"));
  auto side = [&](const char* tag, const diff::TraceSide& t) {
    const std::string status =
        t.complete ? "complete"
                   : o.yellow(fmt::format("INCOMPLETE (complete=0, {})",
                                          t.stop_reason.empty() ? "?" : t.stop_reason));
    o.line(fmt::format("  {}  {}  {} · {} sequence{} · {}", tag, t.path, status, t.sequences,
                       t.sequences == 1 ? "" : "s",
                       t.producer.empty() ? "driftscope " + t.tool_version : t.producer));
  };
  side("A", r.a);
  side("B", r.b);
  if (!r.model_known) {
    o.line("model     " + o.yellow("not recorded in both traces: cannot check it is the same"));
  } else {
    o.line(fmt::format("model     {}: {}", r.model_equal ? "same" : o.red("DIFFERENT"),
                       clip(fmt::format("{}", fmt::join(r.a.model_files, ", ")),
                            static_cast<size_t>(std::max(20, width - 16)))));
    if (!r.model_equal) {
      o.line(fmt::format("          B: {}", fmt::join(r.b.model_files, ", ")));
    }
  }
  // A JSON string value is shown without its quotes; anything else as JSON; absent as (absent).
  auto value = [](const std::string& j) -> std::string {
    if (j.empty()) return "(absent)";
    const auto v = nlohmann::json::parse(j, nullptr, false);
    return v.is_string() ? v.get<std::string>() : j;
  };
  if (r.config_diff.empty()) {
    o.line("config    no differences");
  } else {
    size_t fw = 5, aw = 1;
    for (const auto& c : r.config_diff) {
      fw = std::max(fw, cols(c.field));
      aw = std::max(aw, cols(value(c.a)));
    }
    aw = std::min<size_t>(
        aw, static_cast<size_t>(std::max(12, (width - 14 - static_cast<int>(fw)) / 2)));
    o.line(fmt::format("config    {}  {}  {}", pad("field", fw), pad("A", aw), "B"));
    for (const auto& c : r.config_diff) {
      o.line(fmt::format("          {}  {}  {}", pad(c.field, fw), pad(clip(value(c.a), aw), aw),
                         clip(value(c.b), aw)));
    }
  }
  for (const auto& w : r.warnings) o.line(o.yellow("warning") + "   " + w);
  const auto& s = r.summary;
  std::string summary = fmt::format("{} sequence{} compared · {} diverged ({:.1f}%)", s.sequences,
                                    s.sequences == 1 ? "" : "s", s.diverged, s.div_percent);
  if (s.prompts_differ) summary += fmt::format(" · {} with different prompts", s.prompts_differ);
  summary += fmt::format(" · {} drifted", s.drifted);
  o.line("summary   " + summary);
}

// `v` (the verdict text, maybe padded) in the verdict's colour.
std::string verdict_colored(const Out& o, const SequenceReport& s, const std::string& v) {
  switch (s.verdict) {
    case diff::Verdict::identical:
      return o.green(v);
    case diff::Verdict::drift:
      return o.yellow(v);
    default:
      return o.red(v);
  }
}

void summary_table(Out& o, const Report& r, const TerminalOptions& opt) {
  o.line();
  o.line(o.bold("sequences, by first flip"));
  o.line(fmt::format("  {:>5}  {:<28}  {:>9}  {:>9}  {:>8}  {}", "seq", "verdict", "KL max",
                     "Jacc min", "drift max", "onset"));
  int shown = 0;
  const auto order = diff::by_first_flip(r);
  for (const auto* s : order) {
    if (shown++ >= opt.max_table_rows) {
      o.line(fmt::format("  … {} more (the JSON report has every sequence)",
                         order.size() - static_cast<size_t>(opt.max_table_rows)));
      break;
    }
    double dmax = 0;
    for (const auto& d : s->drift) {
      dmax = std::isnan(d.rel_l2_max) || std::isnan(dmax) ? NAN : std::max(dmax, d.rel_l2_max);
    }
    o.line(fmt::format("  {:>5}  {}  {:>9}  {:>9}  {:>8}  {}", s->index,
                       verdict_colored(o, *s, pad(diff::verdict_text(*s), 28)),
                       s->has_logits ? sci(s->logits.kl_max) : "-",
                       s->has_logits ? fix(s->logits.top5_jaccard_min, 3) : "-",
                       s->drift.empty() ? "-" : sci(dmax),
                       s->onset ? fmt::format("{} @{}", s->onset->site, s->onset->position) : "-"));
  }
}

void prompt_section(Out& o, const SequenceReport& s) {
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

void flip_section(Out& o, const SequenceReport& s, int width) {
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

void logits_section(Out& o, const SequenceReport& s) {
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

void heat_section(Out& o, const SequenceReport& s, int width) {
  if (s.compared == 0 || (s.layers.empty() && !s.has_logits)) return;
  size_t label_w = 7;  // "margin "
  for (const auto& l : s.layers) label_w = std::max(label_w, cols(l.site) + 1);
  label_w = std::min<size_t>(label_w, 14);
  const int bar_w = 10;
  const int right_w = 1 + 9 + 1 + bar_w + 8;  // "│" median bar growth
  const int heat_w = std::max(10, width - static_cast<int>(label_w) - right_w - 2);
  const Columns c(s.compared, heat_w);
  if (s.layers.empty()) {
    o.line(fmt::format("positions 0..{}{}", s.compared - 1,
                       c.per > 1 ? fmt::format(" ({} per column)", c.per) : ""));
  } else {
    o.line(
        fmt::format("drift     log10 rel. L2 of each layer's output at positions 0..{}{}; median, "
                    "growth",
                    s.compared - 1, c.per > 1 ? fmt::format(" ({} per column, max)", c.per) : ""));
  }
  // Axis: a tick label every 10 columns.
  std::string axis(static_cast<size_t>(c.n), ' ');
  for (int col = 0; col < c.n; col += 10) {
    const std::string lab = fmt::format("{}", col * c.per);
    for (size_t k = 0; k < lab.size() && col + static_cast<int>(k) < c.n; ++k)
      axis[col + k] = lab[k];
  }
  o.line(std::string(label_w, ' ') + " " + axis);
  double floor = 0;
  for (const auto& d : s.drift) {
    for (const auto& l : s.layers) {
      if (l.site == d.site) floor = std::max(floor, d.noise_floor);
    }
  }
  // Bars: log10 of the median, from the decade below the smallest to the decade above the largest.
  double lo = INFINITY, hi = -INFINITY;
  for (const auto& l : s.layers) {
    if (l.rel_l2_median > 0 && std::isfinite(l.rel_l2_median)) {
      lo = std::min(lo, std::floor(std::log10(l.rel_l2_median)));
      hi = std::max(hi, std::ceil(std::log10(l.rel_l2_median)));
    }
  }
  if (hi <= lo) hi = lo + 1;
  for (const auto& l : s.layers) {
    std::string cells;
    for (int col = 0; col < c.n; ++col) {
      double v = 0;
      for (int64_t p = col * c.per; p < std::min<int64_t>((col + 1) * c.per, s.compared); ++p) {
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
    int bar = 0;
    if (l.rel_l2_median > 0 && std::isfinite(l.rel_l2_median)) {
      bar = std::clamp(
          static_cast<int>(std::lround((std::log10(l.rel_l2_median) - lo) / (hi - lo) * bar_w)), 1,
          bar_w);
    }
    const std::string growth = l.growth ? fmt::format("x{:.3g}", *l.growth) : "";
    o.line(fmt::format("{} {} {:>9} {}{}", pad(clip(l.site, label_w - 1), label_w), cells,
                       sci(l.rel_l2_median), pad(std::string(static_cast<size_t>(bar), '#'), bar_w),
                       growth.empty() ? "" : " " + growth));
  }
  if (s.first_flip && s.first_flip->row < s.compared) {
    std::string mark(static_cast<size_t>(c.n), ' ');
    mark[static_cast<size_t>(s.first_flip->row / c.per)] = '^';
    o.line(pad("flip", label_w) + " " + o.red(mark) +
           fmt::format(" row {} chose position {}", s.first_flip->row, s.first_flip->position));
  }
  if (s.has_logits && !s.positions.empty()) {
    std::string m;
    for (int col = 0; col < c.n; ++col) {
      double v = INFINITY;
      bool risk = false;
      for (int64_t p = col * c.per; p < std::min<int64_t>((col + 1) * c.per, s.compared); ++p) {
        const auto& row = s.positions[static_cast<size_t>(p)];
        risk |= row.at_risk;
        v = std::isnan(row.margin_logit_a) ? NAN : std::min(v, row.margin_logit_a);
      }
      const char ch = margin_char(v, risk);
      m += ch == '!' ? o.red("!") : std::string(1, ch);
    }
    o.line(pad("margin", label_w) + " " + m);
  }
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

void onset_section(Out& o, const SequenceReport& s) {
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

void sites_table(Out& o, const SequenceReport& s) {
  if (s.drift.empty()) return;
  size_t w = 4;
  for (const auto& d : s.drift) w = std::max(w, cols(d.site));
  o.line(fmt::format("          {}  {:<7}  {:>9}  {:>9}  {:>5}  {:>9}  {:>9}  {:>6}",
                     pad("site", w), "dtype", "rel med", "rel max", "@pos", "1-cos max", "max|a-b|",
                     ">floor"));
  for (const auto& d : s.drift) {
    o.line(fmt::format("          {}  {:<7}  {:>9}  {:>9}  {:>5}  {:>9}  {:>9}  {:>6}",
                       pad(d.site, w), d.dtype, sci(d.rel_l2_median), sci(d.rel_l2_max),
                       d.rel_l2_max_position, sci(1 - d.cos_min), sci(d.max_abs), d.above_floor));
  }
}

std::string duration(int64_t ns) {
  if (ns < 1000) return fmt::format("{} ns", ns);
  if (ns < 1000000) return fmt::format("{:.1f} µs", ns / 1e3);
  if (ns < 1000000000) return fmt::format("{:.2f} ms", ns / 1e6);
  return fmt::format("{:.2f} s", ns / 1e9);
}

std::string launches(int64_t n) {
  return fmt::format("{} launch{}", n, n == 1 ? "" : "es");
}

std::string launch_config(const diff::KernelLaunch& c) {
  return fmt::format("×{} grid ({}) block ({})", c.launches, fmt::join(c.grid, ","),
                     fmt::join(c.block, ","));
}

bool same_launch(const diff::KernelLaunch& x, const diff::KernelLaunch& y) {
  return x.grid == y.grid && x.block == y.block && x.launches == y.launches;
}

// Per site: the kernels one side only launched (with launch counts), and kernels of both sides
// whose launch configurations differ (only the configurations that differ are shown).
void kernels_section(Out& o, const diff::KernelReport& k, int width) {
  using diff::KernelTables;
  if (k.tables == KernelTables::neither) return;  // CPU traces: nothing to say
  o.line();
  if (k.tables != KernelTables::both) {
    const bool a = k.tables == KernelTables::only_a;
    o.line(fmt::format("kernels   only {} has a /kernels table ({}): kernels not compared",
                       a ? "A" : "B", launches(a ? k.records_a : k.records_b)));
    return;
  }
  o.line(o.bold(rule("kernels that differ, by site", width)));
  const std::string what =
      k.sites.empty() ? fmt::format("none of {} sites differs", k.sites_compared)
                      : fmt::format("{} of {} sites differ", k.sites.size(), k.sites_compared);
  o.line(fmt::format("kernels   {} over {} pass{} · device time A {}, B {}", what,
                     k.passes_compared, k.passes_compared == 1 ? "" : "es",
                     duration(k.duration_ns_a), duration(k.duration_ns_b)));
  if (k.passes_a != k.passes_compared || k.passes_b != k.passes_compared) {
    o.line(fmt::format("          A recorded {} passes and B {}: only the {} in both are compared",
                       k.passes_a, k.passes_b, k.passes_compared));
  }
  bool shortened = false;
  for (const auto& s : k.sites) {
    o.line(fmt::format(
        "{}  drift {} · A {}, {} · B {}, {}", o.bold(s.site.empty() ? "(outside any op)" : s.site),
        s.rel_l2_median ? sci(*s.rel_l2_median) : "- (not tapped in both)", launches(s.launches_a),
        duration(s.duration_ns_a), launches(s.launches_b), duration(s.duration_ns_b)));
    // One name column for the site, so that names shortened alike can be told apart.
    std::vector<const diff::KernelUse*> uses;
    for (const auto& u : s.only_a) uses.push_back(&u);
    for (const auto& u : s.only_b) uses.push_back(&u);
    for (const auto& c : s.changed) uses.push_back(&c.a);
    size_t op_w = 2, count_w = 0;
    for (const auto* u : uses) {
      op_w = std::max(op_w, cols(u->op));
      count_w = std::max(count_w, cols(fmt::format(" ×{}", u->launches)));
    }
    op_w = std::min<size_t>(op_w, 16);
    const size_t room = static_cast<size_t>(
        std::max(16, width - 20 - static_cast<int>(op_w) - 2 - static_cast<int>(count_w)));
    std::vector<std::string> full;
    for (const auto* u : uses) full.push_back(u->name);
    const auto brief = short_kernel_names(full, room);
    std::map<std::string, std::string> short_name;
    for (size_t i = 0; i < full.size(); ++i) {
      short_name[full[i]] = brief[i];
      shortened |= brief[i] != full[i];
    }
    auto row = [&](const char* label, const diff::KernelUse& u, const std::string& suffix) {
      o.line(fmt::format("          {}  {}  {}{}", pad(label, 6), pad(clip(u.op, op_w), op_w),
                         short_name[u.name], suffix));
    };
    for (const auto& u : s.only_a) row("only A", u, fmt::format(" ×{}", u.launches));
    for (const auto& u : s.only_b) row("only B", u, fmt::format(" ×{}", u.launches));
    for (const auto& c : s.changed) {
      row("launch", c.a, "");
      size_t same = 0;
      for (const auto& x : c.a.configs) {
        for (const auto& y : c.b.configs) same += same_launch(x, y);
      }
      for (const auto* side : {&c.a, &c.b}) {
        const auto& other = side == &c.a ? c.b : c.a;
        for (const auto& x : side->configs) {
          bool shared = false;
          for (const auto& y : other.configs) shared |= same_launch(x, y);
          if (!shared) {
            o.line(
                fmt::format("                  {} {}", side == &c.a ? "A" : "B", launch_config(x)));
          }
        }
      }
      if (same > 0) {
        o.line(fmt::format("                  (and {} configuration{} the same on both)", same,
                           same == 1 ? "" : "s"));
      }
    }
  }
  if (shortened)
    o.line(o.dim("          names shortened: the JSON report (--json) has them in full"));
}

void page(Out& o, const SequenceReport& s, const TerminalOptions& opt) {
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

}  // namespace

std::string short_kernel_name(const std::string& name, size_t width) {
  width = std::max<size_t>(width, 8);
  if (cols(name) <= width) return name;
  std::string s = name;
  // The parameter list: the parenthesized group that ends the name.
  if (!s.empty() && s.back() == ')') {
    int depth = 0;
    for (size_t i = s.size(); i-- > 0;) {
      if (s[i] == ')') {
        ++depth;
      } else if (s[i] == '(' && --depth == 0) {
        if (i > 0) s.resize(i);
        break;
      }
    }
  }
  if (s.rfind("void ", 0) == 0) s.erase(0, 5);  // kernels return void
  if (cols(s) <= width) return s;
  {  // a<b<c, d>> -> a<b<…>>
    std::string t;
    int depth = 0;
    for (char c : s) {
      if (c == '<') {
        ++depth;
        if (depth == 2) t += "<…";
        if (depth >= 2) continue;
      } else if (c == '>' && depth >= 2) {
        if (depth-- == 2) t += '>';
        continue;
      } else if (c == '>' && depth > 0) {
        --depth;
      } else if (depth >= 2) {
        continue;
      }
      t += c;
    }
    s = t;
    if (cols(s) <= width) return s;
  }
  // Head and tail around "…", cut at code points.
  std::vector<size_t> starts;
  for (size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) starts.push_back(i);
  }
  const size_t head = (width - 1) * 2 / 3, tail = width - 1 - head;
  return s.substr(0, starts[head]) + "…" + s.substr(starts[starts.size() - tail]);
}

std::vector<std::string> short_kernel_names(const std::vector<std::string>& names, size_t width) {
  width = std::max<size_t>(width, 8);
  std::vector<std::string> out;
  std::map<std::string, std::vector<size_t>> alike;  // short form -> indices of distinct names
  for (size_t i = 0; i < names.size(); ++i) {
    out.push_back(short_kernel_name(names[i], width));
    auto& group = alike[out.back()];
    bool seen = false;
    for (size_t j : group) seen |= names[j] == names[i];
    if (!seen) group.push_back(i);
  }
  auto body = [](const std::string& n) { return n.rfind("void ", 0) == 0 ? n.substr(5) : n; };
  for (const auto& [brief, group] : alike) {
    if (group.size() < 2) continue;
    for (size_t i : group) {
      // Where this name parts from the one it shares the longest prefix with.
      const std::string s = body(names[i]);
      size_t from = 0;
      for (size_t j : group) {
        if (j == i) continue;
        const std::string t = body(names[j]);
        const auto [p, q] = std::mismatch(s.begin(), s.end(), t.begin(), t.end());
        from = std::max(from, static_cast<size_t>(p - s.begin()));
      }
      from -= std::min(from, width / 3);  // a little context before the difference
      while (from > 0 && (static_cast<unsigned char>(s[from]) & 0xC0) == 0x80) --from;
      const std::string window = (from > 0 ? "…" : "") + s.substr(from);
      for (size_t k = 0; k < names.size(); ++k) {
        if (names[k] == names[i]) out[k] = clip(window, width);
      }
    }
  }
  return out;
}

char heat_char(double rel_l2, double noise_floor) {
  if (std::isnan(rel_l2)) return '!';
  if (rel_l2 == 0) return ' ';
  if (rel_l2 <= noise_floor) return '.';
  const int decade = std::isinf(rel_l2) ? 0 : static_cast<int>(std::floor(std::log10(rel_l2)));
  const int k = std::clamp(decade - kHeatLowestDecade, 0, 7);
  return kHeatRamp[k];
}

std::string render_terminal(const Report& r, const TerminalOptions& opt_in) {
  TerminalOptions opt = opt_in;
  opt.width = std::max(60, opt.width);
  Out o(opt.color, opt.width);
  header(o, r, opt.width);
  if (r.sequences.size() > 1) summary_table(o, r, opt);
  int pages = 0;
  for (const auto* s : diff::by_first_flip(r)) {
    if (pages++ >= opt.max_pages) break;
    page(o, *s, opt);
  }
  if (static_cast<int>(r.sequences.size()) > opt.max_pages) {
    o.line();
    o.line(o.dim(fmt::format("{} of {} sequences shown in detail (--pages N, --seq LIST)",
                             std::min<int>(opt.max_pages, static_cast<int>(r.sequences.size())),
                             r.sequences.size())));
  }
  kernels_section(o, r.kernels, opt.width);
  return std::move(o).str();
}

}  // namespace ds::viewer
