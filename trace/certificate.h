// The observer proof of a traced run (`run --certify`; docs/trace-format.md "/certify"): the run
// computed once more without taps (no probes, no full logits, the same batch and plan), and per
// row of every forward pass a digest of the raw logits and the token chosen after it, for both
// passes. The trace's root records the verdict: identical, or the first (sequence, step,
// position) where they differ and by how many ulps.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ds::trace {

// One logits row of one sequence: its digests in the tapped and the untapped pass, and the token
// each chose after it (-1: a prompt row that chose none).
struct CertifyRow {
  int32_t seq = 0, row = 0;
  uint64_t tapped = 0, untapped = 0;
  int32_t token_tapped = -1, token_untapped = -1;
};

struct Certificate {
  bool identical = true;
  int64_t rows = 0;  // logits rows compared
  // The first row that differs (by sequence, then position), when one does: its sequence, the
  // generated step (0 for the prefill's rows), the position (= the row) and the largest distance
  // between the two rows' logits in ulps of float32 (of float64 for an fp64 run; -1: a NaN on
  // one side), and whether the chosen tokens differ there.
  int32_t seq = -1, step = -1;
  int64_t position = -1, ulps = 0;
  bool token_differs = false;
  std::vector<CertifyRow> digests;  // every row, by sequence then row

  // "identical (1234 logits rows, tapped and untapped)" or "DIFFERS at seq 0, step 3, position
  // 12: 2 ulps"
  std::string verdict() const;
  // The root attribute certify_json: {"verdict": "identical"|"differs", "rows", "first": null |
  // {"seq", "step", "position", "ulps", "token_differs"}}.
  std::string json() const;
};

// The verdict line of a trace's certify_json ("" when it has none; "unreadable" when it is not
// one).
std::string certify_verdict(const std::string& certify_json);

}  // namespace ds::trace
