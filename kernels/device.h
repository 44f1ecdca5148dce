// Which accelerators this build can see at run time.
#pragma once

#include <string>

namespace ds {

// Number of CUDA devices usable now; 0 without a driver, without a device, or in a CPU-only build.
int cuda_device_count();
// One line for people and traces: device name and compute capability, or why there is none.
std::string cuda_device_summary();

}  // namespace ds
