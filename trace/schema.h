// Names and version of the trace format v1 (docs/trace-format.md): the contract between the
// runtime that writes traces and every tool that reads them.
#pragma once

#include <cstdint>
#include <iterator>
#include <span>
#include <string>
#include <vector>

namespace ds::trace {

inline constexpr const char* kFormatName = "driftscope-trace";
inline constexpr int kFormatVersion = 1;

// Every kind of tap site, in forward order, and its name in a trace. The per-layer kinds
// (attn_norm ... out) are named "L<layer>/<kind>" (layer_site), the others by the kind alone.
enum class SiteKind {
  embed,
  attn_norm,
  attn_out,
  resid_mid,
  mlp_norm,
  mlp_out,
  out,
  final_norm,
  logits
};
inline constexpr const char* kSiteKindNames[] = {"embed",     "attn_norm",  "attn_out",
                                                 "resid_mid", "mlp_norm",   "mlp_out",
                                                 "out",       "final_norm", "logits"};
static_assert(std::size(kSiteKindNames) == static_cast<size_t>(SiteKind::logits) + 1,
              "one name per SiteKind");

constexpr const char* site_kind_name(SiteKind kind) {
  return kSiteKindNames[static_cast<int>(kind)];
}
// The sites that belong to no layer, named by their kind alone.
inline constexpr const char* kEmbedSite = site_kind_name(SiteKind::embed);
inline constexpr const char* kFinalNormSite = site_kind_name(SiteKind::final_norm);
inline constexpr const char* kLogitsSite = site_kind_name(SiteKind::logits);

// The per-layer kinds: their number, names in forward order, and the k-th kind and back.
inline constexpr int kLayerSiteCount = 6;
inline constexpr std::span<const char* const, kLayerSiteCount> kLayerSiteKinds{kSiteKindNames + 1,
                                                                               kLayerSiteCount};
constexpr SiteKind layer_site_kind(int k) {
  return static_cast<SiteKind>(static_cast<int>(SiteKind::attn_norm) + k);
}
constexpr int layer_site_index(SiteKind kind) {
  return static_cast<int>(kind) - static_cast<int>(SiteKind::attn_norm);
}
static_assert(layer_site_kind(kLayerSiteCount - 1) == SiteKind::out, "attn_norm ... out");

// A tap site: its kind, and its layer for the per-layer kinds.
struct Site {
  SiteKind kind;
  int layer = -1;
};

// "embed", "L3/attn_out", "final_norm", "logits".
std::string site_name(const Site& s);

// Upper bounds on the sizes a trace declares, checked before anything is allocated from them:
// those of the models driftscope runs (src/model/config.h, ConfigLimits; docs/cli.md "Input
// limits"). A damaged or foreign file may declare a dataset of 2^60 fill values in a few bytes.
inline constexpr int64_t kMaxSequenceTokens = int64_t{1} << 24;  // a context: max_seq_len
inline constexpr int64_t kMaxHiddenWidth = int64_t{1} << 16;     // a hidden state: dim
inline constexpr int64_t kMaxLogitsWidth = int64_t{1} << 22;     // logits/full, top-k K: vocab_size

// The groups and datasets of a trace (docs/trace-format.md, "Layout"): every path the writer
// creates and the reader and the conformance check open is named here.
inline constexpr const char* kMetaGroup = "meta";  // /meta: the run's attributes
inline constexpr const char* kSeqGroup = "seq";    // /seq/<i>: one group per sequence
// In a sequence's group:
inline constexpr const char* kTokensDataset = "tokens";  // int32 [prompt_len + gen_len]
inline constexpr const char* kHiddenGroup = "hidden";    // hidden/<site>: [rows, dim]
inline constexpr const char* kLogitsGroup = "logits";    // the datasets below
// In a sequence's logits group, in this order:
inline constexpr const char* kTopkIds = "topk_ids";        // int32 [rows, K]
inline constexpr const char* kTopkLogits = "topk_logits";  // float32 [rows, K]
inline constexpr const char* kLse = "lse";                 // float32 [rows]
inline constexpr const char* kFullLogits = "full";         // float32 [rows, vocab], optional
inline constexpr const char* kLogitsDatasets[] = {kTopkIds, kTopkLogits, kLse, kFullLogits};

// "seq/3"; "hidden/L0/out" for site "L0/out"; "logits/lse" for kLse: paths relative to the file
// and to a sequence's group.
std::string sequence_path(int64_t index);
std::string hidden_path(const std::string& site);
std::string logits_path(const char* dataset);

// The optional /kernels table (CUDA traces recorded with CUPTI): one row per kernel launch, one
// dataset per column, all of the same length (docs/trace-format.md "/kernels").
inline constexpr const char* kKernelsGroup = "kernels";

// "L3/attn_out" for layer 3, kind "attn_out" (SiteKind::attn_out).
std::string layer_site(int layer, const std::string& kind);
std::string layer_site(int layer, SiteKind kind);

// Every hidden-state tap site of a model with n_layers layers, in forward order:
// embed, L0/attn_norm ... L<n-1>/out, final_norm.
std::vector<std::string> all_sites(int n_layers);

// Sort key of a site name in forward order: embed, L0/attn_norm ... L<n-1>/out, final_norm, then
// any other name ("logits", an unknown kind) after those of its layer or at the end, by name.
struct SiteOrder {
  int layer = 0;  // -1 embed, 0.. layers, INT_MAX/2 final_norm, INT_MAX anything else
  int kind = 0;   // index in kLayerSiteKinds; unknown kinds after the known ones
  std::string rest;
  auto operator<=>(const SiteOrder&) const = default;
};
SiteOrder site_order(const std::string& site);

// The default probe set: embed, every L<l>/attn_out, L<l>/mlp_out, L<l>/out, and final_norm.
std::vector<std::string> default_sites(int n_layers);

}  // namespace ds::trace
