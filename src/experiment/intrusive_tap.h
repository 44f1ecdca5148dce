// The test-only intrusive tap: DRIFTSCOPE_TEST_INTRUSIVE_TAP="L1/mlp_out" makes the tap at that
// site round the tensor it is handed to bf16 in place before passing it on (the CPU hands the
// runtime's own buffer), so the numbers after it change: a tap that is not a pure observer, which
// `run --certify` must catch. Unset (the default): no such tap.
#pragma once

#include <memory>
#include <string>

#include "src/runtime/runtime.h"

namespace ds {

inline constexpr const char* kIntrusiveTapEnv = "DRIFTSCOPE_TEST_INTRUSIVE_TAP";

// The variable's value ("" when unset).
std::string intrusive_tap_env_text();
// The hook that does it in front of `inner` (null when the variable is unset); throws ds::Error
// for a value that names no per-layer site of an n_layers model.
std::unique_ptr<TapHook> intrusive_tap(TapHook& inner, int n_layers);
// The same checks, before anything is written.
void check_intrusive_tap(int n_layers);

}  // namespace ds
