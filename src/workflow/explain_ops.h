// explain's op level: for one flipped sequence inside its knob set, the numerics plans of its
// trials. Side a is A's configuration, side b A's with the knob set at B's values, each with the
// pass shapes of its original batched run (src/experiment/pass_shapes.h), so that the sequence
// replayed alone decides as its batch did; the candidates are the ops whose decisions differ
// between the two sides at some pass of the replay, ordered for the search by the attribution's
// local error (the top one tried first) and by a stable hash of their names (the bisection).
#pragma once

#include <string>
#include <vector>

#include "diff/attribution.h"
#include "src/experiment/pass_shapes.h"
#include "src/experiment/plan_file.h"

namespace ds {

// One side's original batch group of a sequence: its members' lengths and the sequence's place.
struct MemberOf {
  GroupLengths group;
  int member = 0;
};

struct OpLevelPlan {
  PlanSpec spec;                  // a_shapes, b and b_shapes; each trial sets b_ops
  std::vector<OpId> candidates;   // forward order
  std::vector<std::string> what;  // per candidate: what side b changes there ("split-K 4→2")
  std::vector<int> first;         // the candidate to try alone first (largest local error)
  std::vector<int> order;         // every candidate, by the stable hash of its name
};

// The plan of a flip's op trials: `a` A's configuration, `b` the knob set's; the sequence of
// prompt length `prompt_len` replayed to `steps` generated tokens (the flip step), its batch group
// under each side (`ga`, `gb`); `attribution` (may be null) ranks the candidates.
OpLevelPlan op_level_plan(const ModelConfig& m, const RunConfig& a, const RunConfig& b,
                          const MemberOf& ga, const MemberOf& gb, int prompt_len, int steps,
                          const diff::AttributionReport* attribution);

// A stable id of a set of op names (FNV-1a of the sorted names): a trial's name.
std::string op_set_id(std::vector<std::string> names);

}  // namespace ds
