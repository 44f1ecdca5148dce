// Per-op benchmark over the op table (tests/ops/op_cases.h): for every case, or those whose name
// contains a filter argument, validate first (the CPU op against its float64 reference; with
// CUDA and a device, the CUDA op against the CPU op, by the case's bound), then time the CPU op
// and the CUDA op and print time per call, GB/s and GFLOP/s. Exit 1 when a validation fails.
//
//   bench_ops [FILTER...] [--min-ms 50]
//
// A per-op view of where time goes, not a comparison with another engine. An op that works in
// place (rope, all_reduce) is timed with the copy that restores its input.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "tests/ops/compare.h"
#include "tests/ops/op_cases.h"
#ifdef DRIFTSCOPE_BENCH_CUDA
#include <cuda_runtime.h>

#include "kernels/cuda/device.h"
#include "tests/ops/op_cases_cuda.h"
#endif

namespace {

using ds::test::OpCall;
using ds::test::OpCase;
using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Median seconds per call of a CPU run, over at least 3 calls and min_s seconds.
double time_cpu(const OpCall& call, double min_s) {
  std::vector<double> each;
  const auto start = Clock::now();
  while (each.size() < 3 || (std::chrono::duration<double>(Clock::now() - start).count() < min_s &&
                             each.size() < 100000)) {
    const auto t0 = Clock::now();
    call.run();
    each.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return median(each);
}

#ifdef DRIFTSCOPE_BENCH_CUDA
// Mean seconds per launch of a CUDA call, by events around a batch of launches sized to min_s.
double time_cuda(const OpCall& call, double min_s) {
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  int reps = 1;
  float ms = 0;
  for (;;) {
    cudaEventRecord(e0);
    for (int i = 0; i < reps; ++i) call.run();
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    cudaEventElapsedTime(&ms, e0, e1);
    if (ms >= min_s * 1e3 || reps >= (1 << 20)) break;
    reps *= ms > 0 ? std::clamp(static_cast<int>(min_s * 1e3 / ms) + 1, 2, 100) : 100;
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  return ms * 1e-3 / reps;
}
#endif

std::string rates(const OpCase& c, double s) {
  std::string out = fmt::format("{:>10.2f} us {:>8.2f} GB/s", s * 1e6, c.bytes / s * 1e-9);
  if (c.flops > 0) out += fmt::format(" {:>8.2f} GFLOP/s", c.flops / s * 1e-9);
  return out;
}

bool wanted(const OpCase& c, const std::vector<std::string>& filters) {
  if (filters.empty()) return true;
  const std::string name = c.name();
  return std::any_of(filters.begin(), filters.end(),
                     [&](const std::string& f) { return name.find(f) != std::string::npos; });
}

// Validates one case, prints its line(s); false when a check failed.
bool bench_case(const OpCase& c, bool device, double min_s) {
  const ds::test::OpData in = c.make_inputs();
  const OpCall cpu = c.cpu(in);
  cpu.run();
  const std::vector<float> cpu_out = cpu.result();
  bool ok = true;
  std::string check = "no float64 reference";
  if (c.reference) {
    const auto r = ds::test::compare(cpu_out, c.reference(in), ds::test::Metric::nmse, c.ref_bound);
    check = r.ok ? fmt::format("ref nmse {:.1e} <= {:.1e}", r.error, c.ref_bound)
                 : "FAIL vs float64: " + r.detail;
    ok = r.ok;
  }
  fmt::print("{:<17} {:<72} cpu {}  {}\n", c.op, c.shape, rates(c, time_cpu(cpu, min_s)), check);
#ifdef DRIFTSCOPE_BENCH_CUDA
  if (device && c.cuda) {
    const OpCall gpu = c.cuda(in);
    try {
      gpu.run();
    } catch (const ds::test::OpDeclined& e) {
      fmt::print("{:<17} {:<72} cuda declined: {}\n", "", "", e.what());
      return ok;
    }
    const auto r = ds::test::compare(gpu.result(), cpu_out, c.metric, c.bound);
    fmt::print("{:<17} {:<72} gpu {}  {}\n", "", "", rates(c, time_cuda(gpu, min_s)),
               r.ok ? fmt::format("vs cpu {:.1e} <= {:.1e}", r.error, c.bound)
                    : "FAIL vs cpu: " + r.detail);
    ok = ok && r.ok;
  }
#else
  (void)device;
#endif
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> filters;
  double min_s = 0.05;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--min-ms" && i + 1 < argc) {
      min_s = std::stod(argv[++i]) * 1e-3;
    } else {
      filters.push_back(a);
    }
  }
#ifdef DRIFTSCOPE_BENCH_CUDA
  const bool device = ds::cuda::device_count() > 0;
  fmt::print("CUDA device: {}\n", ds::cuda::device_summary());
  const std::vector<OpCase>& cases = ds::test::op_cases_with_cuda();
#else
  const bool device = false;
  fmt::print("CPU-only build: CUDA ops not timed\n");
  const std::vector<OpCase>& cases = ds::test::op_cases();
#endif
  int failed = 0, run = 0;
  for (const OpCase& c : cases) {
    if (!wanted(c, filters)) continue;
    ++run;
    if (!bench_case(c, device, min_s)) ++failed;
  }
  fmt::print("{} cases, {} failed validation\n", run, failed);
  return failed > 0 ? 1 : 0;
}
