// SVG charts of the HTML report (see viewer/html_charts.h).
#include "viewer/html_charts.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "viewer/html_escape.h"

namespace ds::viewer {
namespace {

// Plot geometry shared by the charts (SVG user units = CSS pixels at width 100%).
constexpr double kLeft = 96;    // label / axis column
constexpr double kPlotW = 760;  // width of the plotted area
constexpr double kRight = 16;
constexpr double kRowH = 14;  // heat map row height

std::string num(double x) {
  return fmt::format("{:.1f}", x);
}

std::string value(double x) {
  if (std::isnan(x)) return "NaN";
  if (x == 0) return "0";
  return fmt::format("{:.3g}", x);
}

// Up to about `n` round tick values in [lo, hi].
std::vector<double> ticks(double lo, double hi, int n) {
  std::vector<double> t;
  if (!(hi > lo)) return {lo};
  const double raw = (hi - lo) / n, mag = std::pow(10, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * mag;
    if (step >= raw) break;
  }
  for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) t.push_back(v);
  return t;
}

double col_x(const Binning& b, double col) {
  return kLeft + col * kPlotW / std::max(1, b.n);
}

// The x axis under a plot at y: tick labels in positions.
std::string x_axis(const Binning& b, double y) {
  std::string s = fmt::format(R"(<line class="axis" x1="{}" y1="{}" x2="{}" y2="{}"/>)", kLeft,
                              num(y), kLeft + kPlotW, num(y));
  for (double p : ticks(0, static_cast<double>(std::max<int64_t>(b.positions - 1, 1)), 8)) {
    const double x = col_x(b, (p / b.per) + 0.5);
    s += fmt::format(R"(<text class="tick" x="{}" y="{}" text-anchor="middle">{}</text>)", num(x),
                     num(y + 12), p);
  }
  s += fmt::format(R"(<text class="tick" x="{}" y="{}" text-anchor="end">position</text>)",
                   kLeft + kPlotW, num(y + 24));
  return s;
}

std::string flip_mark(const Binning& b, int64_t row, double top, double bottom) {
  if (row < 0 || row >= b.positions) return {};
  const int col = static_cast<int>(row / b.per);
  return fmt::format(
      R"(<g class="flipmark"><title>flip: row {} chose the first differing token</title>)"
      R"(<rect x="{}" y="{}" width="{}" height="{}"/>)"
      R"(<text x="{}" y="{}" text-anchor="middle">flip</text></g>)",
      row, num(col_x(b, col)), num(top), num(std::max(1.5, kPlotW / b.n)), num(bottom - top),
      num(col_x(b, col + 0.5)), num(top - 3));
}

// The heat map's values: each layer's column maxima (NaN wins), and the colour range in whole
// decades around the finite values above the noise floor.
struct HeatValues {
  std::vector<std::vector<double>> v;  // [layer][column]
  double lo = INFINITY, hi = -INFINITY;
};

HeatValues heat_values(const std::vector<diff::LayerDrift>& layers, double floor,
                       const Binning& b) {
  HeatValues h;
  h.v.assign(layers.size(), std::vector<double>(b.n, 0.0));
  for (size_t r = 0; r < layers.size(); ++r) {
    for (int c = 0; c < b.n; ++c) {
      double m = 0;
      for (int64_t p = b.begin(c); p < b.end(c); ++p) {
        const double x = p < static_cast<int64_t>(layers[r].rel_l2.size())
                             ? layers[r].rel_l2[static_cast<size_t>(p)]
                             : 0.0;
        m = std::isnan(x) || std::isnan(m) ? NAN : std::max(m, x);
      }
      h.v[r][c] = m;
      if (m > floor && std::isfinite(m)) {
        h.lo = std::min(h.lo, std::floor(std::log10(m)));
        h.hi = std::max(h.hi, std::ceil(std::log10(m)));
      }
    }
  }
  if (!(h.lo <= h.hi)) h.lo = -7, h.hi = 0;
  if (h.hi <= h.lo) h.hi = h.lo + 1;
  return h;
}

// The CSS class of a heat cell: NaN, zero and at-or-below-floor have their own, the rest one of
// kHeatClasses by log10 between lo and hi.
std::string heat_class(double x, double floor, const HeatValues& h) {
  if (std::isnan(x)) return "hn";
  if (x == 0) return "hz";
  if (x <= floor) return "hf";
  const double t = std::isinf(x) ? 1 : (std::log10(x) - h.lo) / (h.hi - h.lo);
  const int k = std::clamp(static_cast<int>(t * kHeatClasses), 0, kHeatClasses - 1);
  return fmt::format("h{}", k);
}

// One layer's row at y: its values for the hover details, its label, and one rectangle per run
// of equal colour (far fewer elements than cells).
std::string heat_row(const diff::LayerDrift& layer, const std::vector<double>& v, double floor,
                     const HeatValues& h, double y, double cw) {
  const int n = static_cast<int>(v.size());
  std::string data;
  for (int c = 0; c < n; ++c) {
    if (c) data += ' ';
    data += value(v[c]);
  }
  std::string s =
      fmt::format(R"(<g class="row" data-site="{}" data-v="{}">)", html_escape(layer.site), data);
  s += fmt::format(R"(<text class="label" x="{}" y="{}" text-anchor="end">{}</text>)", kLeft - 4,
                   num(y + kRowH - 3), html_escape(layer.site));
  for (int c = 0; c < n;) {
    const std::string k = heat_class(v[c], floor, h);
    int e = c + 1;
    while (e < n && heat_class(v[e], floor, h) == k) ++e;
    s += fmt::format(R"(<rect class="{}" x="{}" y="{}" width="{}" height="{}"/>)", k,
                     num(kLeft + c * cw), num(y), num((e - c) * cw), kRowH);
    c = e;
  }
  return s + "</g>";
}

// The legend at legend_y: the classes left to right with their decades, then the special
// colours.
std::string heat_legend(const HeatValues& h, double floor, double legend_y, const std::string& unit,
                        const std::string& floor_label) {
  const double lw = 18;
  std::string s =
      fmt::format(R"(<g class="legend"><text class="tick" x="{}" y="{}" text-anchor="end">)"
                  R"({}</text>)",
                  kLeft - 4, num(legend_y + 10), html_escape(unit));
  for (int k = 0; k < kHeatClasses; ++k) {
    s += fmt::format(R"(<rect class="h{}" x="{}" y="{}" width="{}" height="12"/>)", k,
                     num(kLeft + k * lw), num(legend_y), lw);
  }
  for (double d = h.lo; d <= h.hi; d += 1) {
    s += fmt::format(R"(<text class="tick" x="{}" y="{}" text-anchor="middle">1e{}</text>)",
                     num(kLeft + (d - h.lo) / (h.hi - h.lo) * lw * kHeatClasses),
                     num(legend_y + 24), static_cast<int>(d));
  }
  double x = kLeft + lw * kHeatClasses + 24;
  for (auto [c, label] :
       {std::pair<const char*, std::string>{"hz", "0"},
        {"hf", floor_label.empty() ? "≤ noise floor " + value(floor) : floor_label},
        {"hn", "NaN/Inf"}}) {
    s += fmt::format(R"(<rect class="{}" x="{}" y="{}" width="12" height="12"/>)"
                     R"(<text class="tick" x="{}" y="{}">{}</text>)",
                     c, num(x), num(legend_y), num(x + 16), num(legend_y + 10), html_escape(label));
    x += 40 + 6.5 * static_cast<double>(label.size());
  }
  return s + "</g>";
}

}  // namespace

std::string svg_heat_map(const std::vector<diff::LayerDrift>& layers, double floor,
                         const Binning& b, std::optional<int64_t> flip_row, const std::string& unit,
                         const std::string& floor_label) {
  if (layers.empty() || b.n == 0) return {};
  const HeatValues h = heat_values(layers, floor, b);
  const double top = 18, cw = kPlotW / b.n;
  const double bottom = top + kRowH * static_cast<double>(layers.size());
  const double legend_y = bottom + 36;
  const double height = legend_y + 34;
  std::string s = fmt::format(
      R"(<svg class="heat" viewBox="0 0 {} {}" width="{}" height="{}" data-x0="{}" data-cw="{}" )"
      R"(data-y0="{}" data-rh="{}" data-per="{}" data-n="{}" role="img">)",
      kLeft + kPlotW + kRight, num(height), kLeft + kPlotW + kRight, num(height), kLeft, cw, top,
      kRowH, b.per, b.positions);
  s += fmt::format("<title>log10 {} of each layer's output per position{}</title>",
                   unit == "rel. L2" ? std::string("relative L2") : html_escape(unit),
                   b.per > 1 ? fmt::format(" ({} positions per column, maximum)", b.per) : "");
  for (size_t r = 0; r < layers.size(); ++r) {
    s += heat_row(layers[r], h.v[r], floor, h, top + kRowH * static_cast<double>(r), cw);
  }
  if (flip_row) s += flip_mark(b, *flip_row, top, bottom);
  s += x_axis(b, bottom + 2);
  s += heat_legend(h, floor, legend_y, unit, floor_label);
  s += "</svg>";
  return s;
}

std::string svg_line_chart(const LineChart& c, const Binning& b) {
  if (b.n == 0) return {};
  const double top = 16, plot_h = 90, bottom = top + plot_h;
  const double height = bottom + 30;
  const double lmin = c.log_y ? std::log10(c.y_min) : c.y_min;
  const double lmax = c.log_y ? std::log10(c.y_max) : c.y_max;
  auto y_of = [&](double v) {
    double t = c.log_y ? (v > 0 ? std::log10(v) : lmin) : v;
    t = std::clamp((t - lmin) / (lmax - lmin), 0.0, 1.0);
    return bottom - t * plot_h;
  };
  std::string s = fmt::format(
      R"(<svg class="chart {}" viewBox="0 0 {} {}" width="{}" height="{}" role="img">)", c.css,
      kLeft + kPlotW + kRight, num(height), kLeft + kPlotW + kRight, num(height));
  s += fmt::format("<title>{}</title>", html_escape(c.y_label));
  for (int k = 0; k < static_cast<int>(c.highlight.size()) && k < b.n; ++k) {
    if (!c.highlight[static_cast<size_t>(k)]) continue;
    s += fmt::format(R"(<rect class="risk" x="{}" y="{}" width="{}" height="{}">)"
                     R"(<title>{}: positions {}–{}</title></rect>)",
                     num(col_x(b, k)), top, num(std::max(1.5, kPlotW / b.n)), plot_h,
                     html_escape(c.highlight_name), b.begin(k), b.end(k) - 1);
  }
  // Y axis: grid lines at round values (decades on a log axis).
  std::vector<double> ys;
  if (c.log_y) {
    for (double d = std::ceil(lmin); d <= lmax; d += std::max(1.0, std::ceil((lmax - lmin) / 4)))
      ys.push_back(std::pow(10, d));
  } else {
    ys = ticks(c.y_min, c.y_max, 4);
  }
  for (double v : ys) {
    const double y = y_of(v);
    s += fmt::format(R"(<line class="grid" x1="{}" y1="{}" x2="{}" y2="{}"/>)"
                     R"(<text class="tick" x="{}" y="{}" text-anchor="end">{}</text>)",
                     kLeft, num(y), kLeft + kPlotW, num(y), kLeft - 4, num(y + 3), value(v));
  }
  s += fmt::format(R"(<text class="tick" x="4" y="{}">{}</text>)", num(top - 5),
                   html_escape(c.y_label));
  double legend_x = kLeft + kPlotW / 2;
  for (const auto& ser : c.series) {
    s += fmt::format(R"(<text class="key {}" x="{}" y="{}">— {}</text>)", ser.css, num(legend_x),
                     num(top - 5), html_escape(ser.name));
    legend_x += 20 + 6.5 * static_cast<double>(ser.name.size());
    std::string pts;
    auto flush = [&] {
      if (!pts.empty()) s += fmt::format(R"(<polyline class="{}" points="{}"/>)", ser.css, pts);
      pts.clear();
    };
    for (int k = 0; k < b.n && k < static_cast<int>(ser.y.size()); ++k) {
      const double v = ser.y[static_cast<size_t>(k)];
      if (std::isnan(v)) {
        flush();
        continue;
      }
      pts += fmt::format("{}{},{}", pts.empty() ? "" : " ", num(col_x(b, k + 0.5)), num(y_of(v)));
    }
    flush();
  }
  if (c.flip_row) s += flip_mark(b, *c.flip_row, top, bottom);
  s += x_axis(b, bottom);
  s += "</svg>";
  return s;
}

std::string svg_flip_histogram(const std::vector<int>& steps, int max_step) {
  const int span = std::max(1, max_step + 1);
  const int nb = std::min(span, 40);
  const int per = (span + nb - 1) / nb;
  std::vector<int> count(static_cast<size_t>(nb), 0);
  for (int st : steps) ++count[static_cast<size_t>(std::clamp(st / per, 0, nb - 1))];
  const int most = std::max(1, *std::max_element(count.begin(), count.end()));
  const double top = 16, plot_h = 80, bottom = top + plot_h, bw = kPlotW / nb;
  std::string s = fmt::format(
      R"(<svg class="chart flips" viewBox="0 0 {} {}" width="{}" height="{}" role="img">)"
      R"(<title>first-flip steps of the diverged sequences</title>)",
      kLeft + kPlotW + kRight, bottom + 30, kLeft + kPlotW + kRight, bottom + 30);
  for (double v : ticks(0, most, 4)) {
    if (v != std::floor(v)) continue;  // counts are whole
    const double y = bottom - v / most * plot_h;
    s += fmt::format(R"(<line class="grid" x1="{}" y1="{}" x2="{}" y2="{}"/>)"
                     R"(<text class="tick" x="{}" y="{}" text-anchor="end">{}</text>)",
                     kLeft, num(y), kLeft + kPlotW, num(y), kLeft - 4, num(y + 3), v);
  }
  s += fmt::format(R"(<text class="tick" x="4" y="{}">sequences</text>)", top - 5);
  for (int k = 0; k < nb; ++k) {
    const int c = count[static_cast<size_t>(k)];
    if (c == 0) continue;
    const double h = static_cast<double>(c) / most * plot_h;
    const std::string range = per == 1 ? fmt::format("step {}", k)
                                       : fmt::format("steps {}–{}", k * per, k * per + per - 1);
    s += fmt::format(R"(<rect class="bar" x="{}" y="{}" width="{}" height="{}">)"
                     R"(<title>{}: {} sequence{}</title></rect>)",
                     num(kLeft + k * bw + 1), num(bottom - h), num(std::max(1.0, bw - 2)), num(h),
                     range, c, c == 1 ? "" : "s");
  }
  s += fmt::format(R"(<line class="axis" x1="{}" y1="{}" x2="{}" y2="{}"/>)", kLeft, bottom,
                   kLeft + kPlotW, bottom);
  for (double v : ticks(0, max_step, 8)) {
    s += fmt::format(R"(<text class="tick" x="{}" y="{}" text-anchor="middle">{}</text>)",
                     num(kLeft + (v / per + 0.5) * bw), bottom + 12, v);
  }
  s += fmt::format(R"(<text class="tick" x="{}" y="{}" text-anchor="end">first-flip step</text>)",
                   kLeft + kPlotW, bottom + 24);
  s += "</svg>";
  return s;
}

}  // namespace ds::viewer
