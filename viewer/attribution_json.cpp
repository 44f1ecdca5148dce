// JSON rendering of the attribution report, field for field from the report struct.
#include "viewer/attribution_json.h"

#include <cmath>
#include <nlohmann/json.hpp>

namespace ds::viewer {
namespace {

nlohmann::ordered_json jnum(double v) {
  return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json();
}

nlohmann::ordered_json nums(const std::vector<double>& v) {
  nlohmann::ordered_json a = nlohmann::ordered_json::array();
  for (double x : v) a.push_back(jnum(x));
  return a;
}

}  // namespace

std::string render_attribution_json(const diff::AttributionReport& r, int indent) {
  nlohmann::ordered_json j;
  j["format"] = kAttributionJsonFormat;
  j["version"] = kAttributionJsonVersion;
  j["a"] = {{"path", r.a_path}, {"dtype", r.a_dtype}};
  j["b"] = {{"dtype", r.b_dtype},
            {"config",
             nlohmann::ordered_json::parse(r.b_config_json.empty() ? "null" : r.b_config_json)}};
  j["storage"] = r.storage;
  j["noise_floor"] = r.noise_floor;
  j["split"] = r.split;
  j["n_layers"] = r.n_layers;
  j["sequences"] = r.sequences;
  j["positions"] = r.positions;
  j["sequence_ids"] = r.sequence_ids;
  j["verdict"] = r.verdict;
  nlohmann::ordered_json blocks = nlohmann::ordered_json::array();
  for (const auto& b : r.blocks) {
    blocks.push_back(
        {{"name", b.name},
         {"kind", b.kind},
         {"layer", b.layer},
         {"site", b.site},
         {"local", jnum(b.local)},
         {"total", jnum(b.total)},
         {"inherited", jnum(b.inherited)},
         {"local_max", jnum(b.local_max)},
         {"positions", b.positions},
         {"nan", b.nan},
         {"origin", b.origin},
         {"share", b.share},
         {"by_sequence", {{"local", nums(b.local_by_seq)}, {"total", nums(b.total_by_seq)}}}});
  }
  j["blocks"] = blocks;
  nlohmann::ordered_json ranking = nlohmann::ordered_json::array();
  for (int i : r.ranking) ranking.push_back(r.blocks[i].name);
  j["ranking"] = ranking;
  return j.dump(indent);
}

}  // namespace ds::viewer
