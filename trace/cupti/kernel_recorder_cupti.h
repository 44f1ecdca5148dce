// The CUPTI kernel recorder. Built into the CUDA module only (src/runtime/cuda/module_entry.cpp),
// so the driftscope executable never links CUPTI.
#pragma once

#include <memory>

#include "trace/kernel_recorder.h"

namespace ds::trace {

// Starts recording kernel activity for the process (one recorder at a time). Throws ds::Error
// when CUPTI fails (e.g. another profiler holds it).
std::unique_ptr<KernelRecorder> make_cupti_kernel_recorder();

}  // namespace ds::trace
