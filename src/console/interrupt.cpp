// SIGINT / SIGTERM / SIGHUP -> a flag polled between generation steps (or by a sweep's wait).
#include "src/console/interrupt.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "common/output_file.h"

namespace ds {
namespace {

std::atomic<int> g_signals{0};
// The first signal's line, made when the handlers are installed and written with one write():
// a second signal may run its handler on another thread at the same moment.
char g_first_line[256] = "\ndriftscope: interrupted (again to abort)\n";
size_t g_first_len = std::strlen(g_first_line);

// Async-signal-safe: only write(), signal() and raise().
void say(const char* msg, size_t n) {
  [[maybe_unused]] auto w = ::write(2, msg, n);
}

// Ends the process as `sig` would, after removing the hidden files it was writing.
void die_of(int sig) {
  CreatingFiles::remove_all();
  std::signal(sig, SIG_DFL);
  std::raise(sig);  // blocked while the handler runs: delivered, default action, on return
}

// The first signal: its number, its sender and when (the handlers run one at a time).
int g_first_sig = 0;
pid_t g_first_sender = 0;
timespec g_first_at{};

// Whether `sig` from `sender` is the first signal again, delivered twice: `pkill driftscope`
// reaches both a watched command (trace/read_supervisor.h) and its watcher, which passes it on, so
// the same request arrives from two senders within moments. Two Ctrl-C (the kernel both times)
// or two `kill`s from one shell are two requests.
bool same_request(int sig, pid_t sender) {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);  // async-signal-safe
  const double since = static_cast<double>(now.tv_sec - g_first_at.tv_sec) +
                       1e-9 * static_cast<double>(now.tv_nsec - g_first_at.tv_nsec);
  return sig == g_first_sig && sender != g_first_sender && since < 0.5;
}

void on_signal(int sig, siginfo_t* info, void*) {
  const pid_t sender = info != nullptr ? info->si_pid : 0;
  if (g_signals.load() == 0) {
    g_first_sig = sig;
    g_first_sender = sender;
    clock_gettime(CLOCK_MONOTONIC, &g_first_at);
  } else if (same_request(sig, sender)) {
    return;
  }
  if (g_signals.fetch_add(1) >= 1) {  // the second signal: die of it, as promised
    const char msg[] = "\ndriftscope: aborted\n";
    say(msg, sizeof(msg) - 1);
    CreatingFiles::remove_all();
    std::signal(sig, SIG_DFL);
    std::raise(sig);  // blocked while this handler runs: delivered, default action, on return
    return;
  }
  say(g_first_line, g_first_len);
}

}  // namespace

void install_interrupt_handlers(const char* doing) {
  const int n = std::snprintf(g_first_line, sizeof(g_first_line),
                              "\ndriftscope: interrupted, %s (again to abort)\n", doing);
  g_first_len = std::min(static_cast<size_t>(std::max(n, 0)), sizeof(g_first_line) - 1);
  struct sigaction sa {};
  sa.sa_sigaction = on_signal;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);  // one handler at a time: a SIGTERM cannot cut into a SIGINT's
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&sa.sa_mask, sig);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
}

void install_cleanup_handlers() {
  struct sigaction sa {};
  sa.sa_handler = die_of;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&sa.sa_mask, sig);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
}

bool interrupt_requested() {
  return g_signals.load() > 0;
}

}  // namespace ds
