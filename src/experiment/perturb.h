// The test-only perturbation knob: DRIFTSCOPE_TEST_PERTURB="L3/mlp_out:bf16" rounds the output of
// one per-layer site to bf16 or f16 right after its op (a site edit, src/runtime/taps.h), so that
// a test can plant drift at one known place. Unset (the default): no perturbation, nothing changes.
#pragma once

#include <memory>
#include <string>

#include "common/float_formats.h"
#include "src/runtime/runtime.h"

namespace ds {

inline constexpr const char* kPerturbEnv = "DRIFTSCOPE_TEST_PERTURB";

// The output of one per-layer site rounded to `to`. Inert when layer < 0.
struct Perturbation {
  int layer = -1;
  SiteKind kind = SiteKind::out;
  Storage to = Storage::native;
  bool active() const { return layer >= 0; }
};

// Parses "L<l>/<kind>:<bf16|f16>"; throws ds::Error naming the bad value.
Perturbation parse_perturbation(const std::string& spec);

// The perturbation DRIFTSCOPE_TEST_PERTURB asks for (inactive when unset or empty), and its text.
Perturbation perturbation_from_env();
std::string perturbation_env_text();

// The test-only intrusive tap: DRIFTSCOPE_TEST_INTRUSIVE_TAP="L1/mlp_out" makes the tap at that
// site round the tensor it is handed to bf16 in place before passing it on (the CPU hands the
// runtime's own buffer), so the numbers after it change: a tap that is not a pure observer, which
// `run --certify` must catch. Unset (the default): no such tap.
inline constexpr const char* kIntrusiveTapEnv = "DRIFTSCOPE_TEST_INTRUSIVE_TAP";
std::string intrusive_tap_env_text();
// The hook that does it in front of `inner` (null when the variable is unset); throws ds::Error
// for a value that names no site of an n_layers model.
std::unique_ptr<TapHook> intrusive_tap(TapHook& inner, int n_layers);
void check_intrusive_tap(int n_layers);  // the same checks, before anything is written

// Plants `p` in every later forward pass of `rt` (nothing when inactive). Throws ds::Error when
// its layer is past the model's or the runtime cannot round a tensor in place.
void apply_perturbation(Runtime& rt, const Perturbation& p);

}  // namespace ds
