// Names and version of the trace format v1 (docs/trace-format.md): the contract between the
// runtime that writes traces and every tool that reads them.
#pragma once

#include <string>
#include <vector>

namespace ds::trace {

inline constexpr const char* kFormatName = "driftscope-trace";
inline constexpr int kFormatVersion = 1;

// Tap sites of one layer, in forward order.
inline constexpr const char* kLayerSiteKinds[] = {"attn_norm", "attn_out", "resid_mid",
                                                  "mlp_norm",  "mlp_out",  "out"};

// "L3/attn_out" for layer 3, kind "attn_out".
std::string layer_site(int layer, const std::string& kind);

// Every hidden-state tap site of a model with n_layers layers, in forward order:
// embed, L0/attn_norm ... L<n-1>/out, final_norm.
std::vector<std::string> all_sites(int n_layers);

// The default probe set: embed, every L<l>/attn_out, L<l>/mlp_out, L<l>/out, and final_norm.
std::vector<std::string> default_sites(int n_layers);

}  // namespace ds::trace
