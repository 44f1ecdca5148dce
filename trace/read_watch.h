// Where a supervising process can see that the trace reader is inside HDF5, and for how long.
// HDF5 1.10.8 trusts what a file says: on some damaged or hostile traces a call never returns or
// crashes. `driftscope show`, `diff` and `stats` therefore read in a child process
// (trace/read_supervisor.h) whose parent watches this record, in memory the two share: a read
// that stays inside HDF5 too long is stopped, and a crash during one is reported as a damaged
// trace, naming the file and what was being read (docs/trace-format.md, "Untrusted traces").
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace ds::trace {

struct ReadWatch {
  std::atomic<int> depth{0};         // > 0 while a watched reader call runs
  std::atomic<int64_t> since_ns{0};  // CLOCK_MONOTONIC when the outermost call began
  char what[512] = {};               // "trace 'PATH' (sequence 3)", NUL-terminated
  char path[448] = {};               // the PATH of the last outermost call
};
static_assert(std::atomic<int>::is_always_lock_free && std::atomic<int64_t>::is_always_lock_free,
              "the record is shared between processes");

// The record the reader marks its calls in (nullptr, the default: calls are not marked).
void set_read_watch(ReadWatch* watch);
int64_t monotonic_ns();

// Marks a reader call on `path` for its lifetime: `what` says which part of the trace is read
// ("sequence", with `seq` >= 0: "sequence 3"); `kind` names the file ("trace", or "floor" for a
// noise floor file, trace/floor_file.h). Costs nothing when no record is set.
class WatchedRead {
 public:
  WatchedRead(const std::string& path, const char* what, int64_t seq = -1,
              const char* kind = "trace");
  ~WatchedRead();
  WatchedRead(const WatchedRead&) = delete;
  WatchedRead& operator=(const WatchedRead&) = delete;

 private:
  ReadWatch* watch_;
};

}  // namespace ds::trace
