// KernelRecorder through CUPTI's activity API: concurrent-kernel records (name, grid, block,
// start/end) joined by correlation id with the external-correlation records that tie each launch
// to the (pass, site, op) label pushed around it.
#include "trace/cupti/kernel_recorder_cupti.h"

#include <cupti.h>

#include <cstdlib>
#include <mutex>
#include <unordered_map>

#include "common/error.h"
#include "trace/kernel_join.h"
#include "trace/kernel_recorder.h"

namespace ds::trace {
namespace {

constexpr CUpti_ExternalCorrelationKind kKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
constexpr size_t kBufferBytes = 8u << 20;

void check(CUptiResult r, const char* what, const char* file, int line) {
  if (r == CUPTI_SUCCESS) return;
  const char* msg = nullptr;
  cuptiGetResultString(r, &msg);
  throw Error(std::string("CUPTI: ") + what + " failed: " + (msg ? msg : "?") + " (" + file + ":" +
                  std::to_string(line) + ")",
              "another profiler (nsys, ncu) may hold CUPTI; run with --kernels off to trace "
              "without kernel records");
}
#define DS_CUPTI_CHECK(call) check((call), #call, __FILE__, __LINE__)

// State shared with CUPTI's buffer callbacks (plain functions, any thread).
struct Shared {
  std::mutex mu;
  std::vector<RawKernel> kernels;                      // completed, not yet drained
  std::unordered_map<uint32_t, uint64_t> external_of;  // correlation id -> label id
  bool active = false;
};
Shared& shared() {
  static Shared s;
  return s;
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer != nullptr ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  Shared& s = shared();
  {
    std::lock_guard<std::mutex> lock(s.mu);
    CUpti_Activity* rec = nullptr;
    while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
      if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ||
          rec->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
        const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
        s.kernels.push_back({k->correlationId,
                             demangle_kernel_name(k->name),
                             {k->gridX, k->gridY, k->gridZ},
                             {k->blockX, k->blockY, k->blockZ},
                             static_cast<int64_t>(k->end - k->start)});
      } else if (rec->kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) {
        const auto* e = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(rec);
        if (e->externalKind == kKind) s.external_of[e->correlationId] = e->externalId;
      }
    }
  }
  std::free(buffer);
}

}  // namespace

class CuptiKernelRecorder final : public KernelRecorder {
 public:
  CuptiKernelRecorder();
  ~CuptiKernelRecorder() override;
  void begin_op(int pass, const std::string& site, const char* op) override;
  void end_op() override;
  std::vector<KernelRecord> drain() override;

 private:
  std::vector<OpLabel> labels_;  // external id - 1 -> label
};

CuptiKernelRecorder::CuptiKernelRecorder() {
  Shared& s = shared();
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.active) throw Error("only one kernel recorder can run at a time");
    s.active = true;
    s.kernels.clear();
    s.external_of.clear();
  }
  try {
    DS_CUPTI_CHECK(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed));
    DS_CUPTI_CHECK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    DS_CUPTI_CHECK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION));
    // External-correlation records accompany API records: without the runtime (our <<<>>>
    // launches) and driver (cuBLASLt's) kinds none are emitted. Their records are skipped.
    DS_CUPTI_CHECK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME));
    DS_CUPTI_CHECK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER));
  } catch (...) {
    std::lock_guard<std::mutex> lock(s.mu);
    s.active = false;
    throw;
  }
}

CuptiKernelRecorder::~CuptiKernelRecorder() {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_RUNTIME);
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_DRIVER);
  Shared& s = shared();
  std::lock_guard<std::mutex> lock(s.mu);
  s.active = false;
}

void CuptiKernelRecorder::begin_op(int pass, const std::string& site, const char* op) {
  labels_.push_back({pass, site, op});
  DS_CUPTI_CHECK(cuptiActivityPushExternalCorrelationId(kKind, labels_.size()));
}

void CuptiKernelRecorder::end_op() {
  uint64_t last = 0;
  DS_CUPTI_CHECK(cuptiActivityPopExternalCorrelationId(kKind, &last));
}

std::vector<KernelRecord> CuptiKernelRecorder::drain() {
  DS_CUPTI_CHECK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
  Shared& s = shared();
  std::lock_guard<std::mutex> lock(s.mu);
  // After a forced flush (the runtime synchronised before) every launch's records are in.
  std::vector<KernelRecord> out = join_kernel_records(std::move(s.kernels), s.external_of, labels_);
  s.kernels.clear();
  s.external_of.clear();
  return out;
}

std::unique_ptr<KernelRecorder> make_cupti_kernel_recorder() {
  return std::make_unique<CuptiKernelRecorder>();
}

}  // namespace ds::trace
