// The test-only intrusive tap (intrusive_tap.h): what run --certify must catch.
#include "src/experiment/intrusive_tap.h"

#include <fmt/format.h>

#include <cstdlib>
#include <optional>
#include <set>

#include "common/error.h"
#include "common/float_formats.h"
#include "trace/schema.h"

namespace ds {
namespace {

// The per-layer site `spec` names ("L1/mlp_out"), or a ds::Error.
Site intrusive_site(const std::string& spec, int n_layers) {
  for (int l = 0; l < n_layers; ++l) {
    for (int k = 0; k < trace::kLayerSiteCount; ++k) {
      if (spec == trace::layer_site(l, trace::layer_site_kind(k))) {
        return Site{trace::layer_site_kind(k), l};
      }
    }
  }
  throw Error(fmt::format("invalid {} '{}': no per-layer site of a {}-layer model",
                          kIntrusiveTapEnv, spec, n_layers),
              "it takes L<layer>/<site>, e.g. L1/mlp_out (test-only)");
}

}  // namespace

std::string intrusive_tap_env_text() {
  const char* v = std::getenv(kIntrusiveTapEnv);
  return v != nullptr ? std::string(v) : std::string();
}

void check_intrusive_tap(int n_layers) {
  const std::string spec = intrusive_tap_env_text();
  if (!spec.empty()) intrusive_site(spec, n_layers);
}

std::unique_ptr<TapHook> intrusive_tap(TapHook& inner, int n_layers) {
  const std::string spec = intrusive_tap_env_text();
  if (spec.empty()) return nullptr;
  struct Intrusive final : TapHook {
    TapHook* inner = nullptr;
    Site at{};
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
  h->at = intrusive_site(spec, n_layers);
  return h;
}

}  // namespace ds
