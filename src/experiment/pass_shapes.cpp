// Pass shapes of a batched run from its prompt and generated lengths (pass_shapes.h): the
// prefill planned as generate_batch plans it, then the decode passes of the members still active.
#include "src/experiment/pass_shapes.h"

#include <algorithm>

#include "src/experiment/generate.h"

namespace ds {

std::vector<PassShape> member_pass_shapes(const GroupLengths& group, int member, int prefill_chunk,
                                          bool prefix_cache, int decode_steps) {
  std::vector<PassShape> shapes;
  for (const PrefillPass& pass : prefill_passes(group.prompt_lens, prefill_chunk, prefix_cache)) {
    PassShape s;
    bool holds_member = false;
    for (const PrefillPart& part : pass) {
      s.rows += part.count;
      s.seqs += 1;
      holds_member |= part.seq == member;
    }
    if (holds_member) shapes.push_back(s);
  }
  // decode pass k (k >= 1) feeds every member that has generated k tokens and needs more
  for (int k = 1; k <= decode_steps; ++k) {
    const int active = static_cast<int>(
        std::count_if(group.gen_lens.begin(), group.gen_lens.end(), [k](int g) { return g > k; }));
    shapes.push_back({active, active});
  }
  return shapes;
}

}  // namespace ds
