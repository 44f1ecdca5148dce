// What a noise floor measures of one pair of traces (docs/metrics.md, "Noise floors"): per hidden
// site and position bucket, sums over the compared rows of the relative L2, the elements that
// differ (and in which direction), the largest difference in ulps; per position bucket, how B
// moves A's top-1/top-2 logit margin; per choice row, A's margin and its change. The diff fills
// them when asked (DiffOptions::noise_sums); calibrate keeps them for each replay against its
// reference, and diff --floor compares B's with the replays' (diff/noise_floor.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ds::diff {

// The position buckets: row 0, row 1, rows 2-3, 4-7, ..., bucket b >= 1 holding rows
// [2^(b-1), 2^b). Drift grows along a sequence (each row attends to more keys), so a floor
// compares rows with rows of like positions.
int position_bucket(int64_t row);
int64_t bucket_first_row(int bucket);  // 0, 1, 2, 4, 8, ...

// One hidden site and position bucket, summed over the compared rows in it.
struct BucketSums {
  int64_t rows = 0;  // rows with finite values on both sides
  double rel_l2 = 0;  // Σ of the rows' relative L2 ‖a − b‖/‖a‖ (an all-zero a counts 0 or 1)
  int64_t elements = 0;
  int64_t differ = 0;   // elements whose stored values differ
  int64_t up = 0;       // of those, elements where B's value is larger
  double max_ulps = 0;  // largest |b − a| in ulps of the site's storage
  int64_t nan = 0;      // rows with a NaN or Inf on either side
};

// One hidden site: its storage (the coarser side's: float32, float16, bf16) and its buckets.
struct SiteSums {
  std::string site;
  std::string storage;
  std::vector<BucketSums> buckets;  // by position_bucket
};

// The logits' rows of one position bucket.
struct MarginSums {
  int64_t rows = 0;       // rows whose margin change is known
  double abs_change = 0;  // Σ |Δm|, Δm = margin_change (metrics.h) of the row
  int64_t changed = 0;    // rows with Δm ≠ 0
  int64_t top1 = 0;       // rows whose top-1 ids differ
};

// Everything of one sequence.
struct NoiseSums {
  std::vector<SiteSums> sites;      // the common hidden sites, forward order
  std::vector<MarginSums> margins;  // by position bucket (empty without logits on both sides)
  // Per choice row r = first_choice, first_choice + 1, ... (rows that chose a generated token,
  // first_choice = prompt_len − 1) among the compared rows: A's top-1 − top-2 logit margin and
  // how B moves it (NaN when unknown).
  int64_t first_choice = 0;
  std::vector<float> margin_a, margin_change;
  bool flipped = false;  // a compared choice row whose top-1 ids differ (or a first flip)
};

// Adds `from` into `into` (bucket by bucket; max_ulps by max).
void add_bucket(BucketSums& into, const BucketSums& from);
void add_margin(MarginSums& into, const MarginSums& from);

}  // namespace ds::diff
