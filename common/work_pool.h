// The process's persistent pool of worker threads: a job is fn over contiguous chunks of [0, n),
// taken by the caller and the workers from a shared ticket. Used by the CPU ops
// (kernels/cpu/cpu_exec.h) and by the trace reader's chunk inflation (trace/dataset_rows.cpp), so
// neither starts threads per call. An idle worker spins on a generation counter, then keeps
// yielding its CPU for a while, and only then sleeps on a condition variable: a decode step's many
// small GEMMs, and the gap between its tokens, never wait for a sleeping thread to wake (on a
// virtual machine that costs tens of microseconds and a halted CPU; bench/RESULTS.md).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "common/error.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace ds {

class WorkPool {
 public:
  using Fn = std::function<void(size_t, size_t)>;

  // The one pool of the process; its threads start on first use.
  static WorkPool& instance() {
    static WorkPool p;
    return p;
  }

  // Starts workers now until there are `workers` (a job with threads T needs T - 1), so that a
  // system that refuses them says so before any work; throws ds::Error as run() does.
  void start(size_t workers) {
    std::lock_guard<std::mutex> job_lock(job_mu_);
    grow(workers);
  }

  // The workers started so far (start(), or a job's run()): a caller without its own thread
  // setting runs on workers() + 1 threads, those the process already chose (--threads).
  size_t workers() {
    std::lock_guard<std::mutex> lk(mu_);
    return workers_.size();
  }

  // Whether the calling thread is running a chunk of a job (a nested call must run inline).
  static bool in_job() { return in_job_flag(); }

  // fn(b, e) over [0, n) cut into `chunks` contiguous ranges, on the caller and up to
  // threads - 1 workers; returns when all have finished, rethrowing the first exception a chunk
  // threw (the other chunks still run). Throws ds::Error when a worker cannot be started (the
  // system's limit on threads: EAGAIN), before the job begins. Which thread runs a chunk must not
  // change its result: chunks are independent. One job at a time; a call from inside a job runs
  // inline.
  void run(size_t chunks, size_t n, size_t threads, const Fn& fn) {
    if (chunks <= 1 || threads <= 1 || in_job()) {
      fn(0, n);
      return;
    }
    std::lock_guard<std::mutex> job_lock(job_mu_);
    grow(threads - 1);
    const uint32_t gen = static_cast<uint32_t>(generation_.load() + 1);
    // Close the ticket before the job's fields change: a worker still leaving the previous job
    // may have read its exhausted ticket and be about to compare it with chunks_; once chunks_
    // holds the new (larger) count, its compare-and-swap on the old ticket would succeed and it
    // would run a chunk of the new job that the reopened ticket hands out again (done_ then
    // overshoots and run() waits forever). A closed ticket has a newer job number, so that CAS
    // fails and the worker sees it is not its job.
    ticket_.store((static_cast<uint64_t>(gen) << 32) | kClosed, std::memory_order_seq_cst);
    fn_.store(&fn, std::memory_order_relaxed);
    n_.store(n, std::memory_order_relaxed);
    chunks_.store(chunks, std::memory_order_release);  // whoever sees it sees the closed ticket
    done_.store(0, std::memory_order_relaxed);
    failure_ = nullptr;
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
        relax();
      } else {
        std::this_thread::yield();
      }
    }
    if (failure_) std::rethrow_exception(failure_);
  }

  ~WorkPool() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_ = true;
      generation_.fetch_add(1);
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
  }

 private:
  WorkPool() = default;

  static bool& in_job_flag() {
    thread_local bool flag = false;
    return flag;
  }

  static void relax() {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#endif
  }

  // Takes chunks of job `gen` until none are left (or a newer job has replaced it).
  void work(uint32_t gen) {
    for (;;) {
      uint64_t t = ticket_.load(std::memory_order_acquire);
      if (static_cast<uint32_t>(t >> 32) != gen) return;
      const size_t c = static_cast<uint32_t>(t);
      const size_t chunks = chunks_.load(std::memory_order_acquire);
      if (c >= chunks) return;
      if (!ticket_.compare_exchange_weak(t, t + 1, std::memory_order_acq_rel)) continue;
      // the job cannot change before this chunk is done, so its fields are stable now
      const size_t n = n_.load(std::memory_order_relaxed);
      const size_t b = n * c / chunks, e = n * (c + 1) / chunks;
      in_job_flag() = true;
      try {
        (*fn_.load(std::memory_order_relaxed))(b, e);
      } catch (...) {
        std::lock_guard<std::mutex> lk(failure_mu_);
        if (!failure_) failure_ = std::current_exception();
      }
      in_job_flag() = false;
      done_.fetch_add(1, std::memory_order_acq_rel);
    }
  }

  void grow(size_t want) {
    std::lock_guard<std::mutex> lk(mu_);
    while (workers_.size() < want) {
      try {
        workers_.emplace_back([this, seen = generation_.load()] { loop(seen); });
      } catch (const std::system_error& e) {
        throw Error("cannot start thread " + std::to_string(workers_.size() + 2) + " of " +
                        std::to_string(want + 1) + ": " + e.code().message(),
                    "the system limits threads (ulimit -u, a container's pids.max); use fewer: "
                    "--threads N, or DRIFTSCOPE_READ_THREADS for reading traces");
      }
    }
  }

  // Waits awake for a job newer than `seen`: pauses for the first 2000 tries, then short bursts
  // with a yield of the CPU (to any thread that wants it) between them; false when none came
  // within kIdleBeforeSleep.
  bool spin_while(uint64_t seen) {
    const auto give_up = std::chrono::steady_clock::now() + kIdleBeforeSleep;
    for (int spin = 0; generation_.load(std::memory_order_acquire) == seen; ++spin) {
      relax();
      if (spin >= 2000 && spin % 64 == 0) {
        if (std::chrono::steady_clock::now() > give_up) return false;
        std::this_thread::yield();
      }
    }
    return true;
  }

  void loop(uint64_t seen) {
    for (;;) {
      if (!spin_while(seen)) {
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

  static constexpr uint64_t kClosed = 0xFFFFFFFFu;  // a chunk number no job reaches
  // How long an idle worker stays awake: longer than the serial work between a decode step's jobs
  // and between its tokens (argmax, the next embedding).
  static constexpr auto kIdleBeforeSleep = std::chrono::milliseconds(2);

  std::mutex job_mu_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::thread> workers_;
  std::atomic<uint64_t> generation_{0};  // the current job's number (workers sleep on it)
  std::atomic<uint64_t> ticket_{0};      // job number << 32 | next chunk to take
  std::atomic<size_t> done_{0};          // chunks finished
  std::atomic<const Fn*> fn_{nullptr};
  std::atomic<size_t> n_{0}, chunks_{1};
  std::mutex failure_mu_;
  std::exception_ptr failure_;
  bool stop_ = false;
};

}  // namespace ds
