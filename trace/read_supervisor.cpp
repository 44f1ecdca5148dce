// The parent's side of watched trace reads (read_supervisor.h).
#include "trace/read_supervisor.h"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
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
#include <optional>
#include <string>

#include "common/env.h"
#include "common/error.h"
#include "common/printable.h"
#include "trace/read_watch.h"
#include "trace/writer.h"

namespace ds::trace {
namespace {

double stall_seconds() {
  return env::read_stall_seconds();  // checked before the child starts
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
  const std::string text =
      fmt::format("driftscope: {}\nhint: {}\n", printable(message), printable(hint));
  [[maybe_unused]] const ssize_t n = write(STDERR_FILENO, text.data(), text.size());
  return code;
}

const char* damaged_hint() {
  return "HDF5, which reads traces, trusts what a file says; this one was altered after it was "
         "written (a bad disk, a partial copy) or made to do this. Ask its author for a fresh "
         "copy (docs/trace-format.md, \"Untrusted traces\")";
}

// The child: runs the command with its trace reads marked in `watch`, then exits with its code.
[[noreturn]] void run_watched_child(const std::function<int()>& command, ReadWatch* watch) {
  set_read_watch(watch);
  const int code = command();
  std::fflush(nullptr);
  if (writer_abandoned()) std::_Exit(code);  // its thread is stuck inside HDF5: exit() would wait
  // HDF5 frees what it read when the process exits (its atexit handler): watched too, under
  // the last trace read, as it can crash there on a damaged file
  // (placed in static storage and never destroyed: it must outlast the exit handlers)
  alignas(WatchedRead) static unsigned char at_exit[sizeof(WatchedRead)];
  if (watch->path[0] != '\0') new (at_exit) WatchedRead(watch->path, "clean-up at exit");
  std::exit(code);
}

// The actions of the signals passed on to the child, as they were before.
struct SavedSignalActions {
  struct sigaction int_action {};
  struct sigaction term_action {};
  struct sigaction hup_action {};
  struct sigaction quit_action {};
};

// From now on SIGINT, SIGTERM, SIGHUP and SIGQUIT sent by another process go to `child`.
SavedSignalActions forward_signals_to(pid_t child) {
  g_child = child;
  SavedSignalActions old;
  struct sigaction sa {};
  sa.sa_sigaction = forward;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old.int_action);
  sigaction(SIGTERM, &sa, &old.term_action);
  sigaction(SIGHUP, &sa, &old.hup_action);
  sigaction(SIGQUIT, &sa, &old.quit_action);
  return old;
}

void restore_signals(const SavedSignalActions& old) {
  sigaction(SIGINT, &old.int_action, nullptr);
  sigaction(SIGTERM, &old.term_action, nullptr);
  sigaction(SIGHUP, &old.hup_action, nullptr);
  sigaction(SIGQUIT, &old.quit_action, nullptr);
}

// How the watched child ended.
struct ChildEnd {
  int status = 0;        // waitpid's
  bool stalled = false;  // killed for staying inside one read past the stall limit
  std::string what;      // the read it was stopped in (when stalled)
};

// Waits for the child to end, killing it when one read stays inside HDF5 past the stall limit;
// nullopt when waitpid loses it.
std::optional<ChildEnd> wait_watching(pid_t child, const ReadWatch& watch) {
  const auto limit_ns = static_cast<int64_t>(stall_seconds() * 1e9);
  // Woken when the child ends (a pidfd) or when the read in progress would pass the limit.
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, child, 0));
  ChildEnd end;
  while (true) {
    const pid_t got = waitpid(child, &end.status, WNOHANG);
    if (got == child) break;
    if (got < 0 && errno != EINTR) return std::nullopt;
    int64_t wait_ns = 100'000'000;  // between looks at a child not inside a read
    if (watch.depth.load(std::memory_order_acquire) > 0) {
      const int64_t in_read = monotonic_ns() - watch.since_ns.load(std::memory_order_relaxed);
      if (in_read > limit_ns) {
        end.what = watch.what;
        end.stalled = true;
        kill(child, SIGKILL);
        waitpid(child, &end.status, 0);
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
  return end;
}

// The exit code for how the child ended (`in_read`: inside a trace read at its end), saying why
// when a trace is damaged or the command crashed; dies of the child's signal otherwise.
int exit_code_of(const ChildEnd& end, bool in_read) {
  if (end.stalled) {
    return say(fmt::format("{} is damaged: reading it stayed inside HDF5 for more than {:g} s",
                           end.what, stall_seconds()),
               damaged_hint(), 2);
  }
  if (WIFEXITED(end.status)) return WEXITSTATUS(end.status);
  const int sig = WTERMSIG(end.status);
  if (is_crash(sig) && in_read) {
    return say(fmt::format("{} is damaged: reading it crashed HDF5 ({})", end.what, strsignal(sig)),
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

}  // namespace

int run_with_watched_reads(const std::function<int()>& command) {
  try {
    stall_seconds();  // a bad DRIFTSCOPE_READ_STALL_SECONDS is refused, not read as the default
  } catch (const Error& e) {
    return say(e.what(), e.hint(), 2);
  }
  void* shared =
      mmap(nullptr, sizeof(ReadWatch), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) return command();  // no watch to be had: read unwatched
  auto* watch = new (shared) ReadWatch();
  std::fflush(nullptr);
  const pid_t child = fork();
  if (child < 0) {
    munmap(shared, sizeof(ReadWatch));
    return command();
  }
  if (child == 0) {
    // the command ends (as on SIGTERM: a sweep's runs finish their traces) when this watcher
    // dies, even of SIGKILL, instead of running on unwatched
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() == 1) _exit(130);  // the watcher died before prctl took effect
    run_watched_child(command, watch);
  }
  const SavedSignalActions old = forward_signals_to(child);
  std::optional<ChildEnd> end = wait_watching(child, *watch);
  if (!end) return say("lost the reading process", "run it again", 3);
  const bool in_read = watch->depth.load(std::memory_order_acquire) > 0;
  if (end->what.empty()) end->what = watch->what;
  restore_signals(old);
  munmap(shared, sizeof(ReadWatch));
  return exit_code_of(*end, in_read);
}

}  // namespace ds::trace
