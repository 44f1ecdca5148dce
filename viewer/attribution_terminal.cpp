// Terminal rendering of the attribution report, and the bars' log scale the HTML page shares.
#include "viewer/attribution_terminal.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "common/printable.h"
#include "viewer/text_layout.h"

namespace ds::viewer {

int log_bar_cells(double v, double lo, double hi, int cells) {
  if (!(v > 0) || !(hi > lo) || !(lo > 0)) return 0;
  const double f = (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo));
  return std::clamp(static_cast<int>(std::lround(f * cells)), v > lo ? 1 : 0, cells);
}

std::pair<double, double> attribution_bar_scale(const diff::AttributionReport& r) {
  double hi = 0, lo = r.noise_floor / 10;
  for (const auto& b : r.blocks) {
    if (b.kind == diff::kLogitsBlock) continue;
    if (std::isfinite(b.local)) hi = std::max(hi, b.local);
    if (std::isfinite(b.total)) hi = std::max(hi, b.total);
    if (b.local > 0) lo = std::min(lo, b.local / 2);
  }
  return {lo, hi};
}

std::string render_attribution_terminal(const diff::AttributionReport& r, int width) {
  std::string out;
  out += fmt::format("attribute: A = {} ({})   B = {}\n", printable(r.a_path), printable(r.a_dtype),
                     printable(r.b_dtype));
  out +=
      fmt::format("{} sequences, {} positions; noise floor {:.2g} ({}); {}\n", r.sequences,
                  r.positions, r.noise_floor, r.storage,
                  r.split ? "attention and MLP separated (A holds L*/resid_mid)"
                          : "whole layers (record L*/resid_mid in A to split attention from MLP)");
  out += fmt::format("\n{}\n", r.verdict);

  out += "\nranked by local error (relative L2 of B's block on A's input vs A's output)\n";
  out += fmt::format("  {:<14} {:<13} {:>9} {:>9} {:>10} {:>6}  {}\n", "block", "site", "local",
                     "total", "inherited", "share", "origin");
  int shown = 0;
  for (int i : r.ranking) {
    const diff::BlockError& b = r.blocks[i];
    if (shown++ == 10) break;
    out += fmt::format("  {:<14} {:<13} {:>9} {:>9} {:>10} {:>5.0f}%  {}\n", b.name, b.site,
                       sci(b.local), sci(b.total), sci(b.inherited), 100 * b.share,
                       b.origin ? "yes" : "");
  }

  // local vs total per block in forward order, bars on one log scale for both
  const auto [lo, hi] = attribution_bar_scale(r);
  const int cells = std::clamp((width - 44) / 2, 8, 30);
  out += fmt::format("\nlocal ▇ vs total ░ per block (log scale {:.1e} .. {:.1e})\n", lo, hi);
  for (const auto& b : r.blocks) {
    if (b.kind == diff::kLogitsBlock) {
      out += fmt::format("  {:<14} local KL {}  total KL {} (nats, mean over A's top-K)\n", b.name,
                         sci(b.local), sci(b.total));
      continue;
    }
    out += fmt::format("  {:<14} {:>9} {} │{} {:>9}\n", b.name, sci(b.local),
                       bar(log_bar_cells(b.local, lo, hi, cells), cells, "▇"),
                       bar(log_bar_cells(b.total, lo, hi, cells), cells, "░"), sci(b.total));
  }
  return out;
}

}  // namespace ds::viewer
