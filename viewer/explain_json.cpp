// JSON rendering of the explain report, field for field from diff::ExplainReport.
#include "viewer/explain_json.h"

#include <cmath>

namespace ds::viewer {
namespace {

using nlohmann::json;

json jnum(double v) {
  return std::isfinite(v) ? json(v) : json();
}

json nums(const std::vector<double>& v) {
  json a = json::array();
  for (double x : v) a.push_back(jnum(x));
  return a;
}

json trials(const std::vector<diff::ExplainTrial>& t) {
  json a = json::array();
  for (const auto& x : t) {
    json j = {{"set", x.set},
              {"verdict", diff::trial_verdict_name(x.outcome.verdict)},
              {"margin", jnum(x.outcome.margin)}};
    if (!x.outcome.why.empty()) j["why"] = x.outcome.why;
    a.push_back(j);
  }
  return a;
}

json ops(const diff::OpCause& o) {
  if (o.status.empty()) return nullptr;
  json j = {{"status", o.status}, {"knobs", o.knobs}};
  if (!o.why.empty()) j["why"] = o.why;
  if (o.status == "skipped") return j;
  j["candidates"] = o.candidates;
  j["set"] = o.ops;
  j["what"] = o.what;
  j["single"] = o.single;
  j["trials"] = o.trials;
  j["margin_all"] = jnum(o.margin_all);
  j["plan_bits"] = o.plan_bits.empty() ? json() : json(o.plan_bits == "yes");
  j["trials_run"] = trials(o.trials_run);
  return j;
}

json flip(const diff::FlipExplanation& f) {
  json j = {{"seq", f.seq},
            {"step", f.step},
            {"row", f.row},
            {"token_a", f.token_a},
            {"token_b", f.token_b},
            {"text_a", f.text_a},
            {"text_b", f.text_b},
            {"verdict", f.verdict},
            {"why", f.why},
            {"method", f.method},
            {"margin_before", jnum(f.margin_before)},
            {"margin_after", jnum(f.margin_after)},
            {"knob_sets", f.knob_sets},
            {"knob_set_trials", f.knob_set_trials},
            {"knob_trials", f.knob_trials},
            {"trials", trials(f.trials)}};
  if (!f.main_effect.empty()) {
    json inter = json::array();
    for (const auto& [knobs, value] : f.interactions) {
      inter.push_back({{"knobs", knobs}, {"value", jnum(value)}});
    }
    j["effects"] = {{"main", nums(f.main_effect)},
                    {"shapley", nums(f.shapley)},
                    {"share", nums(f.share)},
                    {"interactions", inter}};
  } else {
    j["effects"] = nullptr;
  }
  j["ops"] = ops(f.ops);
  j["place"] = f.place;
  j["onset"] = f.onset.empty() ? json() : json(f.onset);
  j["born_in"] = f.born_in.empty() ? json() : json(f.born_in);
  return j;
}

}  // namespace

json explain_json(const diff::ExplainReport& r) {
  json j;
  j["format"] = kExplainJsonFormat;
  j["version"] = kExplainJsonVersion;
  j["a"] = r.a_path;
  j["b"] = r.b_path;
  j["engine"] = r.engine;
  json knobs = json::array();
  for (const auto& k : r.knobs) knobs.push_back({{"name", k.name}, {"a", k.a}, {"b", k.b}});
  j["knobs"] = knobs;
  j["left_out"] = r.left_out;
  j["op_level"] = r.op_level.empty() ? json() : json(r.op_level);
  j["factorial_max"] = r.factorial_max;
  j["summary"] = r.summary;
  j["flips"] = r.flips.size();
  j["explained"] = r.explained;
  j["no_cause"] = r.no_cause;
  j["unresolved"] = r.unresolved;
  json causes = json::array();
  for (const auto& c : r.causes) {
    json ops = json::array();
    for (const auto& o : c.ops) ops.push_back({{"op", o.op}, {"flips", o.flips}});
    causes.push_back(
        {{"knobs", c.knobs}, {"flips", c.seqs.size()}, {"seqs", c.seqs}, {"ops", ops}});
  }
  j["causes"] = causes;
  json effects = json::array();
  for (const auto& e : r.effects) {
    effects.push_back({{"knob", e.knob},
                       {"in_sets", e.in_sets},
                       {"measured", e.measured},
                       {"main_mean", jnum(e.main_mean)},
                       {"share_mean", jnum(e.share_mean)}});
  }
  j["effects"] = effects;
  json inter = json::array();
  for (const auto& [knobs, value] : r.interactions) {
    inter.push_back({{"knobs", knobs}, {"mean", jnum(value)}});
  }
  j["interactions"] = inter;
  j["trials"] = {{"knob_runs", r.knob_runs}, {"op_runs", r.op_runs}, {"wall_s", jnum(r.wall_s)}};
  json flips = json::array();
  for (const auto& f : r.flips) flips.push_back(flip(f));
  j["sequences"] = flips;
  j["notes"] = r.notes;
  return j;
}

}  // namespace ds::viewer
