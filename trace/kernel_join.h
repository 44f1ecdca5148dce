// The CUPTI-free half of the kernel recorder: joining kernel activity records to the
// (pass, site, op) labels of the launches that produced them, and demangling kernel names.
// Kept apart from trace/cupti so that it is built and tested everywhere.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "trace/kernel_records.h"

namespace ds::trace {

// A kernel as CUPTI reports it: the correlation id of its launch and what it ran.
struct RawKernel {
  uint32_t correlation = 0;
  std::string name;  // demangled
  std::array<int32_t, 3> grid{}, block{};
  int64_t duration_ns = 0;
};

// What the runtime was doing when it pushed external id i + 1.
struct OpLabel {
  int32_t pass = 0;
  std::string site;
  std::string op;
};

// Records in launch order (correlation ids increase with launches). A kernel whose launch has an
// external id gets that label; one without (launched outside any op) keeps an empty site and op.
std::vector<KernelRecord> join_kernel_records(
    std::vector<RawKernel> kernels, const std::unordered_map<uint32_t, uint64_t>& external_of,
    const std::vector<OpLabel>& labels);

// The C++ name of a mangled symbol ("_Z3addPfi" -> "add(float*, int)"); other names unchanged.
std::string demangle_kernel_name(const char* name);

}  // namespace ds::trace
