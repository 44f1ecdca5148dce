// Tap site names, shared with the trace format's schema.
#include "src/runtime/taps.h"

#include "trace/schema.h"

namespace ds {

std::string site_name(const Site& s) {
  switch (s.kind) {
    case SiteKind::embed: return "embed";
    case SiteKind::attn_norm: return trace::layer_site(s.layer, "attn_norm");
    case SiteKind::attn_out: return trace::layer_site(s.layer, "attn_out");
    case SiteKind::resid_mid: return trace::layer_site(s.layer, "resid_mid");
    case SiteKind::mlp_norm: return trace::layer_site(s.layer, "mlp_norm");
    case SiteKind::mlp_out: return trace::layer_site(s.layer, "mlp_out");
    case SiteKind::out: return trace::layer_site(s.layer, "out");
    case SiteKind::final_norm: return "final_norm";
    case SiteKind::logits: return "logits";
  }
  return "?";
}

void WantedSites::ask(TapHook* hook, int n_layers) {
  auto wants = [&](SiteKind k, int l) { return hook != nullptr && hook->wants({k, l}); };
  embed = wants(SiteKind::embed, -1);
  final_norm = wants(SiteKind::final_norm, -1);
  logits = wants(SiteKind::logits, -1);
  layer.assign(n_layers, {});
  for (int l = 0; l < n_layers; ++l) {
    for (int k = 0; k < kLayerSiteCount; ++k) layer[l][k] = wants(layer_site_kind(k), l);
  }
}

int WantedSites::hidden_sites() const {
  int n = embed + final_norm;
  for (const auto& kinds : layer) {
    for (bool w : kinds) n += w;
  }
  return n;
}

}  // namespace ds
