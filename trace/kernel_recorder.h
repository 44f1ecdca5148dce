// Kernel recorder: attributes every GPU kernel launch to the tap site and op that launched it
// (docs/trace-format.md "/kernels"), through CUPTI's activity API with external correlation ids
// pushed around each op. This is the interface; the CUPTI implementation (trace/cupti/) lives in
// the CUDA module, which makes one on request (src/runtime/cuda_loader.h).
#pragma once

#include <string>
#include <vector>

#include "trace/kernel_records.h"

namespace ds::trace {

class KernelRecorder {
 public:
  virtual ~KernelRecorder() = default;
  // Kernels launched by this thread between begin_op and end_op belong to (pass, site, op).
  virtual void begin_op(int pass, const std::string& site, const char* op) = 0;
  virtual void end_op() = 0;
  // Flushes the recorder's buffers (after the device finished the work) and returns the records
  // that completed since the last drain, in launch order.
  virtual std::vector<KernelRecord> drain() = 0;
};

}  // namespace ds::trace
