// The run configuration: every knob that can make two runs of the same model differ
// (DESIGN.md "Configuration knobs"). Recorded in full in each trace's /meta config_json.
#pragma once

#include <cstdint>
#include <string>

#include "src/runtime.h"
#include "src/sampler.h"

namespace ds {

struct RunConfig {
  std::string device = "cpu";
  std::string dtype = "fp32";  // fp32 | fp64
  int max_new = 256;
  double temperature = 0.0;
  double top_p = 1.0;
  int top_k = 0;
  uint64_t seed = 0;

  SamplingParams sampling() const { return {temperature, top_p, top_k, seed}; }
};

// Checks every field up front; throws ds::Error naming the field and the allowed values.
void validate(const RunConfig& c);
DType compute_dtype(const RunConfig& c);

// {"device": "cpu", "dtype": "fp32", ...}: every field, as recorded in traces.
std::string to_json(const RunConfig& c);

}  // namespace ds
