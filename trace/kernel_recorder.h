// Kernel recorder: attributes every GPU kernel launch to the tap site and op that launched it
// (docs/trace-format.md "/kernels"), through CUPTI's activity API with external correlation ids pushed
// around each op. Built with CUPTI when the CUDA part is built and CUPTI is found; otherwise
// constructing one throws a ds::Error saying so.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "trace/kernel_records.h"

namespace ds::trace {

class KernelRecorder {
 public:
  // Whether this build can record kernels (CUPTI found at build time).
  static bool built();
  // Starts recording kernel activity for the process (one recorder at a time). Throws ds::Error
  // when CUPTI is not built in, or fails (e.g. another profiler holds it).
  KernelRecorder();
  ~KernelRecorder();
  KernelRecorder(const KernelRecorder&) = delete;
  KernelRecorder& operator=(const KernelRecorder&) = delete;

  // Kernels launched by this thread between begin_op and end_op belong to (pass, site, op).
  void begin_op(int pass, const std::string& site, const char* op);
  void end_op();
  // Flushes CUPTI's buffers (after the device finished the work) and returns the records that
  // completed since the last drain, in launch order.
  std::vector<KernelRecord> drain();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ds::trace
