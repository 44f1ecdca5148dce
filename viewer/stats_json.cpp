// JSON rendering of the N-way statistics report.
#include "viewer/stats_json.h"

#include <cmath>
#include <nlohmann/json.hpp>

namespace ds::viewer {
namespace {

using J = nlohmann::ordered_json;

J num(double v) {
  return std::isfinite(v) ? J(v) : J();
}
J num(const std::optional<double>& v) {
  return v ? num(*v) : J();
}

J group_json(const diff::GroupStats& g) {
  J j;
  j["key"] = g.key;
  j["runs"] = g.runs;
  j["n"] = g.runs.size();
  j["prompts"] = g.prompts;
  j["div_percent"] = num(g.div_percent);
  j["div_index"] = g.div_index;
  j["avg_std_top1_prob"] = num(g.avg_std_top1_prob);
  j["top1_prompts"] = g.top1_prompts;
  j["avg_std_output_length"] = num(g.avg_std_output_length);
  j["unique_outputs"] = g.unique_outputs;
  j["unique_outputs_mean"] = num(g.unique_outputs_mean);
  j["tarr"] = num(g.tarr);
  j["tara"] = num(g.tara);
  if (!g.accuracy.empty()) {
    J acc = J::array();
    for (const auto& c : g.accuracy) {
      J cj;
      cj["config"] = c.label;
      cj["samples"] = c.samples;
      cj["accuracy"] = num(c.accuracy);
      J pass = J::array();
      for (const auto& p : c.pass) {
        J pj;
        pj["k"] = p.k;
        pj["pass"] = num(p.pass);
        J gp;
        for (const auto& [tau, v] : p.g_pass) gp[tau] = num(v);
        pj["g_pass"] = gp;
        pj["mg_pass"] = num(p.mg_pass);
        pass.push_back(pj);
      }
      cj["pass_at_k"] = pass;
      acc.push_back(cj);
    }
    j["accuracy"] = acc;
    j["std_acc"] = num(g.std_acc);
  }
  return j;
}

}  // namespace

std::string render_stats_json(const diff::StatsReport& r, int indent) {
  J j;
  j["format"] = kStatsJsonFormat;
  j["version"] = kStatsJsonVersion;
  j["runs"] = r.runs;
  j["missing"] = r.missing;
  j["varying"] = r.varying;
  j["group_by"] = r.group_by.empty() ? J() : J(r.group_by);
  J groups = J::array();
  for (const auto& g : r.groups) groups.push_back(group_json(g));
  j["groups"] = groups;
  J attr = J::array();
  for (const auto& a : r.attribution) {
    attr.push_back({{"knob", a.knob},
                    {"pairs", a.pairs},
                    {"div_percent", num(a.div_percent)},
                    {"avg_std_top1_prob", num(a.avg_std_top1_prob)}});
  }
  j["attribution"] = attr;
  J pairwise = J::array();
  for (const auto& row : r.pairwise_differ) {
    J jr = J::array();
    for (double v : row) jr.push_back(num(v));
    pairwise.push_back(jr);
  }
  j["pairwise_differ_percent"] = pairwise;
  return j.dump(indent) + "\n";
}

}  // namespace ds::viewer
