// The CUDA backend is a shared module (libdriftscope_cuda.so: kernels/cuda, the CUDA runtime, the
// CUPTI kernel recorder) loaded with dlopen the first time something asks for it, i.e. only for
// --device cuda. The driftscope executable links no CUDA library and runs where none is
// installed. Where the module is looked for: $DRIFTSCOPE_CUDA_MODULE, then beside the
// executable, then ../lib/driftscope/ from it, then the build tree's copy.
#pragma once

#include <memory>
#include <string>

#include "src/model/model.h"
#include "src/runtime/runtime.h"
#include "trace/kernel_recorder.h"

namespace ds {

// What the module exports (one C entry point, driftscope_cuda_module, returns it). Both sides
// are built from one source tree by one compiler; abi guards against a stale module.
struct CudaModuleApi {
  int abi = 0;
  int (*device_count)() = nullptr;
  std::string (*device_summary)() = nullptr;
  std::unique_ptr<Runtime> (*make_runtime)(const Model&, const Numerics&, int capacity,
                                           int slots) = nullptr;
  bool (*kernel_records_built)() = nullptr;  // CUPTI compiled into the module
  std::unique_ptr<trace::KernelRecorder> (*make_kernel_recorder)() = nullptr;
};
inline constexpr int kCudaModuleAbi = 2;
inline constexpr const char* kCudaModuleEntry = "driftscope_cuda_module";
inline constexpr const char* kCudaModuleFile = "libdriftscope_cuda.so";

// The module, loaded on first use. Throws ds::Error naming what is missing: the module file (a
// build without nvcc, or not installed), or a library it needs (libcudart, libcublasLt, ...).
const CudaModuleApi& cuda_module();

// CUDA devices usable now: 0 when the module, the driver or a device is missing.
int cuda_device_count();
// One line for people and traces: the device, or why there is none (module, driver, device).
std::string cuda_device_summary();

// Throws ds::Error with a hint when the CUDA backend cannot run these numerics: no usable
// device (no module, no driver, no device), fp64 (the CPU oracle), or fp16 accumulation of bf16
// GEMMs on cuBLAS.
void check_cuda_support(const Numerics& nx);

}  // namespace ds
