// The process's work pool (common/work_pool.h): every chunk of every job runs exactly once, jobs
// of changing size follow each other without a stale worker running a chunk of the next one (a
// race that once made run() wait forever in a 110M-shape benchmark), and a chunk's exception
// reaches the caller after the other chunks ran.
#include <atomic>
#include <catch2/catch.hpp>
#include <stdexcept>
#include <vector>

#include "common/work_pool.h"

TEST_CASE("work pool: back-to-back jobs of changing size run each chunk exactly once",
          "[common][pool]") {
  ds::WorkPool& pool = ds::WorkPool::instance();
  // Small jobs one after another, alternating few and many chunks: the window in which a worker
  // leaving one job meets the next job's larger chunk count. 200000 jobs take about a second.
  std::vector<std::atomic<int>> hits(64);
  int wrong = 0;
  for (int job = 0; job < 200000 && wrong == 0; ++job) {
    const size_t chunks = job % 2 == 0 ? 2 : 8 + static_cast<size_t>(job % 5);
    const size_t n = chunks * 3;
    for (size_t i = 0; i < n; ++i) hits[i].store(0, std::memory_order_relaxed);
    pool.run(chunks, n, 2 + static_cast<size_t>(job % 3), [&](size_t b, size_t e) {
      for (size_t i = b; i < e; ++i) hits[i].fetch_add(1, std::memory_order_relaxed);
    });
    for (size_t i = 0; i < n; ++i) wrong += hits[i].load() != 1;
  }
  CHECK(wrong == 0);
}

TEST_CASE("work pool: a chunk's exception reaches the caller, the other chunks still run",
          "[common][pool]") {
  std::atomic<int> ran{0};
  auto job = [&] {
    ds::WorkPool::instance().run(6, 6, 3, [&](size_t b, size_t) {
      ran.fetch_add(1);
      if (b == 4) throw std::runtime_error("chunk 4 failed");
    });
  };
  CHECK_THROWS_WITH(job(), "chunk 4 failed");
  CHECK(ran.load() == 6);
  // and the pool is usable afterwards
  std::atomic<int> after{0};
  ds::WorkPool::instance().run(4, 4, 2, [&](size_t b, size_t e) { after.fetch_add(int(e - b)); });
  CHECK(after.load() == 4);
}

TEST_CASE("work pool: a job started inside a chunk runs inline on that thread", "[common][pool]") {
  // Catch's assertions are not thread-safe: what the chunks see is counted, then checked here.
  std::atomic<int> inner{0}, in_job{0}, whole{0};
  ds::WorkPool::instance().run(4, 4, 2, [&](size_t, size_t) {
    in_job.fetch_add(ds::WorkPool::in_job() ? 1 : 0);
    ds::WorkPool::instance().run(4, 8, 2, [&](size_t b, size_t e) {
      whole.fetch_add(b == 0 && e == 8 ? 1 : 0);  // inline: one call covering everything
      inner.fetch_add(1);
    });
  });
  CHECK(in_job.load() == 4);
  CHECK(inner.load() == 4);
  CHECK(whole.load() == 4);
  CHECK_FALSE(ds::WorkPool::in_job());
}
