// The regression gate: `diff --fail-on flip|drift=<rel_l2>|kl=<nats>|beyond-noise` holds when the
// condition is met (in any compared sequence; beyond-noise: against the floor of --floor); the CLI
// then exits 1 with the one-line verdict built here.
#pragma once

#include <string>
#include <vector>

#include "diff/report.h"

namespace ds::diff {

struct GateCondition {
  enum class Kind { flip, drift, kl, beyond_noise };
  Kind kind = Kind::flip;
  double threshold = 0;  // drift: relative L2; kl: nats
  std::string spec;      // as written: "flip", "drift=1e-3"
};

// Parses "flip", "drift=<x>", "kl=<x>" (x a finite number >= 0) or "beyond-noise"; throws
// ds::Error with a hint.
GateCondition parse_gate(const std::string& spec);

struct GateResult {
  bool failed = false;
  // One line, FAIL or PASS once: "gate FAIL: flip: seq 0 flips at step 37 ...; drift=1e-3 ok:
  // max relative L2 ..." / "gate PASS: flip ok: no flip in 8 sequences".
  std::string verdict;
};

// A condition holds (fails the gate) when:
//   flip     any compared sequence has a first flip;
//   drift=x  the relative L2 of any common site at any compared position exceeds x;
//   kl=x     KL(A‖B) at any compared position exceeds x;
//   beyond-noise  B's drift at some site (family-wise) or its flip count is significant against
//            the noise floor (Report::noise, diff/noise_floor.h).
// Whatever the condition, a part of a trace skipped as unreadable (Report::skipped), a sequence
// whose prompts differ, no compared position at all ("nothing compared": no sequence, or only
// sequences of 0 compared positions), or a NaN/Inf in compared data fail it. Throws
// ds::Error when a condition cannot be evaluated (kl without logits in both traces, drift without a
// common hidden site, beyond-noise without a floor).
GateResult evaluate_gates(const Report& r, const std::vector<GateCondition>& conditions);

}  // namespace ds::diff
