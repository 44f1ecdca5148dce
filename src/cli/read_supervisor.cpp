// The parent's side of watched trace reads (read_supervisor.h).
#include "src/cli/read_supervisor.h"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "trace/read_watch.h"

namespace ds {
namespace {

constexpr double kDefaultStallSeconds = 10;

double stall_seconds() {
  const char* env = std::getenv("DRIFTSCOPE_READ_STALL_SECONDS");
  if (env == nullptr) return kDefaultStallSeconds;
  double v = 0;
  const auto [end, ec] = std::from_chars(env, env + std::strlen(env), v);
  return ec == std::errc() && *end == '\0' && v > 0 ? v : kDefaultStallSeconds;
}

volatile sig_atomic_t g_child = 0;

// A signal sent to this process by another (kill, timeout): passed on to the child. One from the
// terminal (Ctrl-C) reaches the child itself, as it is in the same process group.
void forward(int sig, siginfo_t* info, void*) {
  if (g_child > 0 && info != nullptr && info->si_code <= 0) kill(g_child, sig);
}

bool is_crash(int sig) {
  return sig == SIGSEGV || sig == SIGBUS || sig == SIGABRT || sig == SIGILL || sig == SIGFPE ||
         sig == SIGTRAP || sig == SIGSYS;
}

// Printed with write(2): stdio's buffers belong to the child's output.
int say(const std::string& message, const std::string& hint, int code) {
  const std::string text = fmt::format("driftscope: {}\nhint: {}\n", message, hint);
  [[maybe_unused]] const ssize_t n = write(STDERR_FILENO, text.data(), text.size());
  return code;
}

const char* damaged_hint() {
  return "HDF5, which reads traces, trusts what a file says; this one was altered after it was "
         "written (a bad disk, a partial copy) or made to do this. Ask its author for a fresh "
         "copy (docs/trace-format.md, \"Untrusted traces\")";
}

}  // namespace

int run_with_watched_reads(const std::function<int()>& command) {
  void* shared = mmap(nullptr, sizeof(trace::ReadWatch), PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) return command();  // no watch to be had: read unwatched
  auto* watch = new (shared) trace::ReadWatch();
  std::fflush(nullptr);
  const pid_t child = fork();
  if (child < 0) {
    munmap(shared, sizeof(trace::ReadWatch));
    return command();
  }
  if (child == 0) {
    trace::set_read_watch(watch);
    const int code = command();
    std::fflush(nullptr);
    // HDF5 frees what it read when the process exits (its atexit handler): watched too, under
    // the last trace read, as it can crash there on a damaged file
    // (placed in static storage and never destroyed: it must outlast the exit handlers)
    alignas(trace::WatchedRead) static unsigned char at_exit[sizeof(trace::WatchedRead)];
    if (watch->path[0] != '\0') new (at_exit) trace::WatchedRead(watch->path, "clean-up at exit");
    std::exit(code);
  }
  g_child = child;
  struct sigaction sa {
  }, old_int{}, old_term{}, old_hup{}, old_quit{};
  sa.sa_sigaction = forward;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  sigaction(SIGHUP, &sa, &old_hup);
  sigaction(SIGQUIT, &sa, &old_quit);

  const auto limit_ns = static_cast<int64_t>(stall_seconds() * 1e9);
  // Woken when the child ends (a pidfd) or when the read in progress would pass the limit.
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, child, 0));
  int status = 0;
  bool stalled = false;
  std::string what;
  while (true) {
    const pid_t got = waitpid(child, &status, WNOHANG);
    if (got == child) break;
    if (got < 0 && errno != EINTR) return say("lost the reading process", "run it again", 3);
    int64_t wait_ns = 100'000'000;  // between looks at a child not inside a read
    if (watch->depth.load(std::memory_order_acquire) > 0) {
      const int64_t in_read =
          trace::monotonic_ns() - watch->since_ns.load(std::memory_order_relaxed);
      if (in_read > limit_ns) {
        what = watch->what;
        stalled = true;
        kill(child, SIGKILL);
        waitpid(child, &status, 0);
        break;
      }
      wait_ns = std::min(wait_ns, limit_ns - in_read + 1'000'000);
    }
    if (pidfd >= 0) {
      pollfd p{pidfd, POLLIN, 0};
      poll(&p, 1, static_cast<int>(wait_ns / 1'000'000));
    } else {
      usleep(5'000);  // a kernel without pidfd_open (before Linux 5.3)
    }
  }
  if (pidfd >= 0) close(pidfd);
  const bool in_read = watch->depth.load(std::memory_order_acquire) > 0;
  if (what.empty()) what = watch->what;
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  sigaction(SIGHUP, &old_hup, nullptr);
  sigaction(SIGQUIT, &old_quit, nullptr);
  munmap(shared, sizeof(trace::ReadWatch));

  if (stalled) {
    return say(fmt::format("{} is damaged: reading it stayed inside HDF5 for more than {:g} s",
                           what, stall_seconds()),
               damaged_hint(), 2);
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  const int sig = WTERMSIG(status);
  if (is_crash(sig) && in_read) {
    return say(fmt::format("{} is damaged: reading it crashed HDF5 ({})", what, strsignal(sig)),
               damaged_hint(), 2);
  }
  if (is_crash(sig)) {
    return say(fmt::format("internal error: the command crashed ({})", strsignal(sig)),
               "please report this with the command line", 3);
  }
  // Ctrl-C, a closed pipe, kill: leave the way the child left
  signal(sig, SIG_DFL);
  raise(sig);
  return 128 + sig;
}

}  // namespace ds
