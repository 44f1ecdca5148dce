// The HTML page of an attribution report (driftscope attribute --html; layout in
// viewer/attribution_html.h): the diff report's page shell and escaping, the terminal view's
// content.
#include "viewer/attribution_html.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "viewer/attribution_terminal.h"
#include "viewer/html_escape.h"
#include "viewer/html_parts.h"

namespace ds::viewer {
namespace {

using diff::AttributionReport;
using diff::BlockError;

constexpr int kBarWidth = 300;  // pixels of a full bar

// The bar pair of one block: local (blue, top) and total (orange, below) on [lo, hi], log scale.
std::string bar_pair(const BlockError& b, double lo, double hi) {
  const int wl = log_bar_cells(b.local, lo, hi, kBarWidth);
  const int wt = log_bar_cells(b.total, lo, hi, kBarWidth);
  return fmt::format(
      "<svg class=\"apair\" data-block=\"{}\" data-origin=\"{}\" width=\"{}\" height=\"18\" "
      "viewBox=\"0 0 {} 18\"><rect class=\"hf\" x=\"0\" y=\"0\" width=\"{}\" height=\"18\"/>"
      "<rect class=\"key a local\" x=\"0\" y=\"1\" width=\"{}\" height=\"7\"/>"
      "<rect class=\"key b total\" x=\"0\" y=\"10\" width=\"{}\" height=\"7\"/></svg>",
      html_escape(b.name), b.origin ? 1 : 0, kBarWidth, kBarWidth, kBarWidth, wl, wt);
}

std::string block_row(const BlockError& b, double lo, double hi) {
  return fmt::format(
      "<tr class=\"block{}\"><td>{}</td><td><code>{}</code></td><td class=\"num\">{}</td>"
      "<td>{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
      b.origin ? " origin" : "", html_escape(b.name), html_escape(b.site), html::sci(b.local),
      bar_pair(b, lo, hi), html::sci(b.total),
      b.origin ? "<b class=\"bad\">origin</b>" : (b.nan ? "<b class=\"bad\">NaN</b>" : ""));
}

std::string bars_table(const std::string& title, const std::string& css,
                       const std::vector<const BlockError*>& blocks, double lo, double hi,
                       const std::string& unit) {
  if (blocks.empty()) return {};
  std::string h = fmt::format(
      "<section class=\"blocks {}\"><h3>{}</h3><table class=\"bars\"><tr><th>block</th>"
      "<th>site</th><th>local {}</th><th><span class=\"cont a\">▇ local</span> / "
      "<span class=\"cont b\">▇ total</span> (log scale {} .. {})</th><th>total {}</th>"
      "<th></th></tr>",
      css, html_escape(title), unit, html::sci(lo), html::sci(hi), unit);
  for (const auto* b : blocks) h += block_row(*b, lo, hi);
  return h + "</table></section>";
}

std::string ranking_table(const AttributionReport& r) {
  std::string h =
      "<h3>ranked by local error (relative L2 of B's block on A's input vs A's output)</h3>"
      "<table class=\"ranking\"><tr><th>#</th><th>block</th><th>site</th><th>local</th>"
      "<th>total</th><th>inherited</th><th>share</th><th>origin</th></tr>";
  int n = 0;
  for (int i : r.ranking) {
    const BlockError& b = r.blocks[static_cast<size_t>(i)];
    h += fmt::format(
        "<tr class=\"rank{}\"><td class=\"num\">{}</td><td>{}</td><td><code>{}</code></td>"
        "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
        "<td class=\"num\">{:.0f}%</td><td>{}</td></tr>",
        b.origin ? " origin" : "", ++n, html_escape(b.name), html_escape(b.site),
        html::sci(b.local), html::sci(b.total), html::sci(b.inherited), 100 * b.share,
        b.origin ? "<b class=\"bad\">yes</b>" : "");
  }
  return h + "</table>";
}

}  // namespace

std::string render_attribution_html(const AttributionReport& r) {
  std::string h = html::page_open("driftscope attribute: " + r.a_path);
  h += "<header><h1>driftscope attribute</h1><table class=\"traces\">";
  h += fmt::format("<tr><th>A</th><td><code>{}</code></td><td>{}</td></tr>", html_escape(r.a_path),
                   html_escape(r.a_dtype));
  h += fmt::format("<tr><th>B</th><td colspan=\"2\">{}</td></tr></table>", html_escape(r.b_dtype));
  h += fmt::format("<p>{} sequence{}, {} positions; noise floor {} ({}); {}</p>", r.sequences,
                   r.sequences == 1 ? "" : "s", r.positions, html::sci(r.noise_floor),
                   html_escape(r.storage),
                   r.split ? "attention and MLP separated (A holds L*/resid_mid)"
                           : "whole layers (record L*/resid_mid in A to split attention from MLP)");
  h +=
      fmt::format("<p class=\"verdict\"><b>verdict:</b> {}</p></header>\n", html_escape(r.verdict));

  h += ranking_table(r);

  // local vs total per block, forward order, attention / MLP / whole layers apart
  const auto [lo, hi] = attribution_bar_scale(r);
  std::vector<const BlockError*> attention, mlp, layers, head, logits;
  for (const auto& b : r.blocks) {
    if (b.kind == diff::kAttentionBlock)
      attention.push_back(&b);
    else if (b.kind == diff::kMlpBlock)
      mlp.push_back(&b);
    else if (b.kind == diff::kLogitsBlock)
      logits.push_back(&b);
    else if (b.kind == diff::kFinalNormBlock)
      head.push_back(&b);
    else
      layers.push_back(&b);
  }
  h += "<h2>local vs total per block</h2>";
  h += bars_table("attention blocks", diff::kAttentionBlock, attention, lo, hi, "rel. L2");
  h += bars_table("MLP blocks", diff::kMlpBlock, mlp, lo, hi, "rel. L2");
  h += bars_table("layers", diff::kLayerBlock, layers, lo, hi, "rel. L2");
  h += bars_table("final norm", diff::kFinalNormBlock, head, lo, hi, "rel. L2");
  // logits in KL (nats, mean over A's top-K), on a scale of their own
  double klo = 0, khi = 0;
  for (const auto* b : logits) {
    for (double v : {b->local, b->total}) {
      if (!(v > 0) || !std::isfinite(v)) continue;
      khi = std::max(khi, v);
      klo = klo == 0 ? v / 10 : std::min(klo, v / 10);
    }
  }
  h += bars_table("logits (KL, nats, mean over A's top-K)", diff::kLogitsBlock, logits, klo, khi,
                  "KL");
  h += html::page_close("driftscope attribute");
  return h;
}

}  // namespace ds::viewer
