// The calibration's plan and its state (calibrate_plan.h).
#include "src/workflow/calibrate_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "common/error.h"
#include "common/output_file.h"
#include "src/workflow/zoom_recorder.h"

namespace ds {
namespace {

const char* kPerturbationHint =
    "--perturb takes reorder (another valid reduction order at every op), sr (stochastic "
    "rounding of op outputs, +-1 ulp) or reorder+sr";

// A trace calibrate can replay: complete, whole, by driftscope, under no plan.
void check_calibratable(const trace::TraceReader& a) {
  const std::string name = a.path().string();
  if (!a.complete()) {
    throw Error(fmt::format("trace '{}' is incomplete (complete=0: its run was interrupted)", name),
                "calibrate a complete trace: run or resume its run first");
  }
  if (const auto& cut = a.cut_short()) {
    throw Error(fmt::format("trace '{}' is damaged: cut short ({} of {} bytes on disk)", name,
                            cut->on_disk, cut->expected),
                "copy or record the trace again (driftscope show names what is missing)");
  }
  if (written_by_recorder(a)) {
    throw Error(fmt::format("trace '{}' was written by {}, whose engine driftscope cannot reorder",
                            name, a.producer()),
                "calibrate a trace of driftscope run (the CPU emulation draws the benign "
                "reduction orders)");
  }
  const auto j = nlohmann::json::parse(a.config_json(), nullptr, false);
  if (j.is_object() && (j.contains("plan") || j.contains("test_perturb"))) {
    throw Error(fmt::format("trace '{}' ran under a numerics plan or a test perturbation", name),
                "calibrate a trace of a plain run configuration");
  }
}

std::string trace_option(const nlohmann::json& config, const char* key, const std::string& def) {
  if (!config.is_object() || !config.contains("trace") || !config["trace"].is_object()) return def;
  const auto& t = config["trace"];
  if (!t.contains(key)) return def;
  return t[key].is_string() ? t[key].get<std::string>() : t[key].dump();
}

nlohmann::ordered_json identity_json(const CalibratePlan& p) {
  return {{"format", "driftscope-calibrate"},
          {"version", 1},
          {"a", p.a},
          {"floor", p.floor},
          {"perturbation", p.perturbation},
          {"sequences", p.sequences},
          {"replay", p.replay}};
}

}  // namespace

CalibratePlan make_calibrate_plan(const trace::TraceReader& a, const std::filesystem::path& floor,
                                  const std::vector<int>& seqs, int runs,
                                  const std::string& perturbation) {
  if (perturbation != "reorder" && perturbation != "sr" && perturbation != "reorder+sr") {
    throw Error(fmt::format("unknown perturbation '{}'", perturbation), kPerturbationHint);
  }
  CalibratePlan p;
  p.a = std::filesystem::absolute(a.path()).lexically_normal().string();
  p.floor = std::filesystem::absolute(floor).lexically_normal().string();
  p.perturbation = perturbation;
  p.runs = runs;
  check_calibratable(a);
  p.config = recorded_config(a);
  if (p.config.device != Device::cpu) {
    throw Error(fmt::format("trace '{}' ran on {}: calibration replays need the CPU emulation, "
                            "which can take another reduction order at every op",
                            p.a, field_text(p.config, "device")),
                "record A with --device cpu (the CPU reference emulates the GPU's numerics), "
                "then calibrate it");
  }
  p.model = verified_replay_model(
      a,
      "calibrate replays the model A records: put it back at that path (relative paths are read "
      "from the folder A was recorded in), or record A again");
  const auto config = nlohmann::json::parse(a.config_json(), nullptr, false);
  p.hidden_dtype = trace_option(config, "hidden_dtype", "f32");
  p.topk = std::stoi(trace_option(config, "topk", "20"));
  const std::vector<int> all = a.sequence_indices();
  if (all.empty()) throw Error(fmt::format("trace '{}' holds no sequence", p.a));
  const std::set<int> wanted(seqs.begin(), seqs.end());
  for (int i : wanted) {
    if (!std::binary_search(all.begin(), all.end(), i)) {
      throw Error(fmt::format("sequence {} is not in trace '{}'", i, p.a),
                  fmt::format("--seq takes indices of its sequences (it holds {})", all.size()));
    }
  }
  p.sequences = wanted.empty() ? all : std::vector<int>(wanted.begin(), wanted.end());
  // Batch groups are runs of `batch` consecutive prompts: replaying whole groups keeps every
  // forward pass's rows (and with them the shapes that decide split-K and split-KV) as in A.
  const int batch = std::max(1, p.config.batch);
  std::set<int> blocks;
  for (int i : p.sequences) blocks.insert(i / batch);
  for (int i : all) {
    if (blocks.count(i / batch)) p.replay.push_back(i);
  }
  for (int k = 0; k <= runs; ++k) p.state.push_back({k, "pending"});
  return p;
}

std::filesystem::path calibrate_dir(const std::filesystem::path& floor) {
  std::filesystem::path d = floor;
  d += ".calibrate";
  return d;
}

std::filesystem::path calibrate_prompts(const std::filesystem::path& dir) {
  return dir / "prompts.jsonl";
}
std::filesystem::path calibrate_config(const std::filesystem::path& dir) {
  return dir / "config.toml";
}
std::string run_name(int k) {
  return k == 0 ? "reference" : fmt::format("replay-{}", k);
}
std::filesystem::path run_plan(const std::filesystem::path& dir, int k) {
  return dir / "plans" / (run_name(k) + ".json");
}
std::filesystem::path run_trace(const std::filesystem::path& dir, int k) {
  return dir / (run_name(k) + ".h5");
}
std::filesystem::path run_measure(const std::filesystem::path& dir, int k) {
  return dir / "measures" / (run_name(k) + ".json");
}

std::string replay_plan_json(const std::string& perturbation, int k) {
  nlohmann::ordered_json j{{"format", "driftscope-plan"}, {"version", 1}};
  if (perturbation == "reorder" || perturbation == "reorder+sr") j["reorder_seed"] = k;
  if (perturbation == "sr" || perturbation == "reorder+sr") j["sr_seed"] = k;
  return j.dump() + "\n";
}

std::string calibrate_prompts_text(const CalibratePlan& p, const trace::TraceReader& a) {
  std::string out;
  for (int i : p.replay) {
    const trace::SequenceInfo s = a.sequence(i);
    out += forced_prompt_line(s.tokens, s.prompt_len, s.gen_len);
  }
  return out;
}

ChildRun calibrate_child(const std::filesystem::path& dir, const CalibratePlan& p, int k) {
  const auto abs = std::filesystem::absolute(dir);
  std::vector<std::string> extra = {"--hidden-dtype", p.hidden_dtype, "--trace-topk",
                                    std::to_string(p.topk)};
  if (k > 0) extra.insert(extra.end(), {"--plan", run_plan(abs, k).string()});
  return {run_name(k), replay_argv(calibrate_config(abs), calibrate_prompts(abs), p.model,
                                   run_trace(abs, k), extra)};
}

void write_calibrate_state(const std::filesystem::path& dir, const CalibratePlan& p) {
  nlohmann::ordered_json j = identity_json(p);
  j["runs"] = p.runs;
  nlohmann::ordered_json runs = nlohmann::ordered_json::array();
  for (const CalibrateRun& r : p.state) {
    nlohmann::ordered_json e = {{"name", run_name(r.k)}, {"seed", r.k}};
    e["plan"] = r.k == 0 ? nlohmann::ordered_json()
                         : nlohmann::ordered_json("plans/" + run_name(r.k) + ".json");
    e["trace"] = run_name(r.k) + ".h5";
    e["measure"] = r.k == 0 ? nlohmann::ordered_json()
                            : nlohmann::ordered_json("measures/" + run_name(r.k) + ".json");
    e["status"] = r.status;
    runs.push_back(e);
  }
  j["replays"] = runs;
  j["slurm_jobs"] = p.slurm_jobs;
  write_file_or_fail(dir / "calibrate.json", j.dump(2) + "\n");
}

void merge_calibrate_state(const std::filesystem::path& dir, CalibratePlan& p) {
  const auto path = dir / "calibrate.json";
  nlohmann::ordered_json j;
  try {
    std::ifstream in(path);
    j = nlohmann::ordered_json::parse(in);
    const nlohmann::ordered_json mine = identity_json(p);
    for (const auto& [k, v] : mine.items()) {
      if (!j.contains(k) || j[k] != v) {
        throw Error(fmt::format("'{}' holds another calibration (another trace, floor, --seq or "
                                "--perturb)",
                                dir.string()),
                    "give the same trace and options to resume, or remove that folder");
      }
    }
    p.slurm_jobs = j.value("slurm_jobs", std::vector<std::string>{});
    for (const auto& r : j.at("replays")) {
      const int k = r.at("seed").get<int>();
      if (k >= 0 && k < static_cast<int>(p.state.size())) {
        p.state[static_cast<size_t>(k)].status = r.value("status", "pending");
      }
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("'{}' is not a valid calibration state: {}", path.string(), e.what()),
                "remove the folder to calibrate from the start");
  }
}

}  // namespace ds
