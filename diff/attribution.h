// Local versus inherited drift per layer (driftscope attribute; docs/metrics.md §10): B's own
// taps and those of B's shadow layers (each layer replayed on A's recorded inputs) are compared
// with A's rows; the report says which layer introduces error and which only carries it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "common/number_format.h"
#include "trace/reader.h"
#include "trace/schema.h"

namespace ds::diff {

// The kinds of block an attribution reports (BlockError::kind) and a flip is placed in
// (Place::kind), as reports name them, in forward order: the blocks outside the layers are
// named as their tap sites (trace/schema.h).
inline constexpr const char* kEmbedBlock = trace::kEmbedSite;
inline constexpr const char* kAttentionBlock = "attention";  // to L<l>/resid_mid
inline constexpr const char* kMlpBlock = "mlp";              // L<l>/resid_mid to L<l>/out
inline constexpr const char* kLayerBlock = "layer";          // a whole layer, to L<l>/out
inline constexpr const char* kFinalNormBlock = trace::kFinalNormSite;
inline constexpr const char* kLogitsBlock = trace::kLogitsSite;

// Where a tapped tensor of B comes from.
enum class TapOrigin {
  run,           // B's own run (teacher-forced on A's tokens): total drift
  layer_shadow,  // layer l on A's input of layer l
  mlp_shadow,    // the MLP of layer l on A's L<l>/resid_mid
  head_shadow,   // final norm and LM head on A's last L<n-1>/out
};

// One block's errors. Hidden sites: relative L2 over every compared position of every sequence,
// sqrt(Σ‖b−a‖²) / sqrt(Σ‖a‖²); logits: mean KL(A‖B) over A's recorded top-K (nats).
struct BlockError {
  std::string name;      // "L3 attention", "L3 mlp", "L3", "final_norm", "logits"
  std::string kind;      // attention | mlp | layer | final_norm | logits
  int layer = -1;        // the layer; -1 for final_norm and logits
  std::string site;      // where it is measured: L3/resid_mid, L3/out, final_norm, logits
  double local = 0;      // B's block on A's input vs A
  double total = 0;      // B's own run vs A
  double inherited = 0;  // total − local (negative when local and carried error cancel)
  double local_max = 0;  // the largest per-position value of the local error
  int64_t positions = 0;
  bool nan = false;     // a NaN/Inf in B's or A's values: local and total are NaN
  bool origin = false;  // local above the noise floor (hidden sites only)
  double share = 0;     // local / Σ local over the verdict's blocks (0 outside them)
  // the same per sequence, in the order of AttributionReport::sequence_ids
  std::vector<double> local_by_seq, total_by_seq;
};

struct AttributionReport {
  std::string a_path;
  std::string a_dtype, b_dtype;
  std::string b_config_json;
  std::string storage;     // the coarser of A's hidden storage and B's activation storage
  double noise_floor = 0;  // relative L2 (docs/metrics.md §4)
  bool split = false;      // attention and MLP separated (A holds L*/resid_mid)
  int n_layers = 0;
  int sequences = 0;
  std::vector<int> sequence_ids;  // the compared sequences, in order
  int64_t positions = 0;          // compared positions (rows of every sequence)
  std::vector<BlockError>
      blocks;                // forward order: per layer [attention, mlp,] layer; final_norm, logits
  std::vector<int> ranking;  // indices of the verdict's blocks, by local error, largest first
  std::string verdict;       // one line: where error is born
};

// Accumulates the paired rows of one attribution run into the report.
class AttributionBuilder {
 public:
  // `b_storage`: how B stores activations (F32 for fp32/fp64, BF16, F16).
  AttributionBuilder(const trace::TraceReader& a, int n_layers, bool split, NumberFormat b_storage);

  // B's rows at `site` of sequence `seq`, positions first_pos.., beside A's rows (`a`, null
  // for logits: A's top-K and lse are read from the trace).
  void add(TapOrigin origin, int seq, const std::string& site, int first_pos, int rows, int width,
           const float* b, const float* a);

  AttributionReport finish(const std::string& a_dtype, const std::string& b_dtype,
                           const std::string& b_config_json) const;

 private:
  struct Acc {
    double dd = 0, aa = 0, max_rel = 0, kl = 0;
    int64_t rows = 0;
    bool nan = false;
  };
  const trace::TraceReader& a_;
  int n_layers_;
  bool split_;
  NumberFormat b_storage_;
  void merge(Acc& into, const Acc& part) const;
  static double value(const Acc& a, bool kl);
  // Pooled value of the rows of `site` from origin o (max: their largest row value).
  double pooled(const std::string& site, TapOrigin o, bool kl, double& max) const;
  double of_seq(const std::string& site, TapOrigin o, bool kl, int seq) const;  // one sequence's
  // One block of the report: its local error (from local_from) beside the total (B's own run).
  void add_block(AttributionReport& r, std::string name, std::string kind, int layer,
                 const std::string& site, TapOrigin local_from, bool kl = false) const;
  std::map<std::pair<std::string, TapOrigin>, Acc> acc_;
  std::map<std::tuple<std::string, TapOrigin, int>, Acc> seq_acc_;  // the same per sequence
  std::map<int, int64_t> rows_;  // compared positions per sequence (B's own final_norm rows)
};

// Layer numbers (ascending) as ranges: "0–4", "3", "0–2, 4".
std::string layer_ranges(const std::vector<int>& layers);

// A share in [0, 1] as a whole percentage: "53%"; "<1%" for a positive share under 0.5%.
std::string percent(double share);

// The one-line verdict of a report's blocks (report.blocks with share and origin set).
std::string attribution_verdict(const AttributionReport& r);

}  // namespace ds::diff
