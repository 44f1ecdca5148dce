// The HTML report page (layout in viewer/diff_html.h): the document, its stylesheet and script, the
// header, the summary of first flips, the sequence table and the kernels that differ.
#include "viewer/diff_html.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "viewer/html_charts.h"
#include "viewer/html_escape.h"
#include "viewer/html_parts.h"
#include "viewer/noise_html.h"

namespace ds::viewer {
namespace {

using diff::Report;

// The stylesheet and script are constant, so the page's Content-Security-Policy can allow
// exactly them by hash: nothing else runs, nothing is fetched. Changing either text needs its
// hash updated (base64 of its SHA-256; the HTML test computes it and says the right value).
constexpr const char* kStyle = R"(
body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:900px;padding:8px 16px;color:#222}
h1{font-size:20px}h2{font-size:16px;display:inline}h3{font-size:14px;margin:14px 0 2px}
table{border-collapse:collapse;margin:4px 0}td,th{padding:1px 8px;text-align:left;vertical-align:top}
th{border-bottom:1px solid #bbb}td.num{text-align:right;font-variant-numeric:tabular-nums}
code,q.tok,.text{font-family:ui-monospace,monospace}q.tok{background:#f2f2f2;quotes:none}
.ok{color:#2a7d2a}.warn{color:#a66a00}.bad{color:#c0262d}.note{color:#666}
section.seq{border-top:1px solid #ccc;padding:6px 0}summary{cursor:pointer}
.text{white-space:pre-wrap;word-break:break-word;margin:2px 0}.ctx{color:#777}
.side{font-weight:bold;margin-right:6px}.cont.a{color:#1f5fa8}.cont.b{color:#b5461b}
.pair{display:flex;gap:24px;flex-wrap:wrap}tr.chosen{font-weight:bold}
.pbar rect{fill:#5a8fc8}.pbar rect.bg{fill:#eee}
svg{display:block;max-width:100%;height:auto}text{font:10px system-ui,sans-serif;fill:#444}
.axis{stroke:#888}.grid{stroke:#e4e4e4}.risk{fill:#f6b8b8}.bar{fill:#5a8fc8}
polyline{fill:none;stroke-width:1.5}polyline.a{stroke:#1f5fa8}polyline.b{stroke:#b5461b;stroke-dasharray:4 2}
.key.a{fill:#1f5fa8}.key.b{fill:#b5461b}
.flipmark rect{fill:none;stroke:#d0102a;stroke-width:1.5}.flipmark text{fill:#d0102a;font-weight:bold}
.hz{fill:#fff;stroke:#ddd;stroke-width:.5}.hf{fill:#e4e4e4}.hn{fill:#d0102a}
.h0{fill:#440154}.h1{fill:#482173}.h2{fill:#433e85}.h3{fill:#38588c}.h4{fill:#2d708e}
.h5{fill:#25858e}.h6{fill:#1e9b8a}.h7{fill:#2ab07f}.h8{fill:#52c569}.h9{fill:#86d549}
.h10{fill:#c2df23}.h11{fill:#fde725}
#tip{position:fixed;background:#222;color:#fff;padding:2px 6px;font-size:12px;pointer-events:none}
)";

constexpr const char* kScript = R"(
(function () {
  var tip = document.getElementById('tip');
  document.querySelectorAll('svg.heat').forEach(function (svg) {
    var rows = svg.querySelectorAll('g.row'), d = svg.dataset;
    svg.addEventListener('mousemove', function (e) {
      var p = svg.createSVGPoint();
      p.x = e.clientX; p.y = e.clientY;
      p = p.matrixTransform(svg.getScreenCTM().inverse());
      var c = Math.floor((p.x - d.x0) / d.cw), row = rows[Math.floor((p.y - d.y0) / d.rh)];
      var v = row && c >= 0 ? row.dataset.v.split(' ')[c] : undefined;
      if (v === undefined) { tip.hidden = true; return; }
      var a = c * d.per, b = Math.min(a + Number(d.per), Number(d.n)) - 1;
      tip.textContent = row.dataset.site + ' \u00b7 position ' + (a === b ? a : a + '\u2013' + b) +
                        ' \u00b7 rel. L2 ' + v;
      tip.style.left = (e.clientX + 12) + 'px';
      tip.style.top = (e.clientY + 12) + 'px';
      tip.hidden = false;
    });
    svg.addEventListener('mouseleave', function () { tip.hidden = true; });
  });
  document.querySelectorAll('button[data-open]').forEach(function (b) {
    b.addEventListener('click', function () {
      document.querySelectorAll('details.seq').forEach(function (x) {
        x.open = b.dataset.open === '1';
      });
    });
  });
})();
)";
constexpr const char* kStyleHash = "sha256-Aeb8OOjcMJLVz7KXqlQ6SIq2WtgTZA/aGkDisNhbAJE=";
constexpr const char* kScriptHash = "sha256-svQTauAczaaSoiYQt91S7zBHLaE/cKuLXqwgEEsDuR4=";

// A JSON value of a config difference as text: a string without its quotes, absent as "(absent)".
std::string config_value(const std::string& j) {
  if (j.empty()) return "(absent)";
  const auto v = nlohmann::json::parse(j, nullptr, false);
  return v.is_string() ? v.get<std::string>() : j;
}

std::string side_row(const char* tag, const diff::TraceSide& t) {
  return fmt::format(
      "<tr><th>{}</th><td><code>{}</code></td><td>{}</td><td>{} sequence{}</td>"
      "<td>driftscope {}</td></tr>",
      tag, html_escape(t.path),
      t.complete ? "complete"
                 : "<span class=\"warn\">INCOMPLETE (" +
                       html_escape(t.stop_reason.empty() ? "?" : t.stop_reason) + ")</span>",
      t.sequences, t.sequences == 1 ? "" : "s", html_escape(t.tool_version));
}

// Config differences, split into the run configuration and the tokenizer (model.tokenizer.*).
std::string differences(const Report& r, bool tokenizer) {
  const std::string prefix = "model.tokenizer";
  std::string rows;
  for (const auto& c : r.config_diff) {
    if ((c.field.rfind(prefix, 0) == 0) != tokenizer) continue;
    rows +=
        fmt::format("<tr><td><code>{}</code></td><td>{}</td><td>{}</td></tr>", html_escape(c.field),
                    html_escape(config_value(c.a)), html_escape(config_value(c.b)));
  }
  const char* what = tokenizer ? "tokenizer" : "config";
  if (rows.empty()) return fmt::format("<p>{}: no differences</p>", what);
  return fmt::format(
      "<p>{} differences:</p><table class=\"{}\"><tr><th>field</th><th>A</th><th>B</th></tr>{}"
      "</table>",
      what, what, rows);
}

std::string overall_verdict(const Report& r) {
  const auto& s = r.summary;
  if (s.sequences == 0) return "<span class=\"bad\">nothing compared</span>";
  const auto order = diff::by_first_flip(r);
  if (s.diverged > 0) {
    const auto& first = *order.front();
    return fmt::format(
        "<span class=\"bad\">{} of {} sequences flip ({:.1f}%); earliest: seq {} at step {}</span>",
        s.diverged, s.sequences, s.div_percent, first.index, first.first_flip->step);
  }
  if (s.prompts_differ) {
    return fmt::format("<span class=\"bad\">{} sequences with different prompts</span>",
                       s.prompts_differ);
  }
  if (s.drifted) {
    return fmt::format("<span class=\"warn\">drift without flip in {} of {} sequences</span>",
                       s.drifted, s.sequences);
  }
  return fmt::format("<span class=\"ok\">identical over {} sequences</span>", s.sequences);
}

std::string header(const Report& r) {
  std::string h = "<header><h1>driftscope diff</h1><table class=\"traces\">";
  h += side_row("A", r.a) + side_row("B", r.b) + "</table>";
  for (const auto* t : {&r.a, &r.b}) {
    if (t->certify.empty()) continue;
    h += fmt::format("<p>certify {}: <span class=\"{}\">{}</span></p>", t == &r.a ? "A" : "B",
                     t->certify.starts_with("identical") ? "ok" : "bad", html_escape(t->certify));
  }
  if (!r.model_known) {
    h += "<p>model: <span class=\"warn\">not recorded in both traces</span></p>";
  } else {
    std::string files;
    for (const auto& f : r.a.model_files) files += "<code>" + html_escape(f) + "</code> ";
    h += fmt::format("<p>model: {} {}</p>",
                     r.model_equal ? "same" : "<span class=\"bad\">DIFFERENT</span>", files);
    if (!r.model_equal) {
      std::string fb;
      for (const auto& f : r.b.model_files) fb += "<code>" + html_escape(f) + "</code> ";
      h += "<p>model of B: " + fb + "</p>";
    }
  }
  h += differences(r, false) + differences(r, true);
  for (const auto& w : r.warnings) h += "<p class=\"warn\">warning: " + html_escape(w) + "</p>";
  const auto& s = r.summary;
  h += fmt::format("<p class=\"verdict\"><b>verdict:</b> {} · {} drifted</p></header>",
                   overall_verdict(r), s.drifted);
  return h;
}

std::string flips_summary(const Report& r) {
  std::vector<int> steps;
  int max_step = 0;
  for (const auto& s : r.sequences) {
    if (s.first_flip) steps.push_back(s.first_flip->step);
    max_step = std::max({max_step, s.gen_len_a - 1, s.gen_len_b - 1});
  }
  if (steps.empty()) return {};
  return fmt::format(
      "<h3>first-flip steps ({} of {} sequences flip; the others agree on every generated "
      "token)</h3>{}",
      steps.size(), r.sequences.size(), svg_flip_histogram(steps, max_step));
}

// `sections`: how many of `order` have a section to link to.
std::string sequence_table(const HtmlOptions& opt,
                           const std::vector<const diff::SequenceReport*>& order, int sections) {
  std::string h =
      "<h3>sequences, by first flip</h3><table class=\"summary\"><tr><th>seq</th><th>verdict</th>"
      "<th>KL max</th><th>Jaccard min</th><th>drift max</th><th>onset</th></tr>";
  int n = 0;
  for (const auto* s : order) {
    if (n >= opt.max_table_rows) {
      h += fmt::format(
          "<tr><td colspan=\"6\">… {} more (the JSON report has every sequence)"
          "</td></tr>",
          order.size() - static_cast<size_t>(n));
      break;
    }
    double dmax = 0;
    for (const auto& d : s->drift) {
      dmax = std::isnan(d.rel_l2_max) || std::isnan(dmax) ? NAN : std::max(dmax, d.rel_l2_max);
    }
    const std::string seq = n < sections
                                ? fmt::format("<a href=\"#seq-{}\">{}</a>", s->index, s->index)
                                : fmt::format("{}", s->index);
    h += fmt::format(
        "<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
        "<td class=\"num\">{}</td><td>{}</td></tr>",
        seq, html_escape(diff::verdict_text(*s)), s->has_logits ? html::sci(s->logits.kl_max) : "-",
        s->has_logits ? html::fix(s->logits.top5_jaccard_min, 3) : "-",
        s->drift.empty() ? "-" : html::sci(dmax),
        s->onset ? fmt::format("{} @{}", html_escape(s->onset->site), s->onset->position) : "-");
    ++n;
  }
  return h + "</table>";
}

std::string kernel_use(const diff::KernelUse& u) {
  return fmt::format("<td>{}</td><td><code class=\"kname\">{}</code></td><td class=\"num\">{}</td>",
                     html_escape(u.op), html_escape(u.name), u.launches);
}

std::string launch_configs(const std::vector<diff::KernelLaunch>& cs) {
  std::string s;
  for (const auto& c : cs) {
    s += fmt::format("×{} grid ({}) block ({})<br>", c.launches, fmt::join(c.grid, ","),
                     fmt::join(c.block, ","));
  }
  return s;
}

std::string kernels(const diff::KernelReport& k) {
  using diff::KernelTables;
  if (k.tables == KernelTables::neither) return {};
  if (k.tables != KernelTables::both) {
    return fmt::format("<p>kernels: only {} has a /kernels table: kernels not compared</p>",
                       k.tables == KernelTables::only_a ? "A" : "B");
  }
  std::string h = fmt::format(
      "<section class=\"kernels\"><h2>kernels that differ, by site</h2><p>{} of {} sites differ "
      "over {} pass{}</p>",
      k.sites.size(), k.sites_compared, k.passes_compared, k.passes_compared == 1 ? "" : "es");
  if (k.sites.empty()) return h + "</section>";
  h += "<table class=\"kernels\"><tr><th>site</th><th>drift</th><th>side</th><th>op</th>"
       "<th>kernel</th><th>launches</th><th>configurations</th></tr>";
  for (const auto& s : k.sites) {
    const std::string site = fmt::format("<td>{}</td><td class=\"num\">{}</td>",
                                         html_escape(s.site.empty() ? "(outside any op)" : s.site),
                                         s.rel_l2_median ? html::sci(*s.rel_l2_median) : "-");
    for (const auto& u : s.only_a)
      h += "<tr>" + site + "<td>only A</td>" + kernel_use(u) + "<td></td></tr>";
    for (const auto& u : s.only_b)
      h += "<tr>" + site + "<td>only B</td>" + kernel_use(u) + "<td></td></tr>";
    for (const auto& c : s.changed) {
      h += "<tr>" + site + "<td>launch</td>" + kernel_use(c.a) +
           "<td>A: " + launch_configs(c.a.configs) + "B: " + launch_configs(c.b.configs) +
           "</td></tr>";
    }
  }
  return h + "</table></section>";
}

}  // namespace

namespace html {

std::string page_open(const std::string& title) {
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src "
      "'{}'; script-src '{}'\">"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
      "<title>{}</title><style>{}</style></head><body>\n",
      kStyleHash, kScriptHash, html_escape(title), kStyle);
}

std::string page_close(const std::string& footer) {
  return fmt::format(
      "<footer class=\"note\">{}</footer><div id=\"tip\" hidden></div>"
      "<script>{}</script></body></html>\n",
      html_escape(footer), kScript);
}

}  // namespace html

std::string render_html(const Report& r, const HtmlOptions& opt) {
  std::string h = html::page_open("driftscope diff: " + r.a.path + " vs " + r.b.path);
  h += header(r);
  HtmlOptions with_noise = opt;
  if (r.noise) {
    h += noise_html(*r.noise);
    with_noise.noise = &*r.noise;
  }
  const auto order = diff::by_first_flip(r);
  h += flips_summary(r);
  // Sections, earliest flips first, while the page stays within its size budget.
  std::string sections;
  int n = 0;
  const size_t table_bytes = 200 * std::min<size_t>(order.size(), opt.max_table_rows);
  for (const auto* s : order) {
    if (n >= opt.max_sections) break;
    std::string one = html::sequence_section(*s, with_noise, n < 3);
    if (n > 0 && h.size() + table_bytes + sections.size() + one.size() > opt.max_bytes) break;
    sections += one;
    ++n;
  }
  if (!order.empty()) h += sequence_table(opt, order, n);
  h += "<p><button type=\"button\" data-open=\"1\">expand all</button> "
       "<button type=\"button\" data-open=\"0\">collapse all</button></p>\n";
  h += sections;
  if (static_cast<int>(order.size()) > n) {
    h += fmt::format(
        "<p class=\"note\">{} of {} sequences have a section here, earliest flips first; "
        "pick others with <code>--seq LIST</code>.</p>",
        n, order.size());
  }
  h += kernels(r.kernels);
  h += html::page_close("driftscope " + r.a.tool_version);
  return h;
}

}  // namespace ds::viewer
