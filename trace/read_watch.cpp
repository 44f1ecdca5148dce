// The reader's marks in the shared watch record (trace/read_watch.h).
#include "trace/read_watch.h"

#include <fmt/format.h>
#include <time.h>

#include <algorithm>
#include <cstring>

namespace ds::trace {
namespace {
ReadWatch* g_watch = nullptr;
}

void set_read_watch(ReadWatch* watch) {
  g_watch = watch;
}

int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

WatchedRead::WatchedRead(const std::string& path, const char* what, int64_t seq, const char* kind)
    : watch_(g_watch) {
  if (watch_ == nullptr) return;
  if (watch_->depth.load(std::memory_order_relaxed) == 0) {
    const std::string text = seq < 0 ? fmt::format("{} '{}' ({})", kind, path, what)
                                     : fmt::format("{} '{}' ({} {})", kind, path, what, seq);
    const auto put = [](char* dst, size_t cap, const std::string& src) {
      const size_t n = std::min(src.size(), cap - 1);
      std::memcpy(dst, src.data(), n);
      dst[n] = '\0';
    };
    put(watch_->what, sizeof watch_->what, text);
    put(watch_->path, sizeof watch_->path, path);
    watch_->since_ns.store(monotonic_ns(), std::memory_order_relaxed);
  }
  // release: a watcher that sees the depth sees the time and text written before it
  watch_->depth.fetch_add(1, std::memory_order_release);
}

WatchedRead::~WatchedRead() {
  if (watch_ != nullptr) watch_->depth.fetch_sub(1, std::memory_order_release);
}

}  // namespace ds::trace
