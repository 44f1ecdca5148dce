// A hand-built set of zoomed pairs for the flips' aggregate (tests/diff/test_flip_aggregate.cpp,
// tests/viewer/test_flips_*.cpp): five sequences of a 2-layer model, one diff report and one
// split attribution report holding them all; every expected number is worked out by hand in the
// tests from the values set here.
#pragma once

#include <vector>

#include "diff/attribution.h"
#include "diff/flip_aggregate.h"
#include "diff/report.h"

namespace ds::test {

struct FlipFixture {
  diff::Report report;
  diff::AttributionReport attribution;
  std::vector<diff::ZoomedPair> pairs() const;  // sequences 0..4, in order
};

// Sequence 0: flip at step 2, A's margin 0.01 logit, onset L0/attn_out, local error above the
//   floor (1e-3) first in L0 attention (5e-3), largest in L1 mlp (8e-3).
// Sequence 1: B teacher-forced (no FirstFlip): top-1 differs at prompt row 0 (not a choice row)
//   and at row 3 (prompt_len 2, so step 2), margin 0.3; onset L1/mlp_out; born in L0 mlp (2e-3),
//   largest L1 attention (1e-2).
// Sequence 2: flip at step 10, margin 0.02; onset L0/resid_mid; born in L1 attention (4e-3), the
//   largest; its whole-layer block L0 (3e-3, above the floor) is not a verdict block.
// Sequence 3: drift without flip.
// Sequence 4: flip at step 5, margin 6; no onset; no local error.
// Layer view at each flip row (L0, L1): seq 0 (1e-4, 5e-4), 1 (2e-3, 4e-3), 2 (0, 5e-3),
// 4 (1e-2, 1e-2); each layer's site floor in the diff 3e-3 ("float16"), apart from the
// attribution's 1e-3 ("bf16"). Whole-layer local: L0 1e-3·(seq+1), L1 2e-3·(seq+1).
FlipFixture flip_fixture();

}  // namespace ds::test
