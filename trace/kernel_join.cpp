// Joining kernel activity records to op labels (trace/kernel_join.h).
#include "trace/kernel_join.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>

namespace ds::trace {

std::vector<KernelRecord> join_kernel_records(
    std::vector<RawKernel> kernels, const std::unordered_map<uint32_t, uint64_t>& external_of,
    const std::vector<OpLabel>& labels) {
  std::stable_sort(kernels.begin(), kernels.end(), [](const RawKernel& a, const RawKernel& b) {
    return a.correlation < b.correlation;
  });
  std::vector<KernelRecord> out;
  out.reserve(kernels.size());
  for (RawKernel& k : kernels) {
    KernelRecord r;
    const auto e = external_of.find(k.correlation);
    if (e != external_of.end() && e->second >= 1 && e->second <= labels.size()) {
      const OpLabel& l = labels[e->second - 1];
      r.pass = l.pass;
      r.site = l.site;
      r.op = l.op;
    }
    r.name = std::move(k.name);
    r.grid = k.grid;
    r.block = k.block;
    r.duration_ns = k.duration_ns;
    out.push_back(std::move(r));
  }
  return out;
}

std::string demangle_kernel_name(const char* name) {
  if (name == nullptr) return "?";
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string out = status == 0 && d != nullptr ? d : name;
  std::free(d);
  return out;
}

}  // namespace ds::trace
