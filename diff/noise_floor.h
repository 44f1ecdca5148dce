// The noise floor's statistics (docs/metrics.md, "Noise floors"): a floor built from N benign
// replays of a trace A, each measured against A's own reduction order (diff/noise_sums.h), and a
// diff of A and B judged against it: per site an empirical p-value, family-wise p-values from the
// max statistic of the same replays (Westfall–Young), the onset against the floor, and the flips
// expected from the floor's spread of the top-1/top-2 margin's change. The floor file itself is
// trace/floor_file.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "diff/noise_report.h"
#include "diff/noise_sums.h"
#include "diff/report.h"
#include "trace/floor_file.h"
#include "trace/reader.h"

namespace ds::diff {

// The fewest replays a floor may hold: its p-values cannot go below 1 / (N + 1), and below 20
// replays that is above 0.05, where no site can be told from the floor.
inline constexpr int kMinFloorRuns = 20;

// One replay of a calibration measured against its reference: the hidden sites' and the
// margins' sums over the calibrated sequences, and per calibrated sequence (in the floor's order)
// whether it flipped and its choice rows' margins.
struct ReplayMeasure {
  int64_t seed = 0;
  std::vector<SiteSums> sites;      // forward order
  std::vector<MarginSums> margins;  // by position bucket
  struct Sequence {
    bool flipped = false;
    int64_t first_choice = 0;
    std::vector<float> margin_a, margin_change;
  };
  std::vector<Sequence> sequences;
};

// The calibrated sequences' sums of a diff of the reference and a replay (DiffOptions::noise_sums).
// Throws ds::Error naming a sequence the diff did not compare.
ReplayMeasure replay_measure(const Report& r, const std::vector<int32_t>& sequences, int64_t seed);

// What a floor records beside the replays' measures.
struct FloorSource {
  std::string tool_version, source, config_json, model_json, config_digest, model_digest;
  std::string perturbation;
  std::vector<trace::FloorSequence> sequences;
};

// The floor of `replays` (at least one, each with a sums entry per sequence of `src`).
trace::FloorFile build_floor(const FloorSource& src, const std::vector<ReplayMeasure>& replays);

// A's run configuration as a floor records and compares it: config_json less the recording
// options ("trace") and the plan ("plan", test-only keys).
std::string floor_config_json(const std::string& config_json);

// Checks that `floor` (read from `path`) calibrates trace `a`: the same model files, the same run
// configuration, A's tokens in every calibrated sequence, at least kMinFloorRuns replays. Throws
// ds::Error with a hint otherwise.
void check_floor(const trace::FloorFile& floor, const std::string& path,
                 const trace::TraceReader& a);

// Report `r` (A vs B, diffed with DiffOptions::noise_sums) against the floor, at level `alpha`.
NoiseReport evaluate_floor(const Report& r, const trace::FloorFile& floor, const std::string& path,
                           double alpha);

// What `show FLOOR` prints of a floor: per site the replays' median and largest mean relative L2
// and median share of elements that differ; the flips the hazard expects of A's sequences, and
// those the replays made.
struct FloorSiteSummary {
  std::string site, storage;
  double rel_l2_median = 0, rel_l2_max = 0, differ_median = 0;
};
struct FloorSummary {
  std::vector<FloorSiteSummary> sites;
  double expected_flips = 0;  // Σ over the calibrated sequences of P(reordering flips it)
  double replay_mean_flips = 0;
  int replay_max_flips = 0;
  int choice_rows = 0;
};
FloorSummary summarize_floor(const trace::FloorFile& floor);

// P(X >= k) for X a sum of independent Bernoulli(p_i) (the Poisson-binomial tail).
double at_least(const std::vector<double>& p, int k);

// Φ(x), the standard normal distribution function.
double normal_cdf(double x);

}  // namespace ds::diff
