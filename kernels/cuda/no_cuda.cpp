// Device query when the CUDA part of kernels/ is not built: there is never a device.
#include "kernels/device.h"

namespace ds {

int cuda_device_count() { return 0; }
std::string cuda_device_summary() { return "CUDA support not built (nvcc was not found)"; }

}  // namespace ds
