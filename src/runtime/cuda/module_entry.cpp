// The CUDA module's one entry point (src/runtime/cuda_loader.h): the CUDA runtime, the device
// query and the CUPTI kernel recorder, behind a table of functions the executable dlsym()s.
#include "kernels/cuda/device.h"
#include "src/runtime/cuda/cuda_runtime.h"
#include "src/runtime/cuda_loader.h"
#ifdef DRIFTSCOPE_HAVE_CUPTI
#include "trace/cupti/kernel_recorder_cupti.h"
#endif
#include "common/error.h"

namespace {

bool kernel_records_built() {
#ifdef DRIFTSCOPE_HAVE_CUPTI
  return true;
#else
  return false;
#endif
}

std::unique_ptr<ds::trace::KernelRecorder> make_kernel_recorder() {
#ifdef DRIFTSCOPE_HAVE_CUPTI
  return ds::trace::make_cupti_kernel_recorder();
#else
  throw ds::Error("kernel records need CUPTI, which this CUDA module was built without",
                  "rebuild with the CUDA toolkit's CUPTI present, or run with --kernels off");
#endif
}

}  // namespace

extern "C" __attribute__((visibility("default"))) const ds::CudaModuleApi*
driftscope_cuda_module() {
  static const ds::CudaModuleApi api{ds::kCudaModuleAbi,        &ds::cuda::device_count,
                                     &ds::cuda::device_summary, &ds::cuda::make_runtime,
                                     &kernel_records_built,     &make_kernel_recorder};
  return &api;
}
