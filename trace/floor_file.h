// The noise floor file (`driftscope calibrate A.h5 -o floor.h5`; docs/trace-format.md, "Floor
// files"): what N benign replays of trace A measured against A's own reduction order, per hidden
// site, position bucket and replay, and per choice row the spread of the top-1/top-2 margin's
// change. An HDF5 file with its own format name and version, independent of the code that wrote
// it, as traces are; `diff A.h5 B.h5 --floor floor.h5` and `show floor.h5` read it. Plain data
// here: the statistics are diff/noise_floor.h's.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace ds::trace {

inline constexpr const char* kFloorFormat = "driftscope-floor";
inline constexpr int64_t kFloorVersion = 1;

// One hidden site, position bucket and replay (the sums of diff/noise_sums.h BucketSums).
struct FloorBucket {
  int64_t rows = 0, elements = 0, differ = 0, up = 0, nan = 0;
  double rel_l2 = 0, max_ulps = 0;
};

// The logits' rows of one position bucket and replay (diff/noise_sums.h MarginSums).
struct FloorMargins {
  int64_t rows = 0, changed = 0, top1 = 0;
  double abs_change = 0;
};

// One calibrated sequence of A: its index, prompt length and tokens (the replays were forced on
// them; a diff checks that its A holds the same).
struct FloorSequence {
  int32_t index = 0;
  int32_t prompt_len = 0;
  std::vector<int32_t> tokens;
};

// One choice row (a row that chose a generated token) of a calibrated sequence: A's top-1 −
// top-2 logit margin, the mean and standard deviation over the replays of how they moved it,
// and how many replays chose another top-1 there.
struct FloorRow {
  int32_t seq = 0;  // index in A
  int32_t row = 0;
  float margin = 0;
  double change_mean = 0, change_sd = 0;
  int32_t flips = 0;
};

struct FloorFile {
  int64_t format_version = kFloorVersion;
  std::string tool_version;
  std::string source;          // A's path when it was calibrated
  std::string config_json;     // A's run configuration (config_json less "trace" and "plan")
  std::string model_json;      // A's model record
  std::string config_digest;   // sha256 (hex) of config_json
  std::string model_digest;    // sha256 (hex) of the model files' sorted sha256 digests
  std::string perturbation;    // "reorder", "sr" or "reorder+sr" (docs/metrics.md)
  std::vector<int64_t> seeds;  // per replay: its plan's seed (N = seeds.size())
  std::vector<FloorSequence> sequences;  // ascending index
  int buckets = 0;                       // position buckets (diff/noise_sums.h)
  std::vector<std::string> sites;        // hidden sites, forward order
  std::vector<std::string> storages;     // per site: float32, float16, bf16
  std::vector<FloorBucket> hidden;       // [site][replay][bucket]
  std::vector<FloorMargins> margins;     // [replay][bucket]; empty without logits
  std::vector<uint8_t> flipped;          // [replay][sequence]: the replay flipped it
  std::vector<FloorRow> rows;            // every choice row, by sequence then row

  int runs() const { return static_cast<int>(seeds.size()); }
  const FloorBucket& at(size_t site, size_t replay, size_t bucket) const {
    return hidden[(site * seeds.size() + replay) * static_cast<size_t>(buckets) + bucket];
  }
  const FloorMargins& margin(size_t replay, size_t bucket) const {
    return margins[replay * static_cast<size_t>(buckets) + bucket];
  }
};

// Writes `f` to `path` (under a unique hidden name, moved into place when complete; an existing
// file is replaced only with `replace`). Throws ds::Error with a hint when it cannot.
void write_floor(const std::filesystem::path& path, const FloorFile& f, bool replace);

// Whether `path` is an HDF5 file whose root says format="driftscope-floor" (false for anything
// else, a trace included); its reads are marked like read_floor's.
bool is_floor_file(const std::filesystem::path& path);

// Reads a floor file, every read marked for a watching parent (read_watch.h) as "floor 'PATH'".
// Throws ds::Error with a hint for a missing file, one that is not a floor, a floor of another
// format version, or a damaged one (shapes that disagree, values out of range).
FloorFile read_floor(const std::filesystem::path& path);

}  // namespace ds::trace
