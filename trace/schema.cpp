// Tap-site naming of the trace format v1.
#include "trace/schema.h"

#include <fmt/format.h>

namespace ds::trace {

std::string layer_site(int layer, const std::string& kind) {
  return fmt::format("L{}/{}", layer, kind);
}

std::vector<std::string> all_sites(int n_layers) {
  std::vector<std::string> s{"embed"};
  for (int l = 0; l < n_layers; ++l) {
    for (const char* k : kLayerSiteKinds) s.push_back(layer_site(l, k));
  }
  s.push_back("final_norm");
  return s;
}

std::vector<std::string> default_sites(int n_layers) {
  std::vector<std::string> s{"embed"};
  for (int l = 0; l < n_layers; ++l) {
    for (const char* k : {"attn_out", "mlp_out", "out"}) s.push_back(layer_site(l, k));
  }
  s.push_back("final_norm");
  return s;
}

}  // namespace ds::trace
