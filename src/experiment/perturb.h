// The test-only perturbation knob, the run-config field test_perturb: "<op>:<how>" perturbs one
// op's output right after the op (numerics_plan.h OpPerturb), so that a test can plant a cause at
// one known place: attribute must find its block, explain its knob and its (layer, op). <op> is an
// op id of the numerics plan (L3/down_proj, lm_head) or a per-layer tap site, meaning the op that
// writes it (L3/attn_norm, attn_out = o_proj, resid_mid = attn_add, mlp_norm, mlp_out =
// down_proj, out = mlp_add); <how> is bf16 or f16 (each value rounded to that format), +ulp or
// -ulp (rounded to bf16, then one bf16 ulp up or down). Empty (the default): nothing changes.
#pragma once

#include <limits>
#include <string>

#include "src/runtime/numerics_plan.h"

namespace ds {

// The perturbation `spec` asks for (inactive when empty). Throws ds::Error naming the bad value
// for anything else, and for a layer at or past n_layers.
OpPerturb parse_perturbation(const std::string& spec,
                             int n_layers = std::numeric_limits<int>::max());

}  // namespace ds
