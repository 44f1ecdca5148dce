// A persistent pool of std::threads for the CPU ops (cpu_exec.h): a job is fn over contiguous
// chunks of [0, n), taken by the caller and the workers. Workers spin briefly on a generation
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

// A job is cut into chunks (a few per thread); the caller and every awake worker take chunks
// from a shared ticket until none are left, so a worker that a loaded machine has descheduled
// delays nobody unless it already holds a chunk. Which thread computes a chunk never changes
// its values: chunks are independent output ranges.
class Pool {
 public:
  ~Pool() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_ = true;
      generation_.fetch_add(1);
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
  }

  void run(size_t chunks, size_t n, size_t threads, const std::function<void(size_t, size_t)>& fn) {
    std::lock_guard<std::mutex> job_lock(job_mu_);  // one job at a time
    grow(threads - 1);
    const uint32_t gen = static_cast<uint32_t>(generation_.load() + 1);
    fn_.store(&fn, std::memory_order_relaxed);
    n_.store(n, std::memory_order_relaxed);
    chunks_.store(chunks, std::memory_order_relaxed);
    done_.store(0, std::memory_order_relaxed);
    ticket_.store(static_cast<uint64_t>(gen) << 32, std::memory_order_release);
    {
      std::lock_guard<std::mutex> lk(mu_);
      generation_.store(gen, std::memory_order_release);
    }
    cv_.notify_all();
    work(gen);
    // the last chunks may be with workers: spin a little, then yield
    for (int spin = 0; done_.load(std::memory_order_acquire) != chunks; ++spin) {
      if (spin < 4000) {
        cpu_relax();
      } else {
        std::this_thread::yield();
      }
    }
  }

 private:
  // Takes chunks of job `gen` until none are left (or a newer job has replaced it).
  void work(uint32_t gen) {
    for (;;) {
      uint64_t t = ticket_.load(std::memory_order_acquire);
      if (static_cast<uint32_t>(t >> 32) != gen) return;
      const size_t c = static_cast<uint32_t>(t);
      const size_t chunks = chunks_.load(std::memory_order_relaxed);
      if (c >= chunks) return;
      if (!ticket_.compare_exchange_weak(t, t + 1, std::memory_order_acq_rel)) continue;
      // the job cannot change before this chunk is done, so its fields are stable now
      const size_t n = n_.load(std::memory_order_relaxed);
      const size_t b = n * c / chunks, e = n * (c + 1) / chunks;
      t_in_job = true;
      (*fn_.load(std::memory_order_relaxed))(b, e);
      t_in_job = false;
      done_.fetch_add(1, std::memory_order_acq_rel);
    }
  }

  void grow(size_t want) {
    std::lock_guard<std::mutex> lk(mu_);
    while (workers_.size() < want) {
      workers_.emplace_back([this, seen = generation_.load()] { loop(seen); });
    }
  }

  void loop(uint64_t seen) {
    for (;;) {
      for (int spin = 0; spin < 2000 && generation_.load(std::memory_order_acquire) == seen;
           ++spin) {
        cpu_relax();
      }
      if (generation_.load(std::memory_order_acquire) == seen) {
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait(lk, [&] { return generation_.load() != seen; });
      }
      seen = generation_.load(std::memory_order_acquire);
      {
        std::lock_guard<std::mutex> lk(mu_);
        if (stop_) return;
      }
      work(static_cast<uint32_t>(seen));
    }
  }

  std::mutex job_mu_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::thread> workers_;
  std::atomic<uint64_t> generation_{0};  // the current job's number (workers sleep on it)
  std::atomic<uint64_t> ticket_{0};      // job number << 32 | next chunk to take
  std::atomic<size_t> done_{0};          // chunks finished
  std::atomic<const std::function<void(size_t, size_t)>*> fn_{nullptr};
  std::atomic<size_t> n_{0}, chunks_{1};
  bool stop_ = false;
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
  const size_t threads = static_cast<size_t>(cpu_threads());
  // a few chunks per thread (for balance on a busy machine), none smaller than the grain
  size_t chunks = std::min(n, 4 * threads);
  if (grain > 0) chunks = std::min(chunks, (n + grain - 1) / grain);
  if (threads <= 1 || chunks <= 1 || t_in_job || cpu_kernels() == CpuKernels::reference) {
    fn(0, n);
    return;
  }
  pool().run(chunks, n, threads, fn);
}

}  // namespace ds::ops
