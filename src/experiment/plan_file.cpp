// `--plan FILE` (plan_file.h): the JSON of a numerics plan, read and written.
#include "src/experiment/plan_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "src/experiment/perturb.h"

namespace ds {
namespace {

constexpr const char* kFormat = "driftscope-plan";
constexpr int kVersion = 1;

std::vector<PassShape> shapes_of(const nlohmann::json& j, const char* key) {
  std::vector<PassShape> out;
  if (!j.contains(key)) return out;
  for (const auto& s : j.at(key)) {
    const int rows = s.at(0).get<int>(), seqs = s.at(1).get<int>();
    if (s.size() != 2 || rows < 1 || seqs < 1 || seqs > rows) {
      throw Error(fmt::format("{} holds {}, not [rows >= 1, sequences 1..rows]", key, s.dump()));
    }
    out.push_back({rows, seqs});
  }
  return out;
}

nlohmann::json shapes_json(const std::vector<PassShape>& shapes) {
  nlohmann::json a = nlohmann::json::array();
  for (const PassShape& s : shapes) a.push_back({s.rows, s.seqs});
  return a;
}

}  // namespace

PlanSpec parse_plan_spec(const std::string& text, const std::string& where) {
  const char* hint = "--plan takes a plan file as explain and calibrate write it (docs/cli.md)";
  PlanSpec s;
  try {
    const auto j = nlohmann::json::parse(text);
    if (!j.is_object() || j.value("format", "") != kFormat) {
      throw Error(fmt::format("it is not a {} file", kFormat));
    }
    if (j.value("version", 0) != kVersion) {
      throw Error(fmt::format("plan format version {} (this driftscope reads {})",
                              j.value("version", 0), kVersion));
    }
    for (const auto& [k, v] : j.items()) {
      static const char* known[] = {"format", "version",  "a_shapes",    "b",
                                    "b_ops",  "b_shapes", "reorder_seed"};
      if (std::find(std::begin(known), std::end(known), k) == std::end(known)) {
        throw Error(fmt::format("unknown key '{}'", k));
      }
    }
    s.a_shapes = shapes_of(j, "a_shapes");
    s.b_shapes = shapes_of(j, "b_shapes");
    if (j.contains("b")) {
      const RunConfig b = config_from_json(j.at("b").dump(), {}, {"trace"});
      validate(b);
      s.b = b;
    }
    if (j.contains("b_ops")) s.b_ops = j.at("b_ops").get<std::vector<std::string>>();
    if (!s.b_ops.empty() && !s.b) throw Error("b_ops names ops of a second side 'b' it lacks");
    if (j.contains("reorder_seed")) s.reorder_seed = j.at("reorder_seed").get<uint64_t>();
  } catch (const Error& e) {
    throw Error(fmt::format("plan file '{}': {}", where, e.what()), hint);
  } catch (const std::exception& e) {  // JSON syntax and types
    throw Error(fmt::format("plan file '{}' is not a readable plan ({})", where, e.what()), hint);
  }
  return s;
}

std::string plan_spec_json(const PlanSpec& s) {
  nlohmann::json j{{"format", kFormat}, {"version", kVersion}};
  if (!s.a_shapes.empty()) j["a_shapes"] = shapes_json(s.a_shapes);
  if (s.b) {
    j["b"] = nlohmann::json::parse(to_json(*s.b));
    j["b_ops"] = s.b_ops;
    if (!s.b_shapes.empty()) j["b_shapes"] = shapes_json(s.b_shapes);
  }
  if (s.reorder_seed) j["reorder_seed"] = *s.reorder_seed;
  return j.dump();
}

NumericsPlan make_plan(const PlanSpec& s, const RunConfig& own, int n_layers) {
  PlanSide a{numerics(own), s.a_shapes, parse_perturbation(own.test_perturb, n_layers)};
  std::vector<OpId> ops;
  PlanSide b{a.nx, {}, {}};
  if (s.b) {
    b = {numerics(*s.b), s.b_shapes, parse_perturbation(s.b->test_perturb, n_layers)};
    if (b.nx.device != a.nx.device) {
      throw Error(fmt::format("a plan's second side runs on {}, the run on {}",
                              field_text(*s.b, "device"), field_text(own, "device")),
                  "op by op, one device: set the device in the run's own configuration");
    }
    for (const std::string& name : s.b_ops) {
      if (name == "all") {
        const auto every = all_op_ids(n_layers);
        ops.insert(ops.end(), every.begin(), every.end());
        continue;
      }
      const auto id = parse_op_id(name, n_layers);
      if (!id) {
        throw Error(
            fmt::format("plan names op '{}', which a {}-layer model does not have", name, n_layers),
            "op names are L<layer>/<op> (attn_norm, q_proj, ..., mlp_add) or "
            "embedding, final_norm, lm_head");
      }
      ops.push_back(*id);
    }
  }
  NumericsPlan plan(std::move(a), std::move(b), std::move(ops));
  if (s.reorder_seed) plan.reorder(*s.reorder_seed);
  return plan;
}

}  // namespace ds
