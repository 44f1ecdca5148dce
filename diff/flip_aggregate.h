// The flips explained in aggregate (docs/metrics.md §12): across the zoomed
// sequences of `driftscope zoom` (each with its diff::Report and diff::AttributionReport), the
// distribution of the first-flip step, the top-1/top-2 margin at the flip against a near-tie
// threshold, where the drift sets in (onset) and where the local error is born (histograms over
// layers and block kinds), and the drift's growth per layer, with a one-line summary.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "diff/attribution.h"
#include "diff/report.h"

namespace ds::diff {

// One zoomed sequence: its diff (B running free, or teacher-forced on A's tokens as zoom runs it)
// and its attribution (not owned; both outlive the call). `seq`
// names the sequence: the diff's SequenceReport with index `seq` (or, when the diff holds one
// sequence only, that one) and the attribution's entry of `seq` in sequence_ids (or its only one).
struct ZoomedPair {
  const Report* diff;
  const AttributionReport* attribution;
  int seq;
};

// Where in the model: a block kind and its layer. kind: "embed", "attention", "mlp", "layer"
// (a whole layer, when the attribution could not split it), "final_norm", "logits"; layer -1
// outside the layers.
struct Place {
  std::string kind;
  int layer = -1;
  bool operator==(const Place&) const = default;
};

// How a flip's margin compares with the near-tie threshold (docs/metrics.md §12).
enum class MarginClass {
  near_tie,     // A's top-1 − top-2 logit margin at the flip < near_tie_logit
  accumulated,  // margin ≥ near_tie_logit: the drift had to grow to turn it
  unknown,      // no margin (fewer than 2 logits stored, or NaN)
};

// "near_tie", "accumulated", "unknown" (the JSON value).
const char* margin_class_name(MarginClass c);

// One zoomed sequence, as its two reports tell it.
struct FlipCase {
  int seq = 0;
  bool flipped = false;  // the diff shows a flip (the rest below is unset otherwise)
  bool forced = false;   // B was teacher-forced: the flip is the first choice row whose top-1
                         // ids differ (PositionRow::top1_differs), not a FirstFlip
  int step = 0;          // first-flip step: row − (prompt_len_a − 1) (= FirstFlip::step)
  int64_t row = 0;       // the logits row that chose (or, forced, would have chosen) otherwise
  double margin_logit_a = 0, margin_logit_b = 0;  // at that row (FirstFlip, or PositionRow)
  double logit_drift = 0;  // PositionRow::logit_drift at the flip row; NaN when not compared
  MarginClass margin = MarginClass::unknown;
  bool has_onset = false;  // the diff's onset (first site above its floor)
  std::string onset_site;
  Place onset;
  int64_t onset_position = 0;
  bool has_birth = false;   // a verdict block with this sequence's local error above the floor
  std::string birth_block;  // the first such block in forward order ("L3 attention")
  Place birth;
  double birth_local = 0;  // its local error on this sequence
  bool has_top = false;    // a verdict block with positive local error on this sequence
  std::string top_block;   // the block with the largest local error on this sequence
  Place top;
  double top_share = 0;  // its local error / Σ local over the verdict blocks of this sequence
  // per layer 0..n_layers-1: the layer view's relative L2 at the flip row, and the diff's noise
  // floor of the layer view's site (§4: its stored values' rounding; NaN when the layer or the row
  // is not in the diff) and that floor's storage ("" when unknown)
  std::vector<double> layer_rel_l2, layer_floor;
  std::vector<std::string> layer_storage;
};

// A count per place, and the same summed per kind and per layer.
struct PlaceCount {
  Place place;
  int count = 0;
};
struct KindCount {
  std::string kind;
  int count = 0;
};
struct PlaceHistogram {
  std::vector<PlaceCount> cells;  // forward order (embed, per layer attention, mlp, layer, ...)
  std::vector<KindCount> kinds;   // forward order of kinds: embed attention mlp layer final_norm
  std::vector<int> by_layer;      // [n_layers]: counts of places inside layer l
  int none = 0;                   // flips with no place (no onset / nothing above the floor)
};

// Five numbers of a distribution (NaN when empty): min, quartiles, max.
struct Spread {
  int n = 0;
  double min = 0, q1 = 0, median = 0, q3 = 0, max = 0;
};

// The spread of the values of `v` that are not NaN; quartiles interpolated linearly between the
// sorted values (q(p) at rank p·(n−1)), so that the median of an even count is the mean of the
// middle two.
Spread spread_of(std::vector<double> v);

struct StepSummary {
  std::vector<int> steps;  // first-flip steps, ascending
  Spread spread;
};

struct MarginSummary {
  int near_tie = 0, accumulated = 0, unknown = 0;  // flips per MarginClass
  Spread margin_logit_a;                           // over the flips with a known margin
  // flips by A's margin in multiples of the threshold t: [0, t), [t, 10t), [10t, 100t), ≥ 100t
  int decades[4] = {0, 0, 0, 0};
  Spread logit_drift;  // at the flip rows where known
};

// The drift per layer across the flips, at each flip row (from FlipCase::layer_rel_l2), and the
// layer's local error (attribution, whole-layer block) across the flips.
struct LayerGrowth {
  int layer = 0;
  Spread rel_l2;             // relative L2 at the flip row, over the flips that have it
  double growth_median = 0;  // median over flips of rel(l) / rel(l−1); NaN when none
  Spread local;              // the layer's local error per sequence
  // flips whose relative L2 at this layer exceeds its site's own noise floor in the diff
  // (FlipCase::layer_floor: the drift's floor, as the diff's onset uses; not the attribution's)
  int above_floor = 0;
  double site_floor = 0;     // that floor, when every flip has the same one; NaN otherwise
  std::string site_storage;  // its storage ("float32"); "" when the flips' differ or unknown
};

struct FlipAggregate {
  double near_tie_logit = 0.05;
  int pairs = 0;  // zoomed pairs given
  int flips = 0;  // of them, with a first flip: the denominator of every percentage
  int n_layers = 0;
  // The attributions' noise floor, of the local error: relative L2 indistinguishable from the
  // rounding of `storage` (the coarser of float32 and B's activations). Births and the summary
  // are against it; the layer drift is against each site's own floor (LayerGrowth::site_floor).
  std::string storage;
  double noise_floor = 0;
  std::vector<FlipCase> cases;  // one per pair, in the order given
  StepSummary steps;
  MarginSummary margins;
  PlaceHistogram onset;  // the diff's onset site
  PlaceHistogram birth;  // the first block whose local error exceeds the floor
  PlaceHistogram top;    // the block with the largest local error
  std::vector<LayerGrowth> layers;
  std::string site_storage;        // the storage of every layer's site floor; "" when they differ
  std::string summary;             // the one line: near ties, where error is born
  std::vector<std::string> notes;  // pairs left out and why, mixed noise floors, ...
};

// The aggregate of the zoomed pairs (definitions: docs/metrics.md §12). A pair without a flip,
// or whose sequence is missing from a report, is kept in `cases` (flipped = false) and noted.
FlipAggregate aggregate_flips(const std::vector<ZoomedPair>& pairs, double near_tie_logit = 0.05);

// The place of a tap site ("L3/attn_out" → attention of layer 3; "L3/out", "L3/mlp_norm" → mlp;
// "embed", "final_norm", "logits" → those kinds) and of an attribution block (its kind and
// layer).
Place site_place(const std::string& site);

// "attention of layers 0–4", "mlp of layer 3", "final_norm", "embed".
std::string place_text(const std::string& kind, const std::vector<int>& layers);

}  // namespace ds::diff
