// The test-only perturbation knob: DRIFTSCOPE_TEST_PERTURB="L3/mlp_out:bf16" rounds the output of
// one per-layer site to bf16 or f16 right after its op (src/runtime/shadow.h), so that a test can
// plant drift at one known place. Unset (the default): no perturbation, nothing changes.
#pragma once

#include <string>

#include "src/runtime/shadow.h"

namespace ds {

inline constexpr const char* kPerturbEnv = "DRIFTSCOPE_TEST_PERTURB";

// Parses "L<l>/<kind>:<bf16|f16>"; throws ds::Error naming the bad value.
Perturbation parse_perturbation(const std::string& spec);

// The perturbation DRIFTSCOPE_TEST_PERTURB asks for (inactive when unset or empty), and its text.
Perturbation perturbation_from_env();
std::string perturbation_env_text();

}  // namespace ds
