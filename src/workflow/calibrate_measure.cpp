// The calibration's measures and the floor (calibrate_measure.h).
#include "src/workflow/calibrate_measure.h"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/error.h"
#include "common/output_file.h"
#include "diff/diff.h"
#include "diff/identity.h"
#include "src/model/sha256.h"
#include "src/workflow/sweep_plan.h"

namespace ds {
namespace {

using nlohmann::json;

json number(double x) {
  return std::isfinite(x) ? json(x) : json();  // NaN (an unknown margin) as null
}

double read_number(const json& j) {
  return j.is_null() ? std::numeric_limits<double>::quiet_NaN() : j.get<double>();
}

}  // namespace

std::string measure_json(const diff::ReplayMeasure& m) {
  json j;
  j["format"] = "driftscope-measure";
  j["version"] = 1;
  j["seed"] = m.seed;
  json sites = json::array();
  for (const auto& s : m.sites) {
    json b = json::array();
    for (const auto& k : s.buckets) {
      b.push_back({k.rows, k.rel_l2, k.elements, k.differ, k.up, k.max_ulps, k.nan});
    }
    sites.push_back({{"site", s.site}, {"storage", s.storage}, {"buckets", b}});
  }
  j["sites"] = sites;
  json margins = json::array();
  for (const auto& k : m.margins) margins.push_back({k.rows, k.abs_change, k.changed, k.top1});
  j["margins"] = margins;
  json seqs = json::array();
  for (const auto& q : m.sequences) {
    json a = json::array(), c = json::array();
    for (float x : q.margin_a) a.push_back(number(x));
    for (float x : q.margin_change) c.push_back(number(x));
    seqs.push_back({{"flipped", q.flipped},
                    {"first_choice", q.first_choice},
                    {"margin_a", a},
                    {"margin_change", c}});
  }
  j["sequences"] = seqs;
  return j.dump() + "\n";
}

diff::ReplayMeasure parse_measure(const std::string& text, const std::string& where) {
  diff::ReplayMeasure m;
  try {
    const json j = json::parse(text);
    if (j.value("format", "") != "driftscope-measure" || j.value("version", 0) != 1) {
      throw Error("not a measure of this version");
    }
    m.seed = j.at("seed").get<int64_t>();
    for (const auto& s : j.at("sites")) {
      diff::SiteSums x;
      x.site = s.at("site").get<std::string>();
      x.storage = s.at("storage").get<std::string>();
      for (const auto& b : s.at("buckets")) {
        x.buckets.push_back({b.at(0).get<int64_t>(), b.at(1).get<double>(), b.at(2).get<int64_t>(),
                             b.at(3).get<int64_t>(), b.at(4).get<int64_t>(), b.at(5).get<double>(),
                             b.at(6).get<int64_t>()});
      }
      m.sites.push_back(std::move(x));
    }
    for (const auto& b : j.at("margins")) {
      m.margins.push_back({b.at(0).get<int64_t>(), b.at(1).get<double>(), b.at(2).get<int64_t>(),
                           b.at(3).get<int64_t>()});
    }
    for (const auto& q : j.at("sequences")) {
      diff::ReplayMeasure::Sequence s;
      s.flipped = q.at("flipped").get<bool>();
      s.first_choice = q.at("first_choice").get<int64_t>();
      for (const auto& x : q.at("margin_a"))
        s.margin_a.push_back(static_cast<float>(read_number(x)));
      for (const auto& x : q.at("margin_change")) {
        s.margin_change.push_back(static_cast<float>(read_number(x)));
      }
      m.sequences.push_back(std::move(s));
    }
  } catch (const std::exception& e) {
    throw Error(fmt::format("'{}' is not a calibration measure: {}", where, e.what()),
                "remove it: calibrate runs its replay again");
  }
  return m;
}

bool replay_measured(const std::filesystem::path& dir, int k) {
  const auto path = run_measure(dir, k);
  if (!std::filesystem::exists(path)) return false;
  try {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return parse_measure(ss.str(), path.string()).seed == k;
  } catch (const Error&) {
    return false;
  }
}

bool reference_done(const std::filesystem::path& dir, const CalibratePlan& p) {
  return trace_done(run_trace(dir, 0), p.config, "all");
}

std::string reference_mismatch(const std::filesystem::path& dir, const CalibratePlan& p,
                               const trace::TraceReader& a) {
  diff::DiffOptions opt;
  opt.sequences = p.sequences;
  const diff::Report r = diff::diff_traces(a, trace::TraceReader::open(run_trace(dir, 0)), opt);
  for (const auto& s : r.sequences) {
    if (s.has_logits && !s.logits.identical) {
      return fmt::format("sequence {}: logits differ (KL max {:.3g})", s.index, s.logits.kl_max);
    }
    if (!s.hidden_identical) {
      return fmt::format("sequence {}: hidden states differ{}", s.index,
                         s.onset ? " from " + s.onset->site : std::string());
    }
  }
  return {};
}

void measure_replay(const std::filesystem::path& dir, const CalibratePlan& p, int k) {
  const auto ref = trace::TraceReader::open(run_trace(dir, 0));
  const auto rep = trace::TraceReader::open(run_trace(dir, k));
  if (!rep.complete()) {
    throw Error(fmt::format("replay '{}' is incomplete", rep.path().string()),
                "run calibrate again: it runs the replay again");
  }
  diff::DiffOptions opt;
  opt.noise_sums = true;
  opt.sequences = p.sequences;
  const diff::Report r = diff::diff_traces(ref, rep, opt);
  const std::vector<int32_t> seqs(p.sequences.begin(), p.sequences.end());
  const diff::ReplayMeasure m = diff::replay_measure(r, seqs, k);
  std::filesystem::create_directories(run_measure(dir, k).parent_path());
  write_file_or_fail(run_measure(dir, k), measure_json(m));
  std::filesystem::remove(run_trace(dir, k));
}

diff::FloorSource floor_source(const trace::TraceReader& a, const std::vector<int>& sequences,
                               const std::string& perturbation) {
  diff::FloorSource src;
  src.tool_version = DRIFTSCOPE_VERSION;
  src.source = std::filesystem::absolute(a.path()).lexically_normal().string();
  src.config_json = diff::floor_config_json(a.config_json());
  src.model_json = a.model_json();
  src.config_digest = sha256_hex(src.config_json);
  src.model_digest = sha256_hex(diff::model_key(diff::model_identity(a.model_json())));
  src.perturbation = perturbation;
  for (int i : sequences) {
    const trace::SequenceInfo s = a.sequence(i);
    src.sequences.push_back({s.index, s.prompt_len, s.tokens});
  }
  return src;
}

trace::FloorFile write_calibrated_floor(const std::filesystem::path& dir, const CalibratePlan& p,
                                        const trace::TraceReader& a, bool replace) {
  std::vector<diff::ReplayMeasure> measures;
  for (int k = 1; k <= p.runs; ++k) {
    const auto path = run_measure(dir, k);
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    measures.push_back(parse_measure(ss.str(), path.string()));
  }
  const trace::FloorFile f =
      diff::build_floor(floor_source(a, p.sequences, p.perturbation), measures);
  trace::write_floor(p.floor, f, replace);
  return f;
}

}  // namespace ds
