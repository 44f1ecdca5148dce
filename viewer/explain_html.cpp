// The HTML page of the explain report (layout in viewer/explain_html.h): the diff report's page
// shell, stylesheet and escaping; the terminal view's content.
#include "viewer/explain_html.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>

#include "viewer/html_escape.h"
#include "viewer/html_parts.h"

namespace ds::viewer {
namespace {

using diff::ExplainReport;

std::string signed_sci(double x) {
  return std::isfinite(x) && x >= 0 ? "+" + html::sci(x) : html::sci(x);
}

std::string percent(double x) {
  return std::isfinite(x) ? fmt::format("{:.0f}%", 100 * x) : "–";
}

// A knob's value as shown: an unset one (test_perturb) as "(none)".
std::string shown(const std::string& v) {
  return v.empty() ? "(none)" : v;
}

std::string causes_table(const ExplainReport& r) {
  const size_t n = r.flips.size();
  std::string h = fmt::format(
      "<h3>causes ({} flips)</h3><table class=\"causes\"><tr><th>knob set</th><th>flips</th>"
      "<th>share</th><th>first op of the op set (flips)</th></tr>",
      n);
  auto share = [n](size_t k) { return n ? fmt::format("{:.0f}%", 100.0 * k / n) : "–"; };
  for (const auto& c : r.causes) {
    std::vector<std::string> ops;
    for (const auto& o : c.ops) ops.push_back(fmt::format("{} {}", o.op, o.flips));
    h += fmt::format(
        "<tr data-cause=\"{}\"><td><code>{}</code></td><td class=\"num\">{}</td>"
        "<td class=\"num\">{}</td><td>{}</td></tr>",
        html_escape(fmt::format("{}", fmt::join(c.knobs, ","))),
        html_escape(diff::knob_set_text(c.knobs)), c.seqs.size(), share(c.seqs.size()),
        html_escape(fmt::format("{}", fmt::join(ops, ", "))));
  }
  if (r.no_cause > 0) {
    h += fmt::format(
        "<tr data-cause=\"none\"><td>no cause among the knobs</td><td class=\"num\">{}</td>"
        "<td class=\"num\">{}</td><td></td></tr>",
        r.no_cause, share(r.no_cause));
  }
  if (r.unresolved > 0) {
    h += fmt::format(
        "<tr data-cause=\"unresolved\"><td>unresolved</td><td class=\"num\">{}</td>"
        "<td class=\"num\">{}</td><td></td></tr>",
        r.unresolved, share(r.unresolved));
  }
  return h + "</table>";
}

std::string effects_table(const ExplainReport& r) {
  if (r.knobs.empty()) return {};
  std::string h =
      "<h3>knob effects on the margin (logit of B's token − A's at the flip row)</h3>"
      "<table class=\"effects\"><tr><th>knob</th><th>A → B</th><th>in sets</th>"
      "<th>main effect</th><th>Shapley share</th></tr>";
  for (size_t k = 0; k < r.knobs.size(); ++k) {
    const auto& e = r.effects[k];
    h += fmt::format(
        "<tr data-knob=\"{}\"><td><code>{}</code></td><td>{} → {}</td><td class=\"num\">{}</td>"
        "<td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
        html_escape(e.knob), html_escape(e.knob), html_escape(shown(r.knobs[k].a)),
        html_escape(shown(r.knobs[k].b)), e.in_sets, signed_sci(e.main_mean),
        percent(e.share_mean));
  }
  return h + "</table>";
}

std::string flips_table(const ExplainReport& r) {
  std::string h = "<h3>flips</h3><table class=\"summary explain\"><tr>";
  for (const char* column : {"seq", "step", "A → B", "margin before → after", "knob sets", "trials",
                             "ops", "op trials", "onset"}) {
    h += fmt::format("<th>{}</th>", column);
  }
  h += "</tr>";
  for (const auto& f : r.flips) {
    std::string sets;
    if (f.verdict != "explained") {
      sets = f.verdict == "no_cause" ? "no cause: " + f.why : "unresolved: " + f.why;
    } else {
      std::vector<std::string> s;
      for (const auto& k : f.knob_sets) s.push_back(diff::knob_set_text(k));
      sets = fmt::format("{}", fmt::join(s, " or "));
    }
    std::string ops = f.ops.status == "found" ? fmt::format("{}", fmt::join(f.ops.ops, " + "))
                      : f.ops.status.empty()  ? ""
                                              : f.ops.status + ": " + f.ops.why;
    h += fmt::format(
        "<tr data-seq=\"{}\" data-verdict=\"{}\"><td class=\"num\">{}</td><td class=\"num\">{}"
        "</td><td>{} → {}</td><td class=\"num\">{} → {}</td><td>{}</td><td class=\"num\">{}</td>"
        "<td>{}</td><td class=\"num\">{}</td><td><code>{}</code></td></tr>",
        f.seq, html_escape(f.verdict), f.seq, f.step, html_escape(f.text_a), html_escape(f.text_b),
        signed_sci(f.margin_before), signed_sci(f.margin_after), html_escape(sets), f.knob_trials,
        html_escape(ops),
        f.ops.status == "found" || f.ops.status == "none" ? std::to_string(f.ops.trials) : "",
        html_escape(f.place.empty() ? "–" : f.place));
  }
  return h + "</table>";
}

}  // namespace

std::string explain_html_section(const ExplainReport& r) {
  std::string h = "<section class=\"explain\"><h2>why the flips flip</h2>";
  h += fmt::format("<p class=\"verdict\"><b>summary:</b> {}</p>", html_escape(r.summary));
  std::vector<std::string> knobs;
  for (const auto& k : r.knobs) {
    knobs.push_back(fmt::format("{} {} → {}", k.name, shown(k.a), shown(k.b)));
  }
  h += fmt::format(
      "<p>knobs: {}; {} knob trials, {} op trials</p>",
      html_escape(knobs.empty() ? std::string("none") : fmt::format("{}", fmt::join(knobs, " · "))),
      r.knob_runs, r.op_runs);
  for (const auto& l : r.left_out) h += "<p>left out: " + html_escape(l) + "</p>";
  if (!r.op_level.empty()) h += "<p class=\"warn\">" + html_escape(r.op_level) + "</p>";
  h += causes_table(r);
  h += effects_table(r);
  h += flips_table(r);
  for (const auto& n : r.notes) h += "<p class=\"warn\">" + html_escape(n) + "</p>";
  return h + "</section>\n";
}

std::string explain_html(const ExplainReport& r) {
  std::string h = html::page_open("driftscope explain");
  h += "<header><h1>driftscope explain</h1>";
  h += fmt::format("<p>A <code>{}</code> · B <code>{}</code> ({})</p></header>\n",
                   html_escape(r.a_path), html_escape(r.b_path), html_escape(r.engine));
  h += explain_html_section(r);
  h += html::page_close("driftscope explain");
  return h;
}

}  // namespace ds::viewer
