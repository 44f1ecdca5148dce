// Grid expansion, configuration names and the sweep's state file.
#include "src/workflow/sweep_plan.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/error.h"
#include "common/json_error.h"
#include "common/output_file.h"
#include "src/model/text_file.h"
#include "trace/reader.h"
#include "trace/summary.h"

namespace ds {
namespace {

std::string field_name(std::string s) {
  for (char& c : s) c = c == '-' ? '_' : c;
  return s;
}

// A file-name-safe form of a value: letters, digits, '.', '+'; anything else becomes '_'.
std::string name_part(const std::string& v) {
  std::string out;
  for (char c : v)
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '+') ? c : '_';
  return out;
}

// A grid knob as a sweep accepts it, from --grid or from a sweep.json: a run-config field (its
// name in canonical form), at least one value, every value one the field takes, given once. Its
// values are made canonical ("04" -> "4"), as the field writes them.
void check_knob(GridKnob& k, const std::vector<GridKnob>& before) {
  // each value set on the same config: an unknown field or a bad value throws, and two values
  // that make the same configuration ("1,1", or "1,01" for a seed) would give one run the
  // grid's size counts twice
  std::vector<std::pair<std::string, std::string>> made;  // value, its canonical text
  for (const auto& v : k.values) {
    RunConfig probe;
    set_field(probe, k.name, v);
    std::string config = field_text(probe, k.name);
    for (const auto& [other, same] : made) {
      if (same == config) {
        throw Error(fmt::format("grid knob '{}' lists {} twice{}", k.name,
                                other == v ? "'" + v + "'" : "'" + other + "' and '" + v + "'",
                                other == v ? "" : " (the same value)"),
                    "list each value once");
      }
    }
    made.emplace_back(v, std::move(config));
  }
  for (size_t i = 0; i < made.size(); ++i) k.values[i] = made[i].second;
  if (k.values.empty()) {
    throw Error(fmt::format("grid knob '{}' has no values", k.name),
                "--grid takes e.g. 'dtype=bf16,fp16,fp32'");
  }
  for (const auto& g : before) {
    if (g.name == k.name) {
      throw Error(fmt::format("grid knob '{}' is given twice", k.name),
                  "list each knob once with all its values: dtype=bf16,fp16");
    }
  }
}

}  // namespace

std::vector<GridKnob> parse_grid(const std::string& arg,
                                 const std::function<std::string(const std::string&)>& option_of) {
  std::string spec = arg;
  if (!arg.empty() && arg[0] == '@') {  // a grid file; '#' starts a comment
    std::string text = read_text_file(
        arg.substr(1), kMaxRunConfigBytes, "grid file",
        "--grid @FILE takes a file of knob=v1,v2 items, e.g. configs/grid-seeds-12.txt");
    if (text.starts_with(kUtf8Bom)) text.erase(0, kUtf8Bom.size());  // as in prompts files
    std::istringstream file(text);
    spec.clear();
    std::string line;
    while (std::getline(file, line)) spec += line.substr(0, line.find('#')) + "\n";
  }
  std::vector<GridKnob> grid;
  std::istringstream in(spec);
  std::string item;
  while (in >> item) {
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw Error(fmt::format("grid item '{}' is not knob=v1,v2,...", item),
                  "--grid takes e.g. 'dtype=bf16,fp16,fp32 batch=1,8,32 tp=1,2,4'");
    }
    GridKnob k;
    k.name = field_name(item.substr(0, eq));
    if (const std::string flag = option_of && find_run_config_field(k.name) == nullptr
                                     ? option_of(item.substr(0, eq))
                                     : std::string();
        !flag.empty()) {
      throw Error(
          fmt::format("grid knob '{}' is an option of the command line, not a "
                      "run-configuration field",
                      item.substr(0, eq)),
          fmt::format("give {} on the command line: it applies to every configuration", flag));
    }
    std::istringstream values(item.substr(eq + 1));
    std::string v;
    while (std::getline(values, v, ',')) {
      if (!v.empty()) k.values.push_back(v);
    }
    check_knob(k, grid);
    grid.push_back(std::move(k));
  }
  if (grid.empty()) throw Error("the grid is empty", "--grid takes e.g. 'dtype=bf16,fp16,fp32'");
  return grid;
}

void add_samples(std::vector<GridKnob>& grid, int samples, uint64_t seed) {
  if (samples < 1) {
    throw Error(fmt::format("--samples {} must be >= 1", samples),
                "--samples K runs K seeds per configuration; leave it out for one");
  }
  if (static_cast<uint64_t>(samples) > kMaxSweepConfigurations) {
    throw Error(fmt::format("--samples {} is more than the limit of {} configurations", samples,
                            kMaxSweepConfigurations),
                "split the samples over several sweeps (--seed S --samples K in each)");
  }
  for (const auto& g : grid) {
    if (g.name == "seed") {
      throw Error("--samples sets the seeds itself", "drop seed from --grid, or drop --samples");
    }
  }
  // seeds S .. S + K - 1 must all be seeds: past 2^64 - 1 they would wrap to 0, 1, ...
  const uint64_t last_free = std::numeric_limits<uint64_t>::max() - seed;
  if (static_cast<uint64_t>(samples) - 1 > last_free) {
    throw Error(
        fmt::format("--samples {} from --seed {} passes the largest seed, {}", samples, seed,
                    std::numeric_limits<uint64_t>::max()),
        fmt::format("the seeds are --seed .. --seed + {}: give --seed {} at most", samples - 1,
                    std::numeric_limits<uint64_t>::max() - static_cast<uint64_t>(samples - 1)));
  }
  GridKnob k{"seed", {}};
  for (int i = 0; i < samples; ++i)
    k.values.push_back(std::to_string(seed + static_cast<uint64_t>(i)));
  grid.push_back(std::move(k));
}

std::vector<SweepEntry> expand_grid(const RunConfig& base, const std::vector<GridKnob>& grid) {
  uint64_t count = 1;
  for (const auto& g : grid) {
    if (g.values.empty()) {
      throw Error(fmt::format("grid knob '{}' has no values", g.name),
                  "--grid takes e.g. 'dtype=bf16,fp16,fp32'");
    }
    count *= g.values.size();  // no overflow: each factor and the product so far are bounded
    if (count > kMaxSweepConfigurations) {
      throw Error(fmt::format("the grid has more than the limit of {} configurations",
                              kMaxSweepConfigurations),
                  "split it into several sweeps, or give its knobs fewer values");
    }
  }
  std::vector<SweepEntry> out;
  std::vector<size_t> at(grid.size(), 0);
  while (true) {
    SweepEntry e;
    e.config = base;
    for (size_t i = 0; i < grid.size(); ++i) {
      const auto& v = grid[i].values[at[i]];
      e.knobs.push_back({grid[i].name, v});
      set_field(e.config, grid[i].name, v);
      if (grid[i].values.size() > 1) {
        e.name += fmt::format("{}{}-{}", e.name.empty() ? "" : "_", grid[i].name, name_part(v));
      }
    }
    if (e.name.empty()) e.name = "base";
    try {
      validate(e.config);
    } catch (const Error& err) {
      throw Error(fmt::format("configuration {}: {}", e.name, err.what()), err.hint());
    }
    out.push_back(std::move(e));
    size_t i = grid.size();
    while (i > 0) {
      --i;
      if (++at[i] < grid[i].values.size()) break;
      at[i] = 0;
      if (i == 0) return out;
    }
    if (grid.empty()) return out;
  }
}

std::filesystem::path sweep_json_path(const std::filesystem::path& dir) {
  return dir / "sweep.json";
}
std::filesystem::path entry_trace(const std::filesystem::path& dir, const SweepEntry& e) {
  return dir / (e.name + ".h5");
}
std::filesystem::path entry_config(const std::filesystem::path& dir, const SweepEntry& e) {
  return dir / "configs" / (e.name + ".toml");
}

void write_sweep_state(const std::filesystem::path& dir, const SweepState& s) {
  nlohmann::ordered_json j;
  j["format"] = "driftscope-sweep";
  j["version"] = 1;
  nlohmann::ordered_json grid;
  for (const auto& g : s.grid) grid[g.name] = g.values;
  j["grid"] = grid;
  j["base"] = nlohmann::ordered_json::parse(to_json(s.base));
  j["prompts"] = s.prompts;
  j["model"] = s.model;
  j["tokenizer"] = s.tokenizer;
  j["probes"] = s.probes;
  j["slurm_jobs"] = s.slurm_jobs;
  nlohmann::ordered_json entries = nlohmann::ordered_json::array();
  for (const auto& e : s.entries) {
    nlohmann::ordered_json knobs;
    for (const auto& [k, v] : e.knobs) knobs[k] = v;
    entries.push_back(
        {{"name", e.name}, {"knobs", knobs}, {"trace", e.name + ".h5"}, {"status", e.status}});
  }
  j["configurations"] = entries;
  const auto path = sweep_json_path(dir);
  write_file_or_fail(path, j.dump(2) + "\n");  // whole: a reader never sees half a file
}

SweepState read_sweep_state(const std::filesystem::path& dir) {
  const auto path = sweep_json_path(dir);
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    throw Error(fmt::format("'{}' holds no sweep.json", dir.string()),
                "pass the -o directory of `driftscope sweep`, or trace files");
  }
  const char* hint =
      "sweep.json is the state `driftscope sweep` keeps in its -o folder; run the "
      "sweep again into a new -o folder";
  // bounded, and a regular file: a folder, a FIFO or a huge file is refused, never waited on
  const std::string text = read_regular_text_file(path, kMaxStateFileBytes, "sweep file", hint);
  SweepState s;
  try {
    const auto j = nlohmann::ordered_json::parse(text);  // the grid keeps its order
    if (!j.is_object() || j.value("format", "") != "driftscope-sweep") {
      throw Error(fmt::format("'{}' is not a sweep file (no \"format\": \"driftscope-sweep\")",
                              path.string()),
                  hint);
    }
    s.prompts = j.at("prompts").get<std::string>();
    s.model = j.at("model").get<std::string>();
    s.tokenizer = j.at("tokenizer").get<std::string>();
    s.probes = j.value("probes", std::string("default"));  // sweeps before --probes: the default
    s.slurm_jobs = j.value("slurm_jobs", std::vector<std::string>{});
    try {  // the checks of --grid: a hand-edited or damaged file must not reach the runs
      s.base = config_from_json(j.at("base").dump());
      for (const auto& [k, v] : j.at("grid").items()) {
        GridKnob knob{field_name(k), v.get<std::vector<std::string>>()};
        check_knob(knob, s.grid);
        s.grid.push_back(std::move(knob));
      }
      s.entries = expand_grid(s.base, s.grid);  // every configuration validated
    } catch (const Error& e) {
      throw Error(fmt::format("'{}' is not a valid sweep file: {}", path.string(), e.what()),
                  "run the sweep again with --grid into a new -o folder");
    }
    const auto& entries = j.at("configurations");
    for (size_t i = 0; i < s.entries.size() && i < entries.size(); ++i) {
      s.entries[i].status = entries[i].value("status", "pending");
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(
        json_parse_failure(fmt::format("'{}' is not a valid sweep file", path.string()), text, e),
        hint);
  }
  return s;
}

bool trace_done(const std::filesystem::path& trace, const RunConfig& config,
                const std::string& probes, bool read_rows) {
  if (!std::filesystem::exists(trace)) return false;
  try {
    const auto r = trace::TraceReader::open(trace);
    if (!r.complete() || r.cut_short()) return false;
    auto recorded = nlohmann::json::parse(r.config_json());
    if (!probes.empty() &&
        recorded.value("trace", nlohmann::json::object()).value("probes", "") != probes) {
      return false;  // recorded with other probes: a sweep asking for these runs it again
    }
    recorded.erase("trace");
    // every field recorded (a trace of another version may lack one; a test-only field is
    // written only when set), each the same value
    for (const RunConfigField& f : run_config_fields()) {
      if (!f.test_only && !recorded.contains(f.name)) return false;
    }
    if (config_from_json(recorded.dump()) != config) return false;
    if (read_rows) trace::read_whole(r);  // every row read: a damaged trace runs again
    return true;
  } catch (const std::exception&) {
    return false;  // unreadable (e.g. killed mid-write): run it again
  }
}

}  // namespace ds
