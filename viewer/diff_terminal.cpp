// Terminal rendering of a diff report (the layout is described in viewer/diff_terminal.h): the
// header, the summary table of sequences and the kernels that differ; each sequence's page is in
// viewer/diff_terminal_sequence.cpp.
#include "viewer/diff_terminal.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "common/printable.h"
#include "viewer/diff_terminal_parts.h"
#include "viewer/kernel_names.h"
#include "viewer/noise_terminal.h"

namespace ds::viewer {
namespace terminal {

std::string verdict_colored(const TerminalText& o, const diff::SequenceReport& s,
                            const std::string& v) {
  switch (s.verdict) {
    case diff::Verdict::identical:
      return o.green(v);
    case diff::Verdict::drift:
      return o.yellow(v);
    default:
      return o.red(v);
  }
}

}  // namespace terminal

namespace {

using diff::Report;
using terminal::verdict_colored;

void header(TerminalText& o, const Report& r, int width) {
  o.line(o.bold("driftscope diff"));
  auto side = [&](const char* tag, const diff::TraceSide& t) {
    const std::string status =
        t.complete ? "complete"
                   : o.yellow(fmt::format("INCOMPLETE (complete=0, {})",
                                          t.stop_reason.empty() ? "?" : printable(t.stop_reason)));
    o.line(
        fmt::format("  {}  {}  {} · {} sequence{} · {}", tag, printable(t.path), status,
                    t.sequences, t.sequences == 1 ? "" : "s",
                    printable(t.producer.empty() ? "driftscope " + t.tool_version : t.producer)));
  };
  side("A", r.a);
  side("B", r.b);
  for (const auto* t : {&r.a, &r.b}) {
    if (t->certify.empty()) continue;
    const std::string v = "certify   " + std::string(t == &r.a ? "A" : "B") + ": " + t->certify;
    o.line(t->certify.starts_with("identical") ? v : o.red(v));
  }
  if (!r.model_known) {
    o.line("model     " + o.yellow("not recorded in both traces: cannot check it is the same"));
  } else {
    o.line(fmt::format("model     {}: {}", r.model_equal ? "same" : o.red("DIFFERENT"),
                       clip(printable(fmt::format("{}", fmt::join(r.a.model_files, ", "))),
                            static_cast<size_t>(std::max(20, width - 16)))));
    if (!r.model_equal) {
      o.line(printable(fmt::format("          B: {}", fmt::join(r.b.model_files, ", "))));
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
      fw = std::max(fw, display_columns(c.field));
      aw = std::max(aw, display_columns(value(c.a)));
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

void summary_table(TerminalText& o, const Report& r, const TerminalOptions& opt) {
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

// The launch configurations of a kernel both sides launched that only one side used, then how
// many were the same on both.
void changed_configs(TerminalText& o, const diff::KernelChange& c) {
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
        o.line(fmt::format("                  {} {}", side == &c.a ? "A" : "B", launch_config(x)));
      }
    }
  }
  if (same > 0) {
    o.line(fmt::format("                  (and {} configuration{} the same on both)", same,
                       same == 1 ? "" : "s"));
  }
}

// One site's kernels: its line, then the kernels one side only launched and those whose launch
// configurations differ. Returns whether a kernel name was shortened.
bool site_kernels(TerminalText& o, const diff::SiteKernels& s, int width) {
  bool shortened = false;
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
    op_w = std::max(op_w, display_columns(u->op));
    count_w = std::max(count_w, display_columns(fmt::format(" ×{}", u->launches)));
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
    changed_configs(o, c);
  }
  return shortened;
}

// Per site: the kernels one side only launched (with launch counts), and kernels of both sides
// whose launch configurations differ (only the configurations that differ are shown).
void kernels_section(TerminalText& o, const diff::KernelReport& k, int width) {
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
  for (const auto& s : k.sites) shortened |= site_kernels(o, s, width);
  if (shortened)
    o.line(o.dim("          names shortened: the JSON report (--json) has them in full"));
}

}  // namespace

std::string render_terminal(const Report& r, const TerminalOptions& opt_in) {
  TerminalOptions opt = opt_in;
  opt.width = std::max(60, opt.width);
  TerminalText o(opt.color, opt.width);
  header(o, r, opt.width);
  if (r.noise) noise_terminal(o, *r.noise, opt.width, opt.sites);
  if (r.sequences.size() > 1) summary_table(o, r, opt);
  int pages = 0;
  for (const auto* s : diff::by_first_flip(r)) {
    if (pages++ >= opt.max_pages) break;
    terminal::sequence_page(o, *s, opt);
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
