// A persistent pool of std::threads for the CPU ops (cpu_exec.h): a job is fn over contiguous
// ranges, one per thread, the caller taking the first. Workers spin briefly on a generation
// counter before sleeping on a condition variable, so a decode step's many small GEMMs do not pay
// a wake-up each.
#include <immintrin.h>

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "kernels/cpu/cpu_exec.h"

namespace ds::ops {
namespace {

std::atomic<int> g_threads{0};  // 0: not set, every core
std::atomic<CpuKernels> g_kernels{CpuKernels::simd};
thread_local bool t_in_job = false;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

class Pool {
 public:
  ~Pool() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_ = true;
      ++generation_;
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
  }

  // Runs range i of n_parts on worker i (i >= 1) and range 0 on the caller.
  void run(size_t n_parts, size_t n, const std::function<void(size_t, size_t)>& fn) {
    std::lock_guard<std::mutex> job_lock(job_mu_);  // one job at a time
    grow(n_parts - 1);
    fn_ = &fn;
    n_ = n;
    parts_ = n_parts;
    // every worker acknowledges every job, so none can lag behind into the next one
    pending_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
    {
      std::lock_guard<std::mutex> lk(mu_);
      generation_.fetch_add(1, std::memory_order_release);
    }
    cv_.notify_all();
    run_part(0);
    while (pending_.load(std::memory_order_acquire) != 0) cpu_relax();
    fn_ = nullptr;
  }

 private:
  void run_part(size_t i) {
    const size_t b = n_ * i / parts_, e = n_ * (i + 1) / parts_;
    if (b < e) {
      t_in_job = true;
      (*fn_)(b, e);
      t_in_job = false;
    }
  }

  void grow(size_t want) {
    std::lock_guard<std::mutex> lk(mu_);
    while (workers_.size() < want) {
      const size_t id = workers_.size() + 1;
      workers_.emplace_back([this, id, seen = generation_.load()]() mutable { loop(id, seen); });
    }
  }

  void loop(size_t id, uint64_t seen) {
    for (;;) {
      for (int spin = 0; spin < 20000 && generation_.load(std::memory_order_acquire) == seen;
           ++spin) {
        cpu_relax();
      }
      if (generation_.load(std::memory_order_acquire) == seen) {
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait(lk, [&] { return generation_.load() != seen; });
      }
      seen = generation_.load(std::memory_order_acquire);
      if (stop_) return;
      if (id < parts_) run_part(id);
      pending_.fetch_sub(1, std::memory_order_acq_rel);
    }
  }

  std::mutex job_mu_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::thread> workers_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  bool stop_ = false;
  const std::function<void(size_t, size_t)>* fn_ = nullptr;
  size_t n_ = 0, parts_ = 1;
};

Pool& pool() {
  static Pool p;
  return p;
}

}  // namespace

void set_cpu_threads(int n) {
  g_threads.store(n > 0 ? n : 0);
}

int cpu_threads() {
  const int n = g_threads.load();
  if (n > 0) return n;
  // the CPUs this process may run on (taskset, a Slurm or container cpuset), else every core
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  const unsigned hw = std::thread::hardware_concurrency();
  return hw > 0 ? static_cast<int>(hw) : 1;
}

void set_cpu_kernels(CpuKernels k) {
  g_kernels.store(k);
}
CpuKernels cpu_kernels() {
  return g_kernels.load();
}

void parallel_for(size_t n, size_t grain, const std::function<void(size_t, size_t)>& fn) {
  if (n == 0) return;
  size_t parts = static_cast<size_t>(cpu_threads());
  if (grain > 0) parts = std::min(parts, (n + grain - 1) / grain);
  parts = std::min(parts, n);
  if (parts <= 1 || t_in_job || cpu_kernels() == CpuKernels::reference) {
    fn(0, n);
    return;
  }
  pool().run(parts, n, fn);
}

}  // namespace ds::ops
