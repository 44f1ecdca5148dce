// JSON rendering of the flips' aggregate, field for field from diff::FlipAggregate.
#include "viewer/flips_json.h"

#include <cmath>

#include "viewer/explain_json.h"

namespace ds::viewer {
namespace {

using nlohmann::json;

json jnum(double v) {
  return std::isfinite(v) ? json(v) : json();
}

json spread(const diff::Spread& s) {
  return {{"n", s.n},         {"min", jnum(s.min)}, {"q1", jnum(s.q1)}, {"median", jnum(s.median)},
          {"q3", jnum(s.q3)}, {"max", jnum(s.max)}};
}

json place(const diff::Place& p) {
  return {{"kind", p.kind}, {"layer", p.layer}};
}

json histogram(const diff::PlaceHistogram& h) {
  json cells = json::array(), kinds = json::array();
  for (const auto& c : h.cells) {
    cells.push_back({{"kind", c.place.kind}, {"layer", c.place.layer}, {"count", c.count}});
  }
  for (const auto& k : h.kinds) kinds.push_back({{"kind", k.kind}, {"count", k.count}});
  return {{"cells", cells}, {"kinds", kinds}, {"by_layer", h.by_layer}, {"none", h.none}};
}

json nums(const std::vector<double>& v) {
  json a = json::array();
  for (double x : v) a.push_back(jnum(x));
  return a;
}

json flip_case(const diff::FlipCase& c, const diff::ExplainReport* explained) {
  json j = {{"seq", c.seq}, {"flipped", c.flipped}};
  if (!c.flipped) return j;
  j["forced"] = c.forced;
  j["step"] = c.step;
  j["row"] = c.row;
  j["margin_logit_a"] = jnum(c.margin_logit_a);
  j["margin_logit_b"] = jnum(c.margin_logit_b);
  j["logit_drift"] = jnum(c.logit_drift);
  j["margin_class"] = diff::margin_class_name(c.margin);
  j["onset"] =
      c.has_onset
          ? json{{"site", c.onset_site}, {"place", place(c.onset)}, {"position", c.onset_position}}
          : json();
  j["birth"] = c.has_birth ? json{{"block", c.birth_block},
                                  {"place", place(c.birth)},
                                  {"local", jnum(c.birth_local)}}
                           : json();
  j["top"] =
      c.has_top
          ? json{{"block", c.top_block}, {"place", place(c.top)}, {"share", jnum(c.top_share)}}
          : json();
  if (explained != nullptr) j["cause"] = diff::onset_column(c, explained);
  j["layer_rel_l2"] = nums(c.layer_rel_l2);
  j["layer_floor"] = nums(c.layer_floor);
  return j;
}

}  // namespace

json flips_json(const diff::FlipAggregate& a, const diff::ExplainReport* explained) {
  json j;
  j["format"] = kFlipsJsonFormat;
  j["version"] = kFlipsJsonVersion;
  j["near_tie_logit"] = a.near_tie_logit;
  j["pairs"] = a.pairs;
  j["flips"] = a.flips;
  j["n_layers"] = a.n_layers;
  j["storage"] = a.storage;
  j["noise_floor"] = a.noise_floor;
  j["summary"] = a.summary;
  j["steps"] = {{"values", a.steps.steps}, {"spread", spread(a.steps.spread)}};
  const auto& m = a.margins;
  j["margins"] = {{"near_tie", m.near_tie},
                  {"accumulated", m.accumulated},
                  {"unknown", m.unknown},
                  {"decades", {m.decades[0], m.decades[1], m.decades[2], m.decades[3]}},
                  {"margin_logit_a", spread(m.margin_logit_a)},
                  {"logit_drift", spread(m.logit_drift)}};
  j["onset"] = histogram(a.onset);
  j["birth"] = histogram(a.birth);
  j["top"] = histogram(a.top);
  json layers = json::array();
  for (const auto& l : a.layers) {
    layers.push_back({{"layer", l.layer},
                      {"rel_l2", spread(l.rel_l2)},
                      {"growth_median", jnum(l.growth_median)},
                      {"local", spread(l.local)},
                      {"above_floor", l.above_floor},
                      {"site_noise_floor", jnum(l.site_floor)},
                      {"site_storage", l.site_storage.empty() ? json() : json(l.site_storage)}});
  }
  j["layers"] = layers;
  json cases = json::array();
  for (const auto& c : a.cases) cases.push_back(flip_case(c, explained));
  j["sequences"] = cases;
  j["notes"] = a.notes;
  if (explained != nullptr) j["explain"] = explain_json(*explained);
  return j;
}

}  // namespace ds::viewer
