// How many threads the CPU ops use and which implementation runs (cpu_exec.h); the threads are the
// process's work pool (common/work_pool.h). A job is cut into chunks (a few per thread) that the
// caller and every awake worker take from a shared ticket, so a worker that a loaded machine has
// descheduled delays nobody unless it already holds a chunk.
#include "kernels/cpu/cpu_exec.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "common/work_pool.h"

namespace ds::ops {
namespace {

std::atomic<int> g_threads{0};  // 0: not set, every core
std::atomic<CpuKernels> g_kernels{CpuKernels::simd};

}  // namespace

void set_cpu_threads(int n) {
  g_threads.store(n > 0 ? n : 0);
}

int cpu_threads() {
  const int n = g_threads.load();
  if (n > 0) return n;
  // the CPUs this process may run on (taskset, a Slurm or container cpuset), else every core
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) {
    return std::min(CPU_COUNT(&set), kMaxCpuThreads);
  }
  const unsigned hw = std::thread::hardware_concurrency();
  return hw > 0 ? std::min(static_cast<int>(hw), kMaxCpuThreads) : 1;
}

void start_cpu_threads() {
  WorkPool::instance().start(static_cast<size_t>(cpu_threads()) - 1);
}

void set_cpu_kernels(CpuKernels k) {
  g_kernels.store(k);
}
CpuKernels cpu_kernels() {
  return g_kernels.load();
}

void parallel_for(size_t n, size_t grain, const std::function<void(size_t, size_t)>& fn) {
  if (n == 0) return;
  const size_t threads = static_cast<size_t>(cpu_threads());
  // a few chunks per thread (for balance on a busy machine), none smaller than the grain
  size_t chunks = std::min(n, 4 * threads);
  if (grain > 0) chunks = std::min(chunks, (n + grain - 1) / grain);
  if (cpu_kernels() == CpuKernels::reference) {
    fn(0, n);
    return;
  }
  WorkPool::instance().run(chunks, n, threads, fn);
}

}  // namespace ds::ops
