// DRIFTSCOPE_TEST_PERTURB: parsing of the test-only perturbation.
#include "src/experiment/perturb.h"

#include <fmt/format.h>

#include <cstdlib>
#include <set>

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

std::string intrusive_tap_env_text() {
  const char* v = std::getenv(kIntrusiveTapEnv);
  return v != nullptr ? std::string(v) : std::string();
}

namespace {

Perturbation intrusive_site(const std::string& spec, int n_layers) {
  Perturbation at;
  try {
    at = parse_perturbation(spec + ":bf16");
  } catch (const Error&) {
    throw Error(fmt::format("invalid {} '{}'", kIntrusiveTapEnv, spec),
                "it takes L<layer>/<site>, e.g. L1/mlp_out (test-only)");
  }
  if (at.layer >= n_layers) {
    throw Error(fmt::format("{} names layer {} of a model with {} layers", kIntrusiveTapEnv,
                            at.layer, n_layers));
  }
  return at;
}

}  // namespace

void check_intrusive_tap(int n_layers) {
  const std::string spec = intrusive_tap_env_text();
  if (!spec.empty()) intrusive_site(spec, n_layers);
}

std::unique_ptr<TapHook> intrusive_tap(TapHook& inner, int n_layers) {
  const std::string spec = intrusive_tap_env_text();
  if (spec.empty()) return nullptr;
  const Perturbation at = intrusive_site(spec, n_layers);
  struct Intrusive final : TapHook {
    TapHook* inner;
    Perturbation at;
    std::set<std::string> inner_wants;
    bool target(const Site& s) const { return s.kind == at.kind && s.layer == at.layer; }
    bool wants(const Site& s) override {
      const bool w = inner->wants(s);
      if (w) inner_wants.insert(site_name(s));
      return w || target(s);
    }
    void on_tap(const Site& s, const TapTensor& t) override {
      if (target(s) && t.f32 != nullptr) {  // the bug: writing into what it was handed
        float* x = const_cast<float*>(t.f32);
        for (size_t i = 0; i < static_cast<size_t>(t.rows) * t.width; ++i) {
          x[i] = round_to_bf16(x[i]);
        }
      }
      if (inner_wants.count(site_name(s))) inner->on_tap(s, t);
    }
    int logits_summary_k() const override { return inner->logits_summary_k(); }
    void on_logits(const LogitsSummary& summary) override { inner->on_logits(summary); }
  };
  auto h = std::make_unique<Intrusive>();
  h->inner = &inner;
  h->at = at;
  return h;
}

void apply_perturbation(Runtime& rt, const Perturbation& p) {
  if (!p.active()) return;
  if (p.layer >= rt.config().n_layers) {
    throw Error(fmt::format("{} names layer {} of a model with {} layers", kPerturbEnv, p.layer,
                            rt.config().n_layers));
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
