// Terminal rendering of the explain report (layout in viewer/explain_terminal.h).
#include "viewer/explain_terminal.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "viewer/text_layout.h"

namespace ds::viewer {
namespace {

using diff::ExplainReport;
using diff::FlipExplanation;

std::string signed_sci(double x) {
  if (!std::isfinite(x)) return sci(x);
  return (x >= 0 ? "+" : "") + sci(x);
}

std::string percent(double x) {
  return std::isfinite(x) ? fmt::format("{:.0f}%", 100 * x) : "–";
}

// A knob's value as shown: an unset one (test_perturb) as "(none)".
std::string shown(const std::string& v) {
  return v.empty() ? "(none)" : v;
}

std::string knob_line(const ExplainReport& r) {
  if (r.knobs.empty()) return "none: A and B record the same knobs";
  std::vector<std::string> parts;
  for (const auto& k : r.knobs) {
    parts.push_back(fmt::format("{} {} → {}", k.name, shown(k.a), shown(k.b)));
  }
  return fmt::format("{}", fmt::join(parts, " · "));
}

std::string method_line(const ExplainReport& r) {
  const int n = static_cast<int>(r.knobs.size());
  std::string m = n <= r.factorial_max
                      ? fmt::format("full factorial over {} knob{}: up to {} trials per flip", n,
                                    n == 1 ? "" : "s", 1 << n)
                      : fmt::format("ddmin over {} knobs", n);
  m += fmt::format(" · {} knob trial{} (each replays every flip) · {} op trial{}", r.knob_runs,
                   r.knob_runs == 1 ? "" : "s", r.op_runs, r.op_runs == 1 ? "" : "s");
  return m;
}

std::string sets_text(const FlipExplanation& f) {
  if (f.verdict == "no_cause") return "no cause";
  if (f.verdict != "explained") return "unresolved";
  std::vector<std::string> sets;
  for (size_t i = 0; i < f.knob_sets.size(); ++i) {
    sets.push_back(diff::knob_set_text(f.knob_sets[i]));
  }
  return fmt::format("{}", fmt::join(sets, " or "));
}

std::string ops_text(const FlipExplanation& f) {
  const auto& o = f.ops;
  if (o.status == "found") return fmt::format("{}", fmt::join(o.ops, " + "));
  if (o.status == "none") return "none";
  if (o.status == "skipped") return "–";
  return "";
}

void causes_section(TerminalText& o, const ExplainReport& r, int width) {
  const int n = static_cast<int>(r.flips.size());
  o.line(rule(fmt::format("causes ({} flip{})", n, n == 1 ? "" : "s"), width));
  o.line(fmt::format("  {}  {:>5}  {:>5}  {}", pad("knob set", 30), "flips", "share",
                     "first op of the op set (flips)"));
  auto share = [n](int k) { return n > 0 ? fmt::format("{:.0f}%", 100.0 * k / n) : "–"; };
  for (const auto& c : r.causes) {
    std::vector<std::string> ops;
    for (const auto& op : c.ops) ops.push_back(fmt::format("{} {}", op.op, op.flips));
    o.line(fmt::format("  {}  {:>5}  {:>5}  {}", pad(diff::knob_set_text(c.knobs), 30),
                       c.seqs.size(), share(static_cast<int>(c.seqs.size())),
                       fmt::join(ops, ", ")));
  }
  if (r.no_cause > 0) {
    o.line(fmt::format("  {}  {:>5}  {:>5}", pad("no cause among the knobs", 30), r.no_cause,
                       share(r.no_cause)));
  }
  if (r.unresolved > 0) {
    o.line(fmt::format("  {}  {:>5}  {:>5}", pad("unresolved", 30), r.unresolved,
                       share(r.unresolved)));
  }
  const bool several = std::any_of(r.flips.begin(), r.flips.end(),
                                   [](const FlipExplanation& f) { return f.knob_sets.size() > 1; });
  if (several) o.line("  (a flip with several minimal sets counts under each)");
}

void effects_section(TerminalText& o, const ExplainReport& r, int width) {
  if (r.knobs.empty()) return;
  int measured = 0;
  for (const auto& e : r.effects) measured = std::max(measured, e.measured);
  o.line(rule("knob effects on the margin (logit of B's token − A's at the flip row)", width));
  o.line(fmt::format("  {}  {}  {:>7}  {:>12}  {:>13}", pad("knob", 18), pad("A → B", 28),
                     "in sets", "main effect", "Shapley share"));
  for (size_t k = 0; k < r.knobs.size(); ++k) {
    const auto& e = r.effects[k];
    o.line(fmt::format("  {}  {}  {:>7}  {:>12}  {:>13}", pad(e.knob, 18),
                       pad(clip(shown(r.knobs[k].a) + " → " + shown(r.knobs[k].b), 28), 28),
                       e.in_sets, signed_sci(e.main_mean), percent(e.share_mean)));
  }
  for (size_t i = 0; i < r.interactions.size() && i < 3; ++i) {
    o.line(fmt::format("  interaction {}: {}", diff::knob_set_text(r.interactions[i].first),
                       signed_sci(r.interactions[i].second)));
  }
  o.line(measured > 0 ? fmt::format("  means over the {} flip{} with a complete factorial",
                                    measured, measured == 1 ? "" : "s")
                      : "  no flip has a complete factorial (ddmin, or a trial without a margin)");
}

void flips_section(TerminalText& o, const ExplainReport& r, int width) {
  o.line(rule("flips (onset: the first op of the op set, else where the error is born)", width));
  o.line(fmt::format("  {:>5}  {:>4}  {:>21}  {}  {:>7}  {}  {}", "seq", "step",
                     "margin before → after", pad("knob set", 17), "trials", pad("op set", 19),
                     "onset"));
  for (const auto& f : r.flips) {
    std::string ops = ops_text(f), trials = std::to_string(f.knob_trials);
    if (f.ops.status == "found" && f.ops.ops.size() > 1) {
      ops = fmt::format("{} +{}", f.ops.ops.front(), f.ops.ops.size() - 1);
    }
    if (f.ops.status == "found" || f.ops.status == "none") {
      trials += fmt::format("+{}", f.ops.trials);  // knob trials + op trials
    }
    o.line(fmt::format("  {:>5}  {:>4}  {:>21}  {}  {:>7}  {}  {}", f.seq, f.step,
                       signed_sci(f.margin_before) + " → " + signed_sci(f.margin_after),
                       pad(clip(sets_text(f), 17), 17), trials, pad(clip(ops, 19), 19),
                       f.place.empty() ? "–" : f.place));
  }
  o.line("  trials: knob trials + op trials of the flip");
}

void details_section(TerminalText& o, const ExplainReport& r, int width) {
  bool any = false;
  for (const auto& f : r.flips) {
    const auto& op = f.ops;
    const std::string tokens = f.text_a.empty() && f.text_b.empty()
                                   ? fmt::format("{} → {}", f.token_a, f.token_b)
                                   : fmt::format("{} → {}", quote(f.text_a), quote(f.text_b));
    std::string line;
    if (f.verdict != "explained") {
      line = fmt::format("seq {} ({}): {}", f.seq, tokens, f.why);
    } else if (op.status == "found") {
      std::vector<std::string> what;
      for (size_t i = 0; i < op.ops.size(); ++i) {
        what.push_back(fmt::format("{} ({})", op.ops[i], op.what[i]));
      }
      line = fmt::format(
          "seq {} ({}): {} at {}; {} op trial{} over {} candidate op{}; B's plan at A's batch {}",
          f.seq, tokens, diff::knob_set_text(op.knobs), fmt::join(what, " + "), op.trials,
          op.trials == 1 ? "" : "s", op.candidates, op.candidates == 1 ? "" : "s",
          op.plan_bits == "yes"  ? "gives B's bits"
          : op.plan_bits == "no" ? "does NOT give B's bits"
                                 : "not compared (the plan keeps A's weights)");
    } else if (!op.status.empty() && op.why != r.op_level) {  // that one said once, below
      line =
          fmt::format("seq {} ({}): {}: {}", f.seq, tokens, diff::knob_set_text(op.knobs), op.why);
    }
    if (line.empty()) continue;
    if (!any) o.line(rule("per flip", width));
    any = true;
    o.line("  " + line);
  }
}

}  // namespace

std::string render_explain_sections(const ExplainReport& r, int width) {
  TerminalText o(false, width);
  causes_section(o, r, width);
  effects_section(o, r, width);
  flips_section(o, r, width);
  details_section(o, r, width);
  if (!r.op_level.empty()) {
    o.line(rule("op level", width));
    o.line("  " + r.op_level);
  }
  if (!r.notes.empty()) {
    o.line(rule("notes", width));
    for (const auto& n : r.notes) o.line("  " + n);
  }
  return std::move(o).str();
}

std::string render_explain_terminal(const ExplainReport& r, int width) {
  TerminalText o(false, width);
  o.line(fmt::format("driftscope explain ({})", r.engine));
  o.line("  A  " + r.a_path);
  o.line("  B  " + r.b_path);
  o.line("knobs     " + knob_line(r));
  for (const auto& l : r.left_out) o.line("          left out: " + l);
  o.line("trials    " + method_line(r));
  o.line("summary   " + r.summary);
  o.line();
  return std::move(o).str() + render_explain_sections(r, width);
}

}  // namespace ds::viewer
