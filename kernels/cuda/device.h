// Which CUDA devices the process can see (host C++, part of the CUDA module).
#pragma once

#include <string>

namespace ds::cuda {

// Number of CUDA devices usable now; 0 without a driver or without a device.
int device_count();
// One line for people and traces: device name and compute capability, or why there is none.
std::string device_summary();

}  // namespace ds::cuda
