// B's shadowed run on A's tokens into attribution reports (src/workflow/attribution_report.h).
#include "src/workflow/attribution_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "common/error.h"
#include "src/experiment/attribution_run.h"
#include "src/experiment/run_metadata.h"
#include "src/workflow/recorded_model.h"
#include "trace/schema.h"

namespace ds {
namespace {

// "dtype=bf16 split_k=2": B's fields that differ from A's recorded configuration (sampling and
// generation length aside: B is teacher-forced on A's tokens).
std::string config_difference(const std::string& a_json, const RunConfig& b) {
  const auto a = nlohmann::json::parse(a_json, nullptr, false);
  const auto bj = nlohmann::json::parse(to_json(b));
  std::string out;
  for (const auto& [key, value] : bj.items()) {
    if (key == "max_new" || key == "temperature" || key == "top_p" || key == "top_k" ||
        key == "seed" || key == "tie_break" || key == "repetition_penalty") {
      continue;
    }
    if (a.is_object() && a.contains(key) && a[key] == value) continue;
    out += (out.empty() ? "" : " ") + key + "=" +
           (value.is_string() ? value.get<std::string>() : value.dump());
  }
  return out.empty() ? "the same configuration as A" : out;
}

// Whether A holds every L<l>/resid_mid (then attention and MLP are separated).
bool holds_resid_mid(const trace::TraceReader& a, int n_layers) {
  if (a.sequence_indices().empty()) return false;
  const trace::SequenceInfo s0 = a.sequence(a.sequence_indices().front());
  for (int l = 0; l < n_layers; ++l) {
    const std::string want = trace::layer_site(l, trace::SiteKind::resid_mid);
    bool found = false;
    for (const auto& site : s0.sites) found |= site.name == want;
    if (!found) return false;
  }
  return true;
}

diff::TapOrigin origin_of(const PairedRows& p) {
  if (!p.shadow) return diff::TapOrigin::run;
  switch (*p.shadow) {
    case ShadowKind::layer:
      return diff::TapOrigin::layer_shadow;
    case ShadowKind::mlp:
      return diff::TapOrigin::mlp_shadow;
    case ShadowKind::head:
      return diff::TapOrigin::head_shadow;
  }
  return diff::TapOrigin::run;
}

}  // namespace

void check_attribution_model(const trace::TraceReader& a, const LoadedModel& lm) {
  check_loaded_is_recorded(recorded_model(a), lm.model,
                           "pass the model of A with --model, or leave --model out for the model "
                           "A records");
}

std::vector<diff::AttributionReport> attribute_groups(
    const LoadedModel& lm, const trace::TraceReader& a, const RunConfig& rc,
    const std::vector<std::vector<int>>& groups,
    const std::function<void(int seq, int n_seqs)>& progress) {
  const int n_layers = lm.model.config.n_layers;
  const bool split = holds_resid_mid(a, n_layers);
  std::vector<std::unique_ptr<diff::AttributionBuilder>> builders;
  for (size_t g = 0; g < groups.size(); ++g) {
    builders.push_back(std::make_unique<diff::AttributionBuilder>(
        a, n_layers, split, number_format(activation_storage(rc.dtype))));
  }
  AttributionRunOptions opt;
  opt.config = rc;
  opt.split_mlp = split;
  opt.progress = progress;
  run_attribution(lm.model, a, opt, [&](const PairedRows& p) {
    for (size_t g = 0; g < groups.size(); ++g) {
      const auto& want = groups[g];
      if (want.empty() || std::find(want.begin(), want.end(), p.seq) != want.end()) {
        builders[g]->add(origin_of(p), p.seq, p.site, p.first_pos, p.rows, p.width, p.b, p.a);
      }
    }
  });
  const auto a_config = nlohmann::json::parse(a.config_json(), nullptr, false);
  const std::string a_dtype =
      a_config.is_object() && a_config.contains("dtype") && a_config["dtype"].is_string()
          ? a_config["dtype"].get<std::string>()
          : std::string("?");
  std::vector<diff::AttributionReport> out;
  for (const auto& b : builders) {
    out.push_back(b->finish(a_dtype, config_difference(a.config_json(), rc), to_json(rc)));
  }
  return out;
}

}  // namespace ds
