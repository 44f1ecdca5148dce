// DRIFTSCOPE_TEST_PERTURB: parsing of the test-only perturbation.
#include "src/experiment/perturb.h"

#include <fmt/format.h>

#include <cstdlib>

#include "common/error.h"
#include "trace/schema.h"

namespace ds {

Perturbation parse_perturbation(const std::string& spec) {
  auto bad = [&] {
    return Error(fmt::format("invalid {} '{}'", kPerturbEnv, spec),
                 "it takes L<layer>/<site>:<bf16|f16>, e.g. L3/mlp_out:bf16 (test-only)");
  };
  const size_t slash = spec.find('/'), colon = spec.rfind(':');
  if (spec.size() < 2 || spec[0] != 'L' || slash == std::string::npos ||
      colon == std::string::npos || colon < slash) {
    throw bad();
  }
  Perturbation p;
  size_t used = 0;
  try {
    p.layer = std::stoi(spec.substr(1, slash - 1), &used);
  } catch (const std::exception&) {
    throw bad();
  }
  if (used != slash - 1 || p.layer < 0) throw bad();
  const std::string kind = spec.substr(slash + 1, colon - slash - 1), to = spec.substr(colon + 1);
  bool known = false;
  for (int k = 0; k < kLayerSiteCount; ++k) {
    if (kind == trace::kLayerSiteKinds[k]) {
      p.kind = layer_site_kind(k);
      known = true;
    }
  }
  if (!known) throw bad();
  if (to == "bf16") {
    p.to = Storage::bf16;
  } else if (to == "f16") {
    p.to = Storage::f16;
  } else {
    throw bad();
  }
  return p;
}

std::string perturbation_env_text() {
  const char* v = std::getenv(kPerturbEnv);
  return v != nullptr ? std::string(v) : std::string();
}

Perturbation perturbation_from_env() {
  const std::string v = perturbation_env_text();
  return v.empty() ? Perturbation{} : parse_perturbation(v);
}

void apply_perturbation(Runtime& rt, const Perturbation& p) {
  if (!p.active()) return;
  if (p.layer >= rt.config().n_layers) {
    throw Error(fmt::format("{} names layer {} of a model with {} layers", kPerturbEnv, p.layer,
                            rt.config().n_layers),
                fmt::format("unset {}, or name a layer the model has", kPerturbEnv));
  }
  struct RoundOneSite final : SiteEdit {
    Perturbation p;
    Storage round_to(const Site& site) override {
      return site.kind == p.kind && site.layer == p.layer ? p.to : Storage::native;
    }
  } edit;
  edit.p = p;
  try {
    rt.set_site_edit(&edit);
  } catch (const Error&) {
    throw Error(fmt::format("this backend cannot apply the test perturbation ({})", kPerturbEnv),
                fmt::format("unset {}, or use --device cpu", kPerturbEnv));
  }
}

}  // namespace ds
