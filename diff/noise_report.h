// A diff against a noise floor (`diff A.h5 B.h5 --floor floor.h5`; docs/metrics.md "Noise floors"):
// each site's drift in floor units with its empirical and family-wise p-values, the onset against
// the floor, and the flips expected from the floor's margin spread against those observed. Plain
// data: diff/noise_floor.h computes it, viewer/ renders it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ds::diff {

// One site (a hidden site, or "logits": the top-1/top-2 margins) against the floor.
struct NoiseSite {
  std::string site;
  int layer = -1;       // -1 embed, l, n_layers for final_norm and logits
  std::string storage;  // float32, float16, bf16; "logits" for the margins
  // B's mean relative L2 over the floor's rows (logits: mean |margin change|, in logits), the
  // replays' median of the same, and their ratio: the drift in floor units (NaN when the
  // replays' median is 0: every replay, or most, left the site bit-identical).
  double drift = 0, floor = 0, floor_units = 0;
  // The site's statistic (the largest robust z over its position buckets and measures) and
  // what gave it ("relative L2, rows 8-15").
  double stat = 0;
  std::string driver;
  double p = 1;              // empirical: (1 + #{replays >= B}) / (N + 1)
  double p_family = 1;       // family-wise over every site: the max statistic of the same replays
  bool significant = false;  // p_family <= alpha
  std::vector<double> floor_by_bucket;  // the replays' median mean relative L2 per bucket
};

// One calibrated sequence's flip: the probability that reordering alone flips it (the hazard
// over its choice rows) and whether B did.
struct NoiseSequence {
  int seq = 0;
  int rows = 0;          // choice rows of the hazard
  double p_flip = 0;     // 1 − Π (1 − Φ(−(m_t + μ_t) / σ_t))
  bool flipped = false;  // B flipped it (teacher-forced: a choice row's top-1 differs)
  bool compared = true;  // the diff compared it (else left out of the counts)
};

struct NoiseReport {
  std::string floor;         // the floor file's path
  std::string perturbation;  // reorder, sr, reorder+sr
  int runs = 0;              // N
  double alpha = 0.01;
  std::vector<int64_t> bucket_starts;  // first row of each position bucket
  std::vector<NoiseSite> sites;        // forward order, "logits" last
  std::optional<std::string> onset;    // the first site with p_family <= alpha
  // Flipped sequences: expected from the floor (Σ p_flip), observed, and P(X >= observed) with X
  // the sum of independent Bernoulli(p_flip) (Poisson-binomial). Beside them, what the replays
  // themselves flipped: their mean and largest count and B's empirical p-value among them.
  int sequences = 0;
  double expected_flips = 0;
  int observed_flips = 0;
  double p_flips = 1;
  double replay_mean_flips = 0;
  int replay_max_flips = 0;
  double p_flips_empirical = 1;
  std::vector<NoiseSequence> per_sequence;
  double p_family_min = 1;  // the smallest family-wise p of any site
  bool drift_beyond = false, flips_beyond = false, beyond = false;
  // "3 flips observed, 2.6 expected from reordering alone (p = 0.48); drift within the floor at
  // every site: within noise"
  std::string headline;
  std::vector<std::string> notes;
};

}  // namespace ds::diff
