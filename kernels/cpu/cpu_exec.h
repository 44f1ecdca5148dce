// How the CPU ops execute (not what they compute): the number of threads and the switch to the
// scalar single-threaded reference loops. Neither changes a bit of any result (docs/numerics.md,
// "Vectorised and threaded execution"); the reference switch exists so tests can prove that.
#pragma once

#include <cstddef>
#include <functional>

namespace ds::ops {

// The most threads the CPU ops use: --threads above it is refused, and "every core" stops there.
constexpr int kMaxCpuThreads = 1024;

// Threads the CPU ops use from now on (process-wide, like OMP_NUM_THREADS); n <= 0 means every
// core (std::thread::hardware_concurrency), at most kMaxCpuThreads. The pool's threads start on
// first use, or at once with start_cpu_threads.
void set_cpu_threads(int n);
int cpu_threads();

// Starts the pool's threads for cpu_threads() now; throws ds::Error when the system refuses one.
void start_cpu_threads();

// Which implementation of the ops runs. All three give the same bits; the first two exist so that
// tests (and anyone in doubt) can check that.
enum class CpuKernels {
  reference,  // the plain scalar loops of ops_cpu.cpp on one thread: the documented order as
              // written
  scalar,     // the same loops, threaded over output features, attention heads and rows
  simd,  // as scalar, with the fp32 GEMM vectorised (gemm_lanes.h) when the CPU has AVX2 (default)
};
void set_cpu_kernels(CpuKernels k);
CpuKernels cpu_kernels();

// Runs fn(begin, end) over [0, n) cut into contiguous chunks (up to 4 per thread, at least `grain`
// items each) that the calling thread and the pool's threads take in turn; returns when all have
// finished. fn must give the same result whichever thread runs a chunk. Never nested: a call from
// inside fn runs inline, as does everything with one thread or CpuKernels::reference.
void parallel_for(size_t n, size_t grain, const std::function<void(size_t, size_t)>& fn);

}  // namespace ds::ops
