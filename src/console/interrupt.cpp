// SIGINT / SIGTERM / SIGHUP -> a flag polled between generation steps (or by a sweep's wait).
#include "src/console/interrupt.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstring>

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

void on_signal(int sig) {
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
  sa.sa_handler = on_signal;
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
