// The pass shapes a batched run had, for one of its sequences: what a replay of that sequence
// alone gives its numerics plan (src/runtime/numerics_plan.h PlanSide::shapes), so that batch
// changes the replay's numerics exactly as it changed the original's.
#pragma once

#include <vector>

#include "src/runtime/numerics_plan.h"

namespace ds {

// A group of sequences generated together (generate_batch): their prompt and generated lengths
// (as a trace records them, gen_len), in slot order.
struct GroupLengths {
  std::vector<int> prompt_lens, gen_lens;
};

// The shapes (rows and sequences of the whole group) of the passes that computed member
// `member`'s rows, in its order: its prefill passes (prefill_chunk, prefix_cache as the run
// had them), then one decode pass per generated token after the first, up to `decode_steps` of
// them. A replay of the member alone with the same prefill options runs its passes in this order.
std::vector<PassShape> member_pass_shapes(const GroupLengths& group, int member, int prefill_chunk,
                                          bool prefix_cache, int decode_steps);

}  // namespace ds
