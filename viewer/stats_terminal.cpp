// Terminal tables of the N-way statistics report.
#include "viewer/stats_terminal.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "common/printable.h"

namespace ds::viewer {
namespace {

std::string cell(double v, const char* spec) {
  return std::isfinite(v) ? fmt::format(fmt::runtime(spec), v) : std::string("—");
}

// A row label then one right-aligned cell per group.
void row(std::string& out, const std::string& label, const std::vector<std::string>& cells) {
  out += fmt::format("{:<26}", label);
  for (const auto& c : cells) out += fmt::format(" {:>14}", c);
  out += "\n";
}

}  // namespace

std::string render_stats_terminal(const diff::StatsReport& r) {
  std::string out;
  out += fmt::format("driftscope stats: {} runs", r.runs.size());
  if (!r.varying.empty()) {
    out += ", differing in";
    for (const auto& k : r.varying) out += " " + k;
  }
  out += "\n";
  if (!r.missing.empty()) {
    out += fmt::format("missing ({}):", r.missing.size());
    for (const auto& m : r.missing) out += " " + m;
    out += "\n";
  }
  out += "\n";
  std::vector<std::string> heads;
  for (const auto& g : r.groups) heads.push_back(g.key);
  row(out, "", heads);
  auto metric = [&](const std::string& label,
                    const std::function<std::string(const diff::GroupStats&)>& f) {
    std::vector<std::string> cells;
    for (const auto& g : r.groups) cells.push_back(f(g));
    row(out, label, cells);
  };
  metric("runs (N)", [](const auto& g) { return std::to_string(g.runs.size()); });
  metric("prompts", [](const auto& g) { return std::to_string(g.prompts); });
  metric("Div_Percent", [](const auto& g) { return cell(g.div_percent, "{:.1f} %"); });
  metric("median Div_Index", [](const auto& g) {
    auto d = g.div_index;
    if (d.empty()) return std::string("—");
    std::sort(d.begin(), d.end());
    return std::to_string(d[d.size() / 2]);
  });
  metric("Avg_Std@top1_prob", [](const auto& g) { return cell(g.avg_std_top1_prob, "{:.3e}"); });
  metric("Avg_Std@Output_Length",
         [](const auto& g) { return cell(g.avg_std_output_length, "{:.2f}"); });
  metric("unique outputs (mean)",
         [](const auto& g) { return cell(g.unique_outputs_mean, "{:.2f}"); });
  metric("TARr@N", [](const auto& g) { return cell(g.tarr, "{:.1f} %"); });
  if (!r.groups.empty() && r.groups[0].tara) {
    metric("TARa@N", [](const auto& g) { return cell(g.tara.value_or(NAN), "{:.1f} %"); });
  }
  if (!r.groups.empty() && !r.groups[0].accuracy.empty()) {
    metric("Std@Acc", [](const auto& g) { return cell(g.std_acc.value_or(NAN), "{:.2f}"); });
    out += "\naccuracy per configuration (%)\n";
    for (const auto& c : r.groups[0].accuracy) {
      out += fmt::format("  {:<40} acc {:>6.2f}  (n={})", c.label, c.accuracy, c.samples);
      for (const auto& p : c.pass) {
        out += fmt::format(
            "  Pass@{} {:.1f}  G-Pass@{}_{{0.5,0.75,1.0}} {:.1f}/{:.1f}/{:.1f}  "
            "mG-Pass@{} {:.1f}",
            p.k, p.pass, p.k, p.g_pass.at("0.5"), p.g_pass.at("0.75"), p.g_pass.at("1.0"), p.k,
            p.mg_pass);
      }
      out += "\n";
    }
  }
  if (!r.attribution.empty()) {
    out += "\nattribution (pairs of runs that differ in one knob alone)\n";
    out += fmt::format("  {:<20} {:>6} {:>12} {:>18}\n", "knob", "pairs", "Div_Percent",
                       "Avg_Std@top1_prob");
    for (const auto& a : r.attribution) {
      out += fmt::format("  {:<20} {:>6} {:>12} {:>18}\n", a.knob, a.pairs,
                         cell(a.div_percent, "{:.1f} %"), cell(a.avg_std_top1_prob, "{:.3e}"));
    }
  }
  return printable(out, /*keep_newlines=*/true);  // labels and paths come from traces
}

}  // namespace ds::viewer
