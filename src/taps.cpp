// Tap site names, shared with the trace format's schema.
#include "src/taps.h"

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

}  // namespace ds
