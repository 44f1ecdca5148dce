// Kernel records: which GPU kernels ran for each tap site (docs/trace-format.md "/kernels").
// Produced by the CUPTI recorder (trace/cupti/kernel_recorder_cupti.h) on the CUDA backend, stored
// in a trace's /kernels table, compared by the diff. Plain data: nothing here needs CUDA.
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace ds::trace {

struct KernelRecord {
  int32_t pass = 0;                // forward pass of the run that launched it (0, 1, ...)
  std::string site;                // tap site the kernel's output flows into next: "embed",
                                   // "L0/attn_out", ..., "final_norm", "logits"
  std::string op;                  // the runtime's op label: "q_proj", "attention", "rmsnorm", ...
  std::string name;                // kernel name as the driver reports it, demangled
  std::array<int32_t, 3> grid{};   // gridDim x, y, z
  std::array<int32_t, 3> block{};  // blockDim x, y, z
  int64_t duration_ns = 0;         // end - start on the device
};

}  // namespace ds::trace
