// Commands that read traces from anyone (show, diff, stats) run in a child process watched by
// this one. HDF5 1.10.8 trusts what a file says; on a damaged or hostile trace one of its calls
// can loop for ever or crash. The child marks every trace-reader call in memory the two share
// (read_watch.h); the parent waits for it and
//   - passes its exit code on, or dies of the same signal (Ctrl-C, a closed pipe, kill);
//   - stops it when one reader call has been inside HDF5 longer than the stall limit, and
//   - reports a crash during a reader call (SIGSEGV, SIGABRT, ...),
// in both cases as "driftscope: trace 'PATH' (what was read) is damaged: ..." with a hint,
// exit 2. A crash outside a reader call is driftscope's own: "internal error", exit 3.
// The stall limit is 10 s, or DRIFTSCOPE_READ_STALL_SECONDS (docs/trace-format.md, "Untrusted
// traces").
#pragma once

#include <functional>

namespace ds::trace {

// Runs `command` in a child process as above; returns the exit code to leave with.
int run_with_watched_reads(const std::function<int()>& command);

}  // namespace ds::trace
