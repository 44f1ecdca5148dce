// The sites a tap hook wants.
#include "src/runtime/taps.h"

#include "trace/schema.h"

namespace ds {

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
