// The one checked-call helper for CUDA and cuBLAS (host C++, used by kernels/cuda, the CUDA
// runtime and its tests): every failure throws ds::Error naming the call, file and line
// (nvbench NVBENCH_CUDA_CALL, llm.c cudaCheck). DS_LAUNCH_CHECK() follows every kernel launch.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <string>

#include "common/error.h"

namespace ds::cuda {

[[noreturn]] inline void fail(const char* what, const std::string& why, const char* file,
                              int line) {
  throw Error(std::string("CUDA: ") + what + " failed: " + why + " (" + file + ":" +
                  std::to_string(line) + ")",
              "run with CUDA_LAUNCH_BLOCKING=1 to find the failing kernel; `nvidia-smi` shows the "
              "device state");
}

inline void check(cudaError_t e, const char* what, const char* file, int line) {
  if (e != cudaSuccess) fail(what, cudaGetErrorString(e), file, line);
}

inline void check(cublasStatus_t s, const char* what, const char* file, int line) {
  if (s != CUBLAS_STATUS_SUCCESS) fail(what, cublasGetStatusString(s), file, line);
}

}  // namespace ds::cuda

#define DS_CUDA_CHECK(call) ::ds::cuda::check((call), #call, __FILE__, __LINE__)
#define DS_LAUNCH_CHECK() ::ds::cuda::check(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)
