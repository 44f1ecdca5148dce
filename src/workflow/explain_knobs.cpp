// explain's knobs: what differs between the two sides, and a trial's configuration or command.
#include "src/workflow/explain_knobs.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "common/error.h"

namespace ds {
namespace {

// A driftscope run's fields that are no knobs, and why.
const std::map<std::string, std::string>& not_knobs() {
  static const std::map<std::string, std::string> m = {
      {"max_new", "ends generation, not what a row chooses"},
      {"stop_token", "ends generation, not what a row chooses"},
      {"top_p", "no effect on a greedy choice"},
      {"top_k", "no effect on a greedy choice"},
      {"seed", "no effect on a greedy choice"}};
  return m;
}

// A recorder's options that are knobs (its flag → the knob's name); the rest are recording
// options, the model's files or sampling options.
const std::map<std::string, std::string>& recorder_knobs(const std::string& engine) {
  static const std::map<std::string, std::string> transformers = {
      {"--dtype", "dtype"},     {"--device", "device"},
      {"--batch", "batch"},     {"--attn-implementation", "attn_implementation"},
      {"--threads", "threads"}, {"--tie-break", "tie_break"},
      {"--add-bos", "add_bos"}, {"--repetition-penalty", "repetition_penalty"}};
  static const std::map<std::string, std::string> llamacpp = {
      {"-m", "weights"},        {"--kv-type", "kv_type"},
      {"--threads", "threads"}, {"--tie-break", "tie_break"},
      {"--add-bos", "add_bos"}, {"--repetition-penalty", "repetition_penalty"}};
  return engine == "llama.cpp" ? llamacpp : transformers;
}

// A recorder's options as (flag, value) pairs after the subcommand; a flag without a value has "".
std::vector<std::pair<std::string, std::string>> option_pairs(const std::vector<std::string>& o) {
  std::vector<std::pair<std::string, std::string>> out;
  for (size_t i = 1; i < o.size(); ++i) {
    if (o[i] == "--full-logits" || i + 1 == o.size()) {
      out.emplace_back(o[i], "");
    } else {
      out.emplace_back(o[i], o[i + 1]);
      ++i;
    }
  }
  return out;
}

std::string text_of(const nlohmann::ordered_json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

void refuse_sampling(double temperature_a, double temperature_b) {
  if (temperature_a > 0 || temperature_b > 0) {
    throw Error(fmt::format("explain replays greedy choices, and a run samples (temperature {} in "
                            "A, {} in B)",
                            temperature_a, temperature_b),
                "explain two greedy runs (temperature 0); a sampled token is a draw, not the "
                "row's top token, so no trial can tell whose token wins");
  }
}

KnobSpace driftscope_knobs(const ZoomSide& a, const ZoomSide& b) {
  refuse_sampling(a.config.temperature, b.config.temperature);
  KnobSpace s;
  s.engine = "driftscope";
  const auto ja = nlohmann::ordered_json::parse(to_json(a.config));
  const auto jb = nlohmann::ordered_json::parse(to_json(b.config));
  std::vector<std::string> names;
  for (const auto& [k, v] : ja.items()) names.push_back(k);
  for (const auto& [k, v] : jb.items()) {
    if (!ja.contains(k)) names.push_back(k);  // test_perturb, set on B alone
  }
  for (const std::string& k : names) {
    const std::string va = ja.contains(k) ? text_of(ja[k]) : "",
                      vb = jb.contains(k) ? text_of(jb[k]) : "";
    if (va == vb) continue;
    if (const auto it = not_knobs().find(k); it != not_knobs().end()) {
      s.left_out.push_back(fmt::format("{} ({} vs {}): {}", k, va, vb, it->second));
    } else {
      s.knobs.push_back({k, va, vb});
    }
  }
  return s;
}

KnobSpace recorder_knob_space(const ZoomSide& a, const ZoomSide& b) {
  const RecorderReplay& ra = *a.recorder;
  const RecorderReplay& rb = *b.recorder;
  if (ra.engine != rb.engine || ra.options.empty() || rb.options.empty() ||
      ra.options.front() != rb.options.front()) {
    throw Error(fmt::format("A was recorded from {} and B from {}: explain cannot mix two engines' "
                            "knobs",
                            ra.engine, rb.engine),
                "explain two traces of one engine; driftscope diff compares any two");
  }
  KnobSpace s;
  s.engine = ra.engine;
  const auto pa = option_pairs(ra.options), pb = option_pairs(rb.options);
  std::map<std::string, std::string> vb(pb.begin(), pb.end());
  auto temperature = [](const std::vector<std::pair<std::string, std::string>>& p) {
    for (const auto& [f, v] : p) {
      if (f == "--temperature") return std::atof(v.c_str());
    }
    return 0.0;
  };
  refuse_sampling(temperature(pa), temperature(pb));
  const auto& knobs = recorder_knobs(s.engine);
  for (const auto& [flag, va] : pa) {
    const auto it = vb.find(flag);
    const std::string other = it == vb.end() ? "(absent)" : it->second;
    if (other == va) continue;
    if (const auto k = knobs.find(flag); k != knobs.end() && it != vb.end()) {
      s.knobs.push_back({k->second, va, other});
    } else {
      s.left_out.push_back(
          fmt::format("{} ({} vs {}): a recording option or the model's files, not a knob of {}",
                      flag, va.empty() ? "set" : va, other.empty() ? "set" : other, s.engine));
    }
  }
  return s;
}

}  // namespace

KnobSpace knob_space(const ZoomSide& a, const ZoomSide& b) {
  if (a.recorder.has_value() != b.recorder.has_value()) {
    throw Error(
        fmt::format("A was written by {} and B by {}: explain cannot mix a driftscope run's "
                    "knobs with a recorder's",
                    a.recorder ? a.recorder->engine : "driftscope",
                    b.recorder ? b.recorder->engine : "driftscope"),
        "explain two traces of one engine; driftscope diff compares any two");
  }
  return a.recorder ? recorder_knob_space(a, b) : driftscope_knobs(a, b);
}

RunConfig trial_config(const RunConfig& a, const KnobSpace& s, const std::vector<int>& set) {
  RunConfig c = a;
  for (int k : set) set_field(c, s.knobs[k].name, s.knobs[k].b);
  return c;
}

std::vector<std::string> trial_options(const RecorderReplay& a, const KnobSpace& s,
                                       const std::vector<int>& set) {
  std::vector<std::string> o = a.options;
  const auto& knobs = recorder_knobs(s.engine);
  for (int k : set) {
    for (const auto& [flag, name] : knobs) {
      if (name != s.knobs[k].name) continue;
      const auto it = std::find(o.begin() + 1, o.end(), flag);
      if (it != o.end() && it + 1 != o.end()) *(it + 1) = s.knobs[k].b;
    }
  }
  return o;
}

bool sets_batch(const KnobSpace& s, const std::vector<int>& set) {
  return std::any_of(set.begin(), set.end(), [&](int k) { return s.knobs[k].name == "batch"; });
}

bool op_level_knob(const std::string& name) {
  static const char* const ops[] = {"dtype",   "accum",       "batch",     "gemm_policy",
                                    "split_k", "tp",          "allreduce", "attn_splits",
                                    "kernel",  "test_perturb"};
  return std::find(std::begin(ops), std::end(ops), name) != std::end(ops);
}

}  // namespace ds
