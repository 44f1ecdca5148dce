// KernelRecorder in a build without CUPTI: it cannot be started.
#include "common/error.h"
#include "trace/kernel_recorder.h"

namespace ds::trace {

struct KernelRecorder::Impl {};

bool KernelRecorder::built() {
  return false;
}

KernelRecorder::KernelRecorder() {
  throw Error("kernel recording needs CUPTI, which this build does not have",
              "rebuild with the CUDA toolkit's CUPTI present, or run with --kernels off");
}
KernelRecorder::~KernelRecorder() = default;
void KernelRecorder::begin_op(int, const std::string&, const char*) {}
void KernelRecorder::end_op() {}
std::vector<KernelRecord> KernelRecorder::drain() {
  return {};
}

}  // namespace ds::trace
