// Tap-site naming of the trace format v1.
#include "trace/schema.h"

#include <fmt/format.h>

#include <cctype>
#include <climits>
#include <iterator>

namespace ds::trace {

std::string layer_site(int layer, const std::string& kind) {
  return fmt::format("L{}/{}", layer, kind);
}

std::string layer_site(int layer, SiteKind kind) {
  return layer_site(layer, site_kind_name(kind));
}

std::string site_name(const Site& s) {
  const int k = layer_site_index(s.kind);
  return k >= 0 && k < kLayerSiteCount ? layer_site(s.layer, s.kind) : site_kind_name(s.kind);
}

std::string sequence_path(int64_t index) {
  return fmt::format("{}/{}", kSeqGroup, index);
}

std::string hidden_path(const std::string& site) {
  return fmt::format("{}/{}", kHiddenGroup, site);
}

std::string logits_path(const char* dataset) {
  return fmt::format("{}/{}", kLogitsGroup, dataset);
}

SiteOrder site_order(const std::string& site) {
  constexpr int kKinds = static_cast<int>(std::size(kLayerSiteKinds));
  if (site == kEmbedSite) return {-1, 0, {}};
  if (site == kFinalNormSite) return {INT_MAX / 2, 0, {}};
  const size_t slash = site.find('/');
  if (site.size() > 1 && site[0] == 'L' && slash != std::string::npos && slash > 1 && slash < 10) {
    bool digits = true;
    for (size_t i = 1; i < slash; ++i)
      digits &= std::isdigit(static_cast<unsigned char>(site[i])) != 0;
    if (digits) {
      const int layer = std::stoi(site.substr(1, slash - 1));
      const std::string kind = site.substr(slash + 1);
      for (int k = 0; k < kKinds; ++k) {
        if (kind == kLayerSiteKinds[k]) return {layer, k, {}};
      }
      return {layer, kKinds, kind};
    }
  }
  return {INT_MAX, 0, site};
}

std::vector<std::string> all_sites(int n_layers) {
  std::vector<std::string> s{kEmbedSite};
  for (int l = 0; l < n_layers; ++l) {
    for (const char* k : kLayerSiteKinds) s.push_back(layer_site(l, k));
  }
  s.push_back(kFinalNormSite);
  return s;
}

std::vector<std::string> default_sites(int n_layers) {
  std::vector<std::string> s{kEmbedSite};
  for (int l = 0; l < n_layers; ++l) {
    for (SiteKind k : {SiteKind::attn_out, SiteKind::mlp_out, SiteKind::out}) {
      s.push_back(layer_site(l, k));
    }
  }
  s.push_back(kFinalNormSite);
  return s;
}

}  // namespace ds::trace
